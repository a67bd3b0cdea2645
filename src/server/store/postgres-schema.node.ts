/**
 * The PostgreSQL key table and its migrations.
 *
 * One plain table keyed by `(client_id, key)`: admission is one `INSERT … ON CONFLICT DO NOTHING`
 * on that primary key, and every later write (takeover, phases, finish) a single-row UPDATE whose
 * row lock does the arbitration, as in the article. A concurrent duplicate's INSERT waits for the
 * owner's transaction and then does nothing: it sees the row at whatever point the owner committed.
 *
 * Why not the article's daily partitions: PostgreSQL cannot enforce `(client_id, key)` across
 * partitions (a unique key must include the partition key), so admission had to look in every
 * partition under an advisory lock, and every fenced UPDATE, planned once for all partitions,
 * locked and opened each of them. Side by side on PostgreSQL 15 that cost about a fifth of the
 * server's CPU per first execution (`bench/postgres-cpu.ts`). Reaping is a batched DELETE of
 * finished, expired rows instead (as on SQLite), found through a BRIN index on `expires_at`: rows
 * arrive in roughly expiry order, and a BRIN index costs an INSERT almost nothing.
 *
 * @module
 */
import { endChannel } from './postgres-listen.node.js';
import type { Runner } from './postgres-transport.node.js';
import { DatabaseSetupError } from '../errors/database-setup-error.js';

/**
 * The schema version this code writes; each entry of {@link MIGRATIONS} moves one step up. Version
 * 1: the key table, and the functions the store calls; version 2: an unambiguous NOTIFY payload.
 *
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
 * - A finished key is kept its retention from its finish (`expires_at` moves by the time it was in
 *   flight): one that finished late (parked, resumed by the worker) is not reaped before a retry
 *   of its client could see the answer.
 * - `oncely_point`'s `p_durable = false` turns `synchronous_commit` off for its own transaction.
 *   The store always passes `true` now (every commit is durable; an outcome mark rides in the next
 *   write instead of a relaxed commit of its own): the parameter stays so that functions already
 *   deployed keep their signature. `oncely_finish_after` writes the outcome mark before the final
 *   response in the response's own UPDATE.
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
  PRIMARY KEY (client_id, key)
);
-- The recovery worker only looks at unfinished keys: a partial index keeps its sweep small
-- however many finished keys the retention window holds.
CREATE INDEX oncely_keys_unfinished ON ${s}.oncely_keys (next_attempt_at, created_at) WHERE state = 'started';
-- The reaper's scan for expired keys (see the module notes).
CREATE INDEX oncely_keys_expiry ON ${s}.oncely_keys USING brin (expires_at);

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

${finishFunctions(s, 'CREATE', "md5(p_client || E'\\n' || p_key)")}`,
  // Version 2: the NOTIFY payload length-prefixes the client id and the key (see endPayload), so
  // no other (client id, key) pair can spell this key's payload; version 1 joined them with '\n'.
  (s) => finishFunctions(s, 'CREATE OR REPLACE', endPayloadSql('p_client', 'p_key')),
];

/**
 * The payload of a key's NOTIFY as PostgreSQL computes it from the SQL expressions of the client
 * id and the key: md5 of both, each prefixed by its UTF-8 byte length and `:`, exactly as
 * `endPayload` computes it in Node.
 */
export const endPayloadSql = (client: string, key: string): string =>
  `md5(octet_length(${client}) || ':' || ${client} || octet_length(${key}) || ':' || ${key})`;

