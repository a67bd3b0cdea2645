/**
 * The PostgreSQL key table, its migrations and its partition maintenance.
 *
 * Why the table is partitioned by `expires_at`, not `created_at`
 * -------------------------------------------------------------
 * The design article partitions by `created_at` and reaps by dropping old daily partitions. A
 * partition holds a range of one timestamp, so reaping by drop is exact only when that timestamp
 * *is* the reaping condition. Each row carries its own retention (`ttlMs` is per admission), so we
 * partition by `expires_at` (`created_at + ttl`): every row of a partition whose upper bound has
 * passed is expired, and the reaper drops it without scanning it. With one retention for every
 * key this is the article's layout shifted by the TTL.
 *
 * Why `(client_id, key)` stays unique although the primary key cannot say so
 * ---------------------------------------------------------------------------
 * PostgreSQL requires a partitioned table's unique constraints to include the partition key, so
 * the primary key is `(client_id, key, expires_at)` and, on its own, would let the same key live
 * in two partitions (two admissions a millisecond apart around a partition boundary). Admission
 * is therefore the function `oncely_admit`, which looks across every live partition, and for a
 * key it did not find serialises admissions *of that key* on a transaction-scoped advisory lock
 * on `hash(client_id, key)`, then looks again before inserting (a key found the first time is
 * answered without the lock: its duplicates never queue on each other):
 *
 * ```
 * A: SELECT: none ─ lock(h) ─ SELECT: none ─ INSERT ─ COMMIT(unlock)
 * B:    SELECT: none ─ lock(h) ····· waits ·······─ SELECT (fresh snapshot): A's row ─ not owner
 * C:                                                          SELECT: A's row ─ not owner
 * ```
 *
 * In READ COMMITTED each statement of a volatile PL/pgSQL function takes a new snapshot, so B's
 * look happens after A committed; the function refuses to run under a stronger isolation level,
 * where its snapshot would predate the lock. Other keys never wait (a hash collision only makes
 * two unrelated admissions queue for a moment). Every later write (takeover, phases, finish) is
 * a single-row UPDATE whose row lock does the arbitration, as in the article.
 *
 * @module
 */
import { endChannel } from './postgres-listen.node.js';
import type { Query, Runner } from './postgres-runner.node.js';

/**
 * The schema version this code writes; each entry of {@link MIGRATIONS} moves one step up. Version
 * 1: the key table, and the functions the store calls.
 *
 * - `oncely_admit`: the admission above (a row it finds, seen committed, is a correct answer
 *   whatever happens next; a row it inserts answers only its lease and `now()`).
 * - `oncely_lock` (sent with BEGIN and the work's first statement) locks the row for the
 *   transaction, raising OLOST when the lease no longer holds it;
 *   `oncely_point`, `oncely_finish` and `oncely_finish_after` (sent with COMMIT, or alone) are the
 *   fenced writes. They raise OLOST when the lease no longer holds the row, which aborts the
 *   transaction: the COMMIT pipelined behind them then rolls back instead of committing work whose
 *   lease was lost. As functions, their statements are planned once per session.
 * - A waiting duplicate on any instance hears its key's end (`postgres-listen.node.ts`). Only a
 *   `watched` row notifies: a NOTIFY serialises the committing transactions that send one on a
 *   lock of the database's whole queue, so a key nobody waits for sends none. A waiter sets the
 *   flag after it listens; what ends the owner's lease (`oncely_finish`, `oncely_finish_after`,
 *   the store's release, park and forget) sends the NOTIFY in its own statement, in its
 *   transaction: it goes at COMMIT, never after a rollback. The row lock orders the two: a flag
 *   set while the owner commits is seen by its UPDATE (re-read after the lock), and an end
 *   committed before the flag is seen by the waiter's next load of the row. (Row triggers did
 *   the same at a measured fifth of first-execution throughput.)
 * - `oncely_point`'s `p_durable = false` turns `synchronous_commit` off for its own transaction
 *   (a local phase, an outcome mark); `oncely_finish_after` writes the outcome mark before a final
 *   step that runs no statement in the response's own UPDATE.
 */
