/**
 * Every statement the PostgreSQL KeyStore runs on its key table, built once per schema and sent
 * as named prepared statements with bind parameters only (no value is ever written into SQL
 * text). The table and its functions (`oncely_lock`, `oncely_point`, `oncely_finish`,
 * `oncely_finish_after`) are created by `postgres-schema.node.ts`; the select list of a row is
 * `postgres-rows.node.ts`'s. The store's logic is in `postgres.node.ts`.
 *
 * @module
 */
import { ROW } from './postgres-rows.node.js';
import { endChannel } from './postgres-listen.node.js';
import { endPayloadSql } from './postgres-schema.node.js';

/** The statements of the store in `schema`. */
export type PostgresSql = ReturnType<typeof postgresSql>;

/**
 * The store's statements in `schema` (a validated identifier).
 *
 * @example
 * ```ts
 * const SQL = postgresSql('oncely');
 * await runner.prepared(SQL.load, [clientId, key]);
 * ```
 */
export function postgresSql(schema: string) {
  const t = `${schema}.oncely_keys`;
  /**
   * The admission lock of key `$2` of client `$1` (`pg_advisory_xact_lock`, held to the end of the
   * transaction that takes it), unless the key's row is there already: an admission that can see
   * the row needs no lock, and a duplicate never holds one while it reads a finished key. From the
   * schema, client id and key, length-prefixed; two keys that share a lock (a hash collision) only
   * wait for each other. True when taken.
   */
  const admissionLock = `CASE WHEN EXISTS (SELECT 1 FROM ${t} WHERE client_id = $1 AND key = $2) THEN false
      ELSE pg_advisory_xact_lock(hashtextextended('${schema}:' || octet_length($1::text) || ':' || $1::text || $2::text, 0))::text = '' END`;
  /**
   * The tail of a statement that ends a lease (`WITH ended AS (… RETURNING watched)`): how many
   * rows it ended, and a NOTIFY on channel `$4` for a watched one, sent at the transaction's
   * COMMIT (see the schema's notes on `watched`).
   */
  const notifyEnded = `SELECT count(*)::int AS n, count(CASE WHEN watched THEN pg_notify($4, ${endPayloadSql('$1::text', '$2::text')}) END) AS notified FROM ended`;
  return {
    channel: endChannel(schema),
    // Admission: the INSERT, or the row it found. A row committed after this statement's snapshot
    // (the INSERT waited for its owner's COMMIT) is in neither branch: the admission runs again.
    // Admission: the INSERT, or the row it found, under the key's admission lock (see `keyLock`).
    // A row committed after this statement's snapshot (the INSERT waited for its owner's COMMIT,
    // or the lock for a whole request's) is in neither branch: the admission runs again.
    admit: `WITH ins AS (
      INSERT INTO ${t} AS k (client_id, key, request_hash, endpoint, request_body, state, lease_token, lease_until, created_at, expires_at)
      SELECT $1::text, $2::text, $3::text, $4::text, $5::text, 'started', gen_random_uuid()::text, now() + $6 * interval '1 millisecond', now(), now() + $7 * interval '1 millisecond'
        FROM (SELECT ${admissionLock}) AS locked
      ON CONFLICT (client_id, key) DO NOTHING
      RETURNING k.lease_token, k.expires_at)
    SELECT true AS owned, ins.lease_token AS lease, NULL::json AS row_json, floor(extract(epoch FROM now()) * 1000)::float8 AS created_ms,
           floor(extract(epoch FROM ins.expires_at) * 1000)::float8 AS expires_ms, $6::float8 AS lease_ms,
           floor(extract(epoch FROM now()) * 1000)::float8 AS now_ms FROM ins
    UNION ALL
    SELECT false, NULL, row_to_json(k), NULL, NULL, NULL, floor(extract(epoch FROM now()) * 1000)::float8
      FROM ${t} k WHERE k.client_id = $1 AND k.key = $2 AND NOT EXISTS (SELECT 1 FROM ins)`,
    // A whole request's admission: the key's admission lock, held to the transaction's end, and
    // the transaction's clock (its `now()`, which the row's INSERT at COMMIT shares). Every
    // admission that finds no row takes the lock, so a whole request that still finds none
    // (`load`, the next statement, with a snapshot taken after the lock) is the only admission of
    // its key until it ends.
    keyLock: `SELECT ${admissionLock} AS locked, floor(extract(epoch FROM now()) * 1000)::float8 AS now_ms`,
    // A whole request's row, written finished with its response, sent with its COMMIT: no row
    // exists before (under the admission lock), so a row that does is a unique violation that
    // aborts the transaction. No request body: a replay needs the response only.
    wholeFinish: `INSERT INTO ${t} (client_id, key, request_hash, endpoint, request_body, state, response_status, response_headers, response_body, created_at, expires_at)
      VALUES ($1, $2, $3, $4, '', 'finished', $5, $6::json, $7, now(), now() + $8 * interval '1 millisecond')`,
    load: `SELECT ${ROW} FROM ${t} WHERE client_id = $1 AND key = $2`,
    // The row under the lease, locked for the transaction (OLOST when the lease no longer holds it).
    lock: `SELECT ${schema}.oncely_lock($1, $2, $3)`,
    // A fenced point (merging the data), durable; `oncely_point`'s last flag once relaxed commits
    // from a hint the contract no longer carries, and stays for the functions already deployed.
    point: `SELECT ${schema}.oncely_point($1, $2, $3, $4, $5, $6, true, true)`,
    // The first phase of a row this transaction inserted: its data replaced, not merged.
    firstPoint: `SELECT ${schema}.oncely_point($1, $2, $3, $4, $5, $6, false, true)`,
    finish: `SELECT ${schema}.oncely_finish($1, $2, $3, $4, $5, $6)`,
    // The outcome mark before the response, in the response's own UPDATE.
    finishAfter: `SELECT ${schema}.oncely_finish_after($1, $2, $3, $4, $5, $6, $7, $8)`,
    // Whether a write whose answer was lost landed: the row is at its point under the lease.
    landed: `SELECT 1 AS one FROM ${t} WHERE client_id = $1 AND key = $2 AND lease_token = $3 AND recovery_point = $4`,
    // Whether a whole request's lost COMMIT landed: the row is finished, for this request, with this
    // response (the finish clears the lease token; the headers are compared as the text stored).
    landedFinish: `SELECT 1 AS one FROM ${t} WHERE client_id = $1 AND key = $2 AND state = 'finished' AND request_hash = $3
                     AND response_status = $4 AND response_headers::text = $5 AND response_body = $6`,
    // A commit that waits for the synchronous standby, if one is named (`postgres-confirm.node.ts`):
    // a transactional WAL message, the smallest write a transaction can make; nothing otherwise.
    confirm: `SELECT CASE WHEN current_setting('synchronous_standby_names') <> '' THEN pg_logical_emit_message(true, 'oncely', '')::text END AS lsn`,
    takeOver: `UPDATE ${t} SET lease_token = gen_random_uuid()::text, lease_until = now() + $3 * interval '1 millisecond'
          WHERE client_id = $1 AND key = $2 AND state = 'started' AND (lease_token IS NULL OR lease_until <= now())
          RETURNING lease_token`,
    // A row with a recovery point records work that happened: it is kept whatever `forget` says.
    forget: `WITH ended AS (DELETE FROM ${t} WHERE client_id = $1 AND key = $2 AND lease_token = $3 AND recovery_point IS NULL
                          RETURNING watched)
           ${notifyEnded}`,
    release: `WITH ended AS (UPDATE ${t} SET lease_token = NULL, lease_until = NULL
                         WHERE client_id = $1 AND key = $2 AND state = 'started' AND lease_token = $3 RETURNING watched)
         ${notifyEnded}`,
    park: `WITH ended AS (UPDATE ${t} SET lease_token = NULL, lease_until = NULL, attempts = attempts + 1,
                               next_attempt_at = now() + $5 * interval '1 millisecond'
                         WHERE client_id = $1 AND key = $2 AND state = 'started' AND lease_token = $3 RETURNING watched)
         ${notifyEnded}`,
    // Served by the partial index on unfinished keys.
    sweep: `SELECT ${ROW} FROM ${t}
          WHERE state = 'started' AND next_attempt_at <= now() AND (lease_token IS NULL OR lease_until <= now())
          ORDER BY next_attempt_at, created_at LIMIT $1`,
    // Finished keys only: an in-flight or parked key is kept whatever its age, as on SQLite.
    reap: `WITH gone AS (DELETE FROM ${t} WHERE ctid = ANY (ARRAY(
           SELECT ctid FROM ${t} WHERE expires_at <= now() AND state = 'finished' LIMIT $1)) RETURNING 1)
         SELECT count(*)::int AS n FROM gone`,
    // Only a watched row's end notifies (see the schema's notes); once set, never again.
    watch: `UPDATE ${t} SET watched = true WHERE client_id = $1 AND key = $2 AND state = 'started' AND NOT watched`,
  } as const;
}