/** The fenced writes that finish a key, notifying its waiters with `payload` (see version 2). */
function finishFunctions(s: string, create: 'CREATE' | 'CREATE OR REPLACE', payload: string): string {
  return `
${create} FUNCTION ${s}.oncely_finish(p_client text, p_key text, p_token text, p_status int, p_headers text,
                                   p_body text) RETURNS void
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
  v_watched boolean;
BEGIN
  UPDATE ${s}.oncely_keys
     SET state = 'finished', response_status = p_status, response_headers = p_headers::json, response_body = p_body,
         lease_token = NULL, lease_until = NULL, expires_at = now() + (expires_at - created_at)
   WHERE client_id = p_client AND key = p_key AND state = 'started' AND lease_token = p_token
  RETURNING watched INTO v_watched;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'oncely_finish: the lease no longer holds this row' USING ERRCODE = 'OLOST';
  END IF;
  IF v_watched THEN
    PERFORM pg_notify('${endChannel(s)}', ${payload});
  END IF;
END
$fn$;

${create} FUNCTION ${s}.oncely_finish_after(p_client text, p_key text, p_token text, p_point text, p_data text,
                                         p_status int, p_headers text, p_body text) RETURNS void
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
  v_watched boolean;
BEGIN
  UPDATE ${s}.oncely_keys
     SET state = 'finished', recovery_point = p_point, data = data || p_data::jsonb, response_status = p_status,
         response_headers = p_headers::json, response_body = p_body, lease_token = NULL, lease_until = NULL,
         expires_at = now() + (expires_at - created_at)
   WHERE client_id = p_client AND key = p_key AND state = 'started' AND lease_token = p_token
  RETURNING watched INTO v_watched;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'oncely_finish_after: the lease no longer holds this row' USING ERRCODE = 'OLOST';
  END IF;
  IF v_watched THEN
    PERFORM pg_notify('${endChannel(s)}', ${payload});
  END IF;
END
$fn$;`;
}

/** Serialises DDL across every instance sharing the database (not only this schema). */
const DDL_LOCK = 1_804_202_612;

/**
 * Creates the schema, applies pending migrations and the app's DDL. Safe when several instances
 * start at once: everything runs in one transaction holding an advisory lock, so the second
 * instance waits, then finds the version already current.
 */
export async function migrate(runner: Runner, schema: string, appDdl: string | undefined): Promise<void> {
  await runner.transaction(async (query) => {
    await query(`SELECT pg_advisory_xact_lock(${DDL_LOCK})`, []);
    await query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
    await query(`CREATE TABLE IF NOT EXISTS ${schema}.oncely_schema_version (version int NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
    const { rows } = await query<{ version: number | null }>(`SELECT max(version) AS version FROM ${schema}.oncely_schema_version`);
    // Under REPEATABLE READ or SERIALIZABLE a duplicate that waited for its owner, a takeover that
    // lost its race or a phase's COMMIT fails with a serialization error (40001) where READ
    // COMMITTED answers "not yours" or commits: the store's own pool sets it for its sessions; a
    // pool passed in must too.
    const { rows: isolation } = await query<{ level: string }>(`SELECT current_setting('default_transaction_isolation') AS level`, []);
    const level = isolation[0]?.level ?? 'read committed';
    if (level !== 'read committed') {
      throw new DatabaseSetupError(
        'default_transaction_isolation',
        `postgresKeyStore: the store's statements need READ COMMITTED, and this pool's sessions default to ${level}: ` +
          `create the pool with options: '-c default_transaction_isolation=read\\\\ committed' (the store's own pool does), or, behind a pooler that drops ` +
          `startup options (PgBouncer's ignore_startup_parameters = options), set it on the database: ALTER DATABASE … SET default_transaction_isolation = 'read committed'`,
      );
    }
    // A development build of 0.1.0 wrote a partitioned table under the same version number: say so
    // instead of failing at the first admission with PostgreSQL's ON CONFLICT error.
    const { rows: layout } = await query<{ partitioned: boolean }>(
      `SELECT c.relkind = 'p' AS partitioned FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relname = 'oncely_keys'`,
      [schema],
    );
    if (layout[0]?.partitioned) {
      throw new DatabaseSetupError(
        'schema',
        `postgresKeyStore: schema ${schema} holds the partitioned key table of a development build of oncely 0.1.0; ` +
          `this build keeps keys in a plain table. Drop the schema's oncely_* objects (no release ever wrote them) or use another schema.`,
      );
    }
    for (let version = rows[0]?.version ?? 0; version < MIGRATIONS.length; version += 1) {
      await query(MIGRATIONS[version]!(schema));
      await query(`INSERT INTO ${schema}.oncely_schema_version (version) VALUES ($1)`, [version + 1]);
    }
    if (appDdl) {
      await query(`SET LOCAL search_path = ${schema}, public`, []);
      await query(appDdl);
    }
  });
}