const MIGRATIONS: ReadonlyArray<(s: string) => string> = [
  (s) => `
CREATE TABLE ${s}.oncely_keys (
  client_id        text        NOT NULL,
  key              text        NOT NULL,
  request_hash     text        NOT NULL,
  endpoint         text        NOT NULL,
  request_body     text        NOT NULL,
  state            text        NOT NULL CHECK (state IN ('started', 'finished')),
  recovery_point   text,
  data             jsonb       NOT NULL DEFAULT '{}',
  response_status  int,
  response_headers json, -- json, not jsonb: a replay sends the headers in their stored order
  response_body    text,
  lease_token      text,
  lease_until      timestamptz,
  watched          boolean     NOT NULL DEFAULT false, -- a duplicate waits for this key's end (see below)
  next_attempt_at  timestamptz NOT NULL DEFAULT '-infinity',
  attempts         int         NOT NULL DEFAULT 0,
  created_at       timestamptz NOT NULL,
  expires_at       timestamptz NOT NULL,
  PRIMARY KEY (client_id, key, expires_at)
) PARTITION BY RANGE (expires_at);
-- The recovery worker only looks at unfinished keys: a partial index keeps its sweep small
-- however many finished keys the retention window holds.
CREATE INDEX oncely_keys_unfinished ON ${s}.oncely_keys (next_attempt_at, created_at) WHERE state = 'started';

CREATE FUNCTION ${s}.oncely_admit(p_client text, p_key text, p_hash text, p_endpoint text, p_body text,
                                  p_lease_ms float8, p_ttl_ms float8)
RETURNS TABLE (owned boolean, lease text, row_json json, created_ms float8, expires_ms float8, lease_ms float8)
LANGUAGE plpgsql VOLATILE AS $fn$
#variable_conflict use_column
BEGIN
  IF current_setting('transaction_isolation') <> 'read committed' THEN
    RAISE EXCEPTION 'oncely_admit needs READ COMMITTED (found %)', current_setting('transaction_isolation');
  END IF;
  RETURN QUERY SELECT false, NULL::text, row_to_json(k), NULL::float8, NULL::float8, NULL::float8 FROM ${s}.oncely_keys k
    WHERE k.client_id = p_client AND k.key = p_key;
  IF FOUND THEN RETURN; END IF;
  PERFORM pg_advisory_xact_lock(hashtextextended(p_client || chr(31) || p_key, 1804));
  RETURN QUERY SELECT false, NULL::text, row_to_json(k), NULL::float8, NULL::float8, NULL::float8 FROM ${s}.oncely_keys k
    WHERE k.client_id = p_client AND k.key = p_key;
  IF FOUND THEN RETURN; END IF;
  -- The new row is the caller's input with the defaults: only the lease and the clock go back
  -- (the row as JSON cost both sides more than the INSERT's own planning).
  RETURN QUERY WITH ins AS (
    INSERT INTO ${s}.oncely_keys AS k (client_id, key, request_hash, endpoint, request_body, state,
                                      lease_token, lease_until, created_at, expires_at)
    VALUES (p_client, p_key, p_hash, p_endpoint, p_body, 'started', gen_random_uuid()::text,
            now() + p_lease_ms * interval '1 millisecond', now(), now() + p_ttl_ms * interval '1 millisecond')
    RETURNING k.lease_token, k.lease_until, k.expires_at)
  SELECT true, ins.lease_token, NULL::json, floor(extract(epoch FROM now()) * 1000)::float8,
         floor(extract(epoch FROM ins.expires_at) * 1000)::float8,
         floor(extract(epoch FROM ins.lease_until) * 1000)::float8 - floor(extract(epoch FROM now()) * 1000)::float8 FROM ins;
END
$fn$;

CREATE FUNCTION ${s}.oncely_lock(p_client text, p_key text, p_token text) RETURNS void
LANGUAGE plpgsql VOLATILE AS $fn$
BEGIN
  PERFORM 1 FROM ${s}.oncely_keys
    WHERE client_id = p_client AND key = p_key AND state = 'started' AND lease_token = p_token FOR UPDATE;
  -- Raised, not returned: the work's first statement is already behind it, and must not run.
  IF NOT FOUND THEN
    RAISE EXCEPTION 'oncely_lock: the lease no longer holds this row' USING ERRCODE = 'OLOST';
  END IF;
END
$fn$;

CREATE FUNCTION ${s}.oncely_point(p_client text, p_key text, p_token text, p_point text, p_data text,
                                  p_lease_ms float8, p_merge boolean, p_durable boolean) RETURNS void
LANGUAGE plpgsql VOLATILE AS $fn$
BEGIN
  -- Read at COMMIT: a call on its own commits without waiting for the WAL flush.
  IF NOT p_durable THEN
    PERFORM set_config('synchronous_commit', 'off', true);
  END IF;
  UPDATE ${s}.oncely_keys
     SET recovery_point = p_point, data = CASE WHEN p_merge THEN data || p_data::jsonb ELSE p_data::jsonb END,
         lease_until = now() + p_lease_ms * interval '1 millisecond'
   WHERE client_id = p_client AND key = p_key AND state = 'started' AND lease_token = p_token;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'oncely_point: the lease no longer holds this row' USING ERRCODE = 'OLOST';
  END IF;
END
$fn$;

CREATE FUNCTION ${s}.oncely_finish(p_client text, p_key text, p_token text, p_status int, p_headers text,
                                   p_body text) RETURNS void
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
  v_watched boolean;
BEGIN
  UPDATE ${s}.oncely_keys
     SET state = 'finished', response_status = p_status, response_headers = p_headers::json, response_body = p_body,
         lease_token = NULL, lease_until = NULL
   WHERE client_id = p_client AND key = p_key AND state = 'started' AND lease_token = p_token
  RETURNING watched INTO v_watched;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'oncely_finish: the lease no longer holds this row' USING ERRCODE = 'OLOST';
  END IF;
  IF v_watched THEN
    PERFORM pg_notify('${endChannel(s)}', md5(p_client || E'\\n' || p_key));
  END IF;
END
$fn$;

CREATE FUNCTION ${s}.oncely_finish_after(p_client text, p_key text, p_token text, p_point text, p_data text,
                                         p_status int, p_headers text, p_body text) RETURNS void
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
  v_watched boolean;
BEGIN
  UPDATE ${s}.oncely_keys
     SET state = 'finished', recovery_point = p_point, data = data || p_data::jsonb, response_status = p_status,
         response_headers = p_headers::json, response_body = p_body, lease_token = NULL, lease_until = NULL
   WHERE client_id = p_client AND key = p_key AND state = 'started' AND lease_token = p_token
  RETURNING watched INTO v_watched;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'oncely_finish_after: the lease no longer holds this row' USING ERRCODE = 'OLOST';
  END IF;
  IF v_watched THEN
    PERFORM pg_notify('${endChannel(s)}', md5(p_client || E'\\n' || p_key));
  END IF;
END
$fn$;`,
];

/** Serialises DDL across every instance sharing the database (not only this schema). */
const DDL_LOCK = 1_804_202_612;

/** Partitions are named after their lower bound in epoch seconds, so names sort by time. */
const partitionName = (lowerMs: number): string => `oncely_keys_p${Math.floor(lowerMs / 1000)}`;

/**
 * Creates the schema, applies pending migrations and the app's DDL, and creates partitions ahead.
 * Safe when several instances start at once: everything runs in one transaction holding an
 * advisory lock, so the second instance waits, then finds the version already current.
 */
export async function migrate(runner: Runner, schema: string, appDdl: string | undefined, ahead: PartitionPlan): Promise<void> {
  await runner.transaction(async (query) => {
    await query(`SELECT pg_advisory_xact_lock(${DDL_LOCK})`, []);
    await query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
    await query(`CREATE TABLE IF NOT EXISTS ${schema}.oncely_schema_version (version int NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
    const { rows } = await query<{ version: number | null }>(`SELECT max(version) AS version FROM ${schema}.oncely_schema_version`);
    for (let version = rows[0]?.version ?? 0; version < MIGRATIONS.length; version += 1) {
      await query(MIGRATIONS[version]!(schema));
      await query(`INSERT INTO ${schema}.oncely_schema_version (version) VALUES ($1)`, [version + 1]);
    }
    if (appDdl) {
      await query(`SET LOCAL search_path = ${schema}, public`, []);
      await query(appDdl);
    }
    await createPartitions(query, schema, ahead);
  });
}

/** Which partitions must exist: `partitionMs` wide, covering now through `aheadMs` from now. */
export interface PartitionPlan {
  readonly partitionMs: number;
  readonly aheadMs: number;
  /** An extra instant that must be covered (an admission whose expiry fell past the plan). */
  readonly alsoAt?: number;
}

/** The key table's partitions with their bounds (epoch ms), oldest first. */
async function listPartitions(query: Query, schema: string): Promise<Array<{ name: string; lower: number; upper: number }>> {
  const { rows } = await query<{ name: string; lower_ms: number; upper_ms: number }>(
    `SELECT name, floor(extract(epoch FROM b[1]::timestamptz) * 1000)::float8 AS lower_ms,
            floor(extract(epoch FROM b[2]::timestamptz) * 1000)::float8 AS upper_ms
       FROM (SELECT c.relname AS name,
                    regexp_match(pg_get_expr(c.relpartbound, c.oid), 'FROM \\(''([^'']+)''\\) TO \\(''([^'']+)''\\)') AS b
               FROM pg_inherits i
               JOIN pg_class c ON c.oid = i.inhrelid
               JOIN pg_class p ON p.oid = i.inhparent
               JOIN pg_namespace n ON n.oid = p.relnamespace
              WHERE n.nspname = $1 AND p.relname = 'oncely_keys') parts
      ORDER BY 2`,
    [schema],
  );
  return rows.map((row) => ({ name: row.name, lower: row.lower_ms, upper: row.upper_ms }));
}

async function createPartitions(query: Query, schema: string, plan: PartitionPlan): Promise<void> {
  const { rows } = await query<{ now_ms: number }>(`SELECT floor(extract(epoch FROM now()) * 1000)::float8 AS now_ms`, []);
  const nowMs = rows[0]!.now_ms;
  const width = plan.partitionMs;
  const wanted = new Set<number>();
  for (let lower = Math.floor(nowMs / width) * width; lower <= nowMs + plan.aheadMs; lower += width) wanted.add(lower);
  if (plan.alsoAt !== undefined) {
    const lower = Math.floor(plan.alsoAt / width) * width;
    wanted.add(lower).add(lower + width);
  }
  // Only missing ones: creating a partition locks the parent, which would stall admissions.
  const existing = await listPartitions(query, schema);
  for (const lower of wanted) {
    if (existing.some((part) => part.lower < lower + width && lower < part.upper)) continue;
    await query(
      `CREATE TABLE ${schema}.${partitionName(lower)} PARTITION OF ${schema}.oncely_keys
       FOR VALUES FROM (to_timestamp(${lower / 1000})) TO (to_timestamp(${(lower + width) / 1000}))`,
    );
  }
}

/**
 * Creates missing partitions ahead of time (run at start and with every reap, so admissions never
 * pay for DDL), or the one an admission could not be routed to.
 */
export async function ensurePartitions(runner: Runner, schema: string, plan: PartitionPlan): Promise<void> {
  await runner.transaction(async (query) => {
    await query(`SELECT pg_advisory_xact_lock(${DDL_LOCK})`, []);
    await createPartitions(query, schema, plan);
  });
}

/**
 * Drops every partition whose whole range has expired and resolves to the number of keys dropped.
 *
 * Per partition: lock it (bounded by `lock_timeout`, because a waiting ACCESS EXCLUSIVE request
 * would queue all traffic behind it), move its still-unfinished rows forward (in-flight and parked
 * keys are never reaped; their retention restarts), detach it, then count and drop the detached
 * table, which no query can reach any more. The partitions their rows move to exist: the caller
 * runs {@link ensurePartitions} first.
 */
export async function dropExpiredPartitions(runner: Runner, schema: string, retentionMs: number): Promise<number> {
  const { rows: clock } = await runner.query<{ now_ms: number }>(`SELECT floor(extract(epoch FROM now()) * 1000)::float8 AS now_ms`, []);
  const nowMs = clock[0]!.now_ms;
  const due = (await listPartitions(runner.query, schema)).filter((part) => part.upper <= nowMs);
  let removed = 0;
  for (const part of due) {
    const detached = await runner
      .transaction(async (query) => {
        await query(`SET LOCAL lock_timeout = '500ms'`, []);
        await query(`LOCK TABLE ${schema}.${part.name} IN ACCESS EXCLUSIVE MODE`, []);
        await query(
          `UPDATE ${schema}.oncely_keys SET expires_at = now() + $1 * interval '1 millisecond'
            WHERE expires_at >= to_timestamp($2::float8 / 1000) AND expires_at < to_timestamp($3::float8 / 1000) AND state = 'started'`,
          [retentionMs, part.lower, part.upper],
        );
        await query(`ALTER TABLE ${schema}.oncely_keys DETACH PARTITION ${schema}.${part.name}`, []);
        return true;
      })
      // Busy (autovacuum or a long query held the lock past the timeout) or already taken by
      // another instance: skipped, the next pass gets it.
      .catch(() => false);
    if (detached) removed += await countAndDrop(runner, schema, part.name);
  }
  return removed;
}

/**
 * Drops partitions detached but never dropped (an instance died between the two steps) and
 * resolves to the keys they held. Runs before {@link ensurePartitions}, which could otherwise
 * trip over such a table's name.
 */
export async function dropDetachedPartitions(runner: Runner, schema: string): Promise<number> {
  const { rows: orphans } = await runner.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 AND c.relkind = 'r' AND NOT c.relispartition AND c.relname LIKE 'oncely\\_keys\\_p%'`,
    [schema],
  );
  let removed = 0;
  for (const { name } of orphans) removed += await countAndDrop(runner, schema, name);
  return removed;
}

/** Counts a detached partition's keys (no query can reach it any more, so no one waits) and drops it. */
async function countAndDrop(runner: Runner, schema: string, name: string): Promise<number> {
  try {
    const { rows } = await runner.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${schema}.${name}`, []);
    await runner.query(`DROP TABLE IF EXISTS ${schema}.${name}`, []);
    return rows[0]?.n ?? 0;
  } catch (error) {
    // 42P01: another instance's reaper dropped it first.
    if ((error as { code?: unknown }).code === '42P01') return 0;
    throw error;
  }
}
