/**
 * The PostgreSQL KeyStore: the engine for many server instances on one database. The database
 * arbitrates every race (admission, takeover, fencing) and is the only clock: lease expiry,
 * `leaseRemainingMs`, `createdAt` and `expiresAt` all come from `now()`, so instances with skewed
 * clocks still agree.
 *
 * The table, and why it is not partitioned, are explained in `postgres-schema.node.ts`.
 *
 * A duplicate waiting on one instance hears the end of its original on another by `LISTEN/NOTIFY`
 * ({@link KeyStore.watch}, in `postgres-listen.node.ts`): one extra connection per store, none per
 * waiter.
 *
 * Fail closed: when the database cannot be reached, every call rejects within `connectTimeoutMs`
 * (the handler answers `503` + `Retry-After`), and the pool reconnects on its own when it returns.
 *
 * @module
 */
import type pg from 'pg';
import { folded, phasePatch } from './fold.js';
import { createFencing } from './postgres-fenced.node.js';
import { endChannel, listenConfig, listenForEnds } from './postgres-listen.node.js';
import { createPgliteRunner, type PgliteLike } from './postgres-pglite.node.js';
import { createPgRunner, type Runner } from './postgres-runner.node.js';
import { schemaFromPool, schemaFromUrl } from './postgres-url.node.js';
import { endPayloadSql, migrate } from './postgres-schema.node.js';
import { ROW, toAdmitResult, toRow, type Admitted, type RawRow } from './postgres-rows.node.js';
import { withFoldedCommits, type Commits, type FirstPhase, type FoldedAdmitResult, type FoldedPhase, type PriorCommit } from '../commits.js';
import type { AdmitInput, AppSchema, Fenced, FinalResponse, KeyStore, Lease, StoredResponse, Tx } from './types.js';

export type { PgliteLike, PgliteQueryable, PgliteResults } from './postgres-pglite.node.js';

/**
 * Options of {@link postgresKeyStore}: exactly one of `connectionString`, `pool` or `pglite`.
 *
 * @example
 * ```ts
 * const options: PostgresKeyStoreOptions = { connectionString: 'postgres://db.internal/payments', schema: 'oncely', ttlMs: 7 * 86_400_000 };
 * ```
 */
export interface PostgresKeyStoreOptions {
  /**
   * A libpq URL; the store creates (and on `close()` ends) its own `pg` pool.
   * @example 'postgres://oncely@db.internal:5432/payments'
   */
  readonly connectionString?: string;
  /**
   * A `pg` pool owned by the caller (not ended by `close()`). One created with `pipeline: true`
   * gets the same round trips as the store's own pool; otherwise each statement takes a round
   * trip of its own (the results are the same). Its sessions must default to READ COMMITTED
   * (`migrate()` refuses others; `options: '-c default_transaction_isolation=read\\ committed'`).
   */
  readonly pool?: pg.Pool;
  /** An in-process PGlite instance (tests, embedded use), owned by the caller. */
  readonly pglite?: PgliteLike;
  /**
   * The PostgreSQL schema holding the key table and the app's tables; created if missing.
   * Lower-case letters, digits and `_`.
   * @default the first `search_path` entry of the URL's `?options=` (or of the pool's: its URL's, else its
   * `options` setting), else 'public'
   */
  readonly schema?: string;
  /**
   * How long a call waits for a connection before rejecting (fail closed). `pg` applies it to
   * opening a connection and to waiting for a free one in the pool, so under overload a call
   * fails (the handler answers `503`) instead of queueing without bound.
   * @default 5000
   */
  readonly connectTimeoutMs?: number;
  /**
   * `statement_timeout` of the store's own pool: a hung statement rejects instead of holding a
   * request forever.
   * @default 15000
   */
  readonly statementTimeoutMs?: number;
  /**
   * Send the store's own statements, and the application's statements with values inside the
   * store's transactions (up to 256 distinct texts), as named prepared statements (parsed and
   * planned once per connection). Turn off behind a pooler in transaction mode that cannot keep
   * them (PgBouncer before 1.21), or for an app whose `SELECT *` must survive an `ALTER TABLE`
   * while it runs (PostgreSQL refuses a prepared statement whose result columns changed).
   * @default on once a connection is found to reach PostgreSQL directly; off behind a pooler
   * (see `postgres-session.node.ts`)
   */
  readonly preparedStatements?: boolean;
  /**
   * A URL whose connection is really a PostgreSQL session, for the `LISTEN` that wakes a duplicate
   * waiting on another instance: the server's own address when the store's connections go through
   * a pooler in transaction mode (which loses `LISTEN`). Without it the store listens through its
   * own connection when that reaches PostgreSQL directly, and otherwise waits poll (≤ 500 ms apart).
   * @example 'postgres://oncely@db-primary.internal:5432/payments'
   */
  readonly listenUrl?: string;
  /**
   * Connections in the store's own pool.
   * @default 10
   */
  readonly maxConnections?: number;
  /**
   * Largest stored response body, in UTF-8 bytes: the key table is not a blob store. A larger
   * final response makes `finish` throw (and commit nothing).
   * @default 65536
   */
  readonly maxResponseBytes?: number;
}

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/** What a statement that ends a lease (`WITH ended AS (… RETURNING watched)`) answers. */
type Ended = { readonly n: number };

/**
 * The tail of such a statement: how many rows it ended, and a NOTIFY on channel `$4` for a watched
 * one, sent at the transaction's COMMIT (see the schema's notes on `watched`).
 */
const NOTIFY_ENDED = `SELECT count(*)::int AS n, count(CASE WHEN watched THEN pg_notify($4, ${endPayloadSql('$1::text', '$2::text')}) END) AS notified FROM ended`;

/**
 * Opens a PostgreSQL KeyStore over a connection string, a `pg` pool or a PGlite instance. Call
 * `migrate()` once before use; any number of instances may do so at the same time.
 *
 * @example
 * ```ts
 * import { postgresKeyStore } from 'oncely/server';
 * const store = postgresKeyStore({ connectionString: process.env.DATABASE_URL, schema: 'oncely' });
 * await store.migrate();
 * ```
 */
export function postgresKeyStore(options: PostgresKeyStoreOptions): KeyStore {
  const schema = options.schema ?? schemaFromUrl(options.connectionString) ?? schemaFromPool(options.pool) ?? 'public';
  if (!SCHEMA_NAME.test(schema)) throw new RangeError(`postgresKeyStore: invalid schema name ${JSON.stringify(schema)}`);
  const sources = [options.connectionString, options.pool, options.pglite].filter((source) => source !== undefined);
  if (sources.length !== 1) throw new TypeError('postgresKeyStore: pass exactly one of connectionString, pool or pglite');
  const maxResponseBytes = options.maxResponseBytes ?? 65_536;
  const runner: Runner = options.pglite
    ? createPgliteRunner(options.pglite, schema)
    : createPgRunner({
        connectionString: options.connectionString,
        pool: options.pool,
        schema,
        connectTimeoutMs: options.connectTimeoutMs ?? 5000,
        statementTimeoutMs: options.statementTimeoutMs ?? 15_000,
        max: options.maxConnections ?? 10,
        prepare: options.preparedStatements,
      });
  // Waits on other instances hear a key's end by LISTEN on a connection of its own (PGlite: polled).
  const ends = options.pglite
    ? undefined
    : listenForEnds(
        listenConfig(options),
        endChannel(schema),
        // Only a watched row's end notifies (see the schema's notes); once set, never again.
        async (clientId, key) => {
          await runner.prepared(`UPDATE ${schema}.oncely_keys SET watched = true WHERE client_id = $1 AND key = $2 AND state = 'started' AND NOT watched`, [clientId, key]);
        },
        { session: options.listenUrl !== undefined },
      );
  const t = `${schema}.oncely_keys`;
  const channel = endChannel(schema);
  // Built once; sent as named prepared statements with bind parameters.
  // Admission: the INSERT, or the row it found. A row committed after this statement's snapshot
  // (the INSERT waited for its owner's COMMIT) is in neither branch: the admission runs again.
  const ADMIT = `WITH ins AS (
      INSERT INTO ${t} AS k (client_id, key, request_hash, endpoint, request_body, state, lease_token, lease_until, created_at, expires_at)
      VALUES ($1, $2, $3, $4, $5, 'started', gen_random_uuid()::text, now() + $6 * interval '1 millisecond', now(), now() + $7 * interval '1 millisecond')
      ON CONFLICT (client_id, key) DO NOTHING
      RETURNING k.lease_token, k.expires_at)
    SELECT true AS owned, ins.lease_token AS lease, NULL::json AS row_json, floor(extract(epoch FROM now()) * 1000)::float8 AS created_ms,
           floor(extract(epoch FROM ins.expires_at) * 1000)::float8 AS expires_ms, $6::float8 AS lease_ms,
           floor(extract(epoch FROM now()) * 1000)::float8 AS now_ms FROM ins
    UNION ALL
    SELECT false, NULL, row_to_json(k), NULL, NULL, NULL, floor(extract(epoch FROM now()) * 1000)::float8
      FROM ${t} k WHERE k.client_id = $1 AND k.key = $2 AND NOT EXISTS (SELECT 1 FROM ins)`;
  const LOAD = `SELECT ${ROW} FROM ${t} WHERE client_id = $1 AND key = $2`;
  const FIRST_POINT = `SELECT ${schema}.oncely_point($1, $2, $3, $4, $5, $6, false, $7)`;
  const FINISH = `SELECT ${schema}.oncely_finish($1, $2, $3, $4, $5, $6)`;
  const FINISH_AFTER = `SELECT ${schema}.oncely_finish_after($1, $2, $3, $4, $5, $6, $7, $8)`;

  const { fenced, pointStatement, landed, fenceArgs, txOver } = createFencing(runner, schema);

  const commits: Commits = {
    async admit<T>(input: AdmitInput, first?: FirstPhase<T>): Promise<FoldedAdmitResult<T>> {
      const args = [input.clientId, input.key, input.requestHash, input.endpoint, input.requestBody, input.leaseMs, input.ttlMs];
      // No row in the answer: the INSERT met a row committed after the statement's snapshot (it
      // waited for that owner's COMMIT). The next attempt's snapshot sees it.
      for (let attempt = 1; attempt <= 3; attempt += 1) {
        if (!first) {
          const { rows } = await runner.prepared<Admitted>(ADMIT, args);
          if (rows[0]) return toAdmitResult(input, rows[0]);
          continue;
        }
        // The INSERT, the first phase's work and its recovery point in one transaction. The new
        // row is this transaction's until COMMIT: a duplicate's INSERT waits, then finds the row at
        // its recovery point.
        const { result, tx } = await runner.open<Admitted>({ sql: ADMIT, params: args });
        try {
          const found = result.rows[0];
          if (!found) {
            await tx.rollback();
            continue;
          }
          const admitted = toAdmitResult(input, found);
          if (!admitted.owned) {
            await tx.rollback();
            return admitted;
          }
          const value = await first.work(txOver(tx.query));
          const { commit } = first;
          const patch = phasePatch(commit, value);
          // EXTn_SENT after the first phase is written by the phase's own UPDATE (durable, as
          // EXTn_SENT must be): the row, inserted by this transaction, cannot change hands before COMMIT.
          const point = folded(undefined, commit, patch, commit.next);
          await tx
            .commit({ sql: FIRST_POINT, params: [...fenceArgs(admitted.lease), point.recoveryPoint, JSON.stringify(point.data), point.leaseMs, point.durable !== false] })
            // The answer was lost (connection reset): the row says whether the COMMIT ran, as in fenced().
            .catch(async (error: unknown) => {
              if (!(await landed(admitted.lease, point.recoveryPoint))) throw error;
            });
          const row = { ...admitted.row, recoveryPoint: commit.recoveryPoint, data: patch };
          return { ...admitted, row, first: commit.next ? { value, next: true } : { value } };
        } catch (error) {
          await tx.rollback();
          throw error;
        }
      }
      throw new Error(`postgresKeyStore: admission of key ${JSON.stringify(input.key.slice(0, 64))} found its row gone three times (deleted while admitted)`);
    },

    commitPhase: <T>(lease: Lease, phase: FoldedPhase<T>, work?: (tx: Tx) => Promise<T>) =>
      fenced(
        lease,
        work,
        // EXTn_SENT after the phase, and the mark before a phase with no statement, are written by
        // the phase's own UPDATE: one commit, durable when any of them is.
        (result, mark) => {
          const point = folded(mark, phase, phasePatch(phase, result), phase.next);
          return pointStatement(lease, point, point.data);
        },
        phase.prior,
        { point: phase.next?.recoveryPoint ?? phase.recoveryPoint, next: phase.next !== undefined },
      ),

    finish: <T>(lease: Lease, response: FinalResponse<T>, work?: (tx: Tx) => Promise<T>, prior?: PriorCommit): Promise<Fenced<T | undefined>> =>
      fenced(
        lease,
        work,
        (result, mark) => {
          const final: StoredResponse = typeof response === 'function' ? response(result) : response;
          const bytes = Buffer.byteLength(final.body, 'utf8');
          if (bytes > maxResponseBytes) {
            throw new RangeError(`postgresKeyStore: a ${bytes}-byte response exceeds maxResponseBytes (${maxResponseBytes})`);
          }
          const stored = [final.status, JSON.stringify(final.headers), final.body];
          // A mark before a final step with no statement is written by the same UPDATE.
          if (mark) return { sql: FINISH_AFTER, params: [...fenceArgs(lease), mark.recoveryPoint, JSON.stringify(mark.data ?? {}), ...stored] };
          return { sql: FINISH, params: [...fenceArgs(lease), ...stored] };
        },
        prior,
      ),

  };

  const store: KeyStore = {
    dialect: 'postgres',

    migrate: (app?: AppSchema) => migrate(runner, schema, app?.postgres),

    admit: (input) => commits.admit(input),

    async load(clientId, key) {
      const { rows } = await runner.prepared<RawRow>(LOAD, [clientId, key]);
      return rows[0] ? toRow(rows[0]) : undefined;
    },

    async takeOver(clientId, key, leaseMsForTakeover) {
      const { rows } = await runner.prepared<{ lease_token: string }>(
        `UPDATE ${t} SET lease_token = gen_random_uuid()::text, lease_until = now() + $3 * interval '1 millisecond'
          WHERE client_id = $1 AND key = $2 AND state = 'started' AND (lease_token IS NULL OR lease_until <= now())
          RETURNING lease_token`,
        [clientId, key, leaseMsForTakeover],
      );
      return rows[0] ? { clientId, key, token: rows[0].lease_token } : null;
    },

    commitPhase: (lease, phase, work) => commits.commitPhase(lease, phase, work),

    finish: (lease, response, work) => commits.finish(lease, response, work),

    async release(lease, { forget }) {
      // A row with a recovery point records work that happened: it is kept whatever `forget` says.
      if (forget) {
        const { rows } = await runner.prepared<Ended>(
          `WITH ended AS (DELETE FROM ${t} WHERE client_id = $1 AND key = $2 AND lease_token = $3 AND recovery_point IS NULL
                          RETURNING watched)
           ${NOTIFY_ENDED}`,
          [...fenceArgs(lease), channel],
        );
        if (rows[0]?.n === 1) return true;
      }
      const { rows } = await runner.prepared<Ended>(
        `WITH ended AS (UPDATE ${t} SET lease_token = NULL, lease_until = NULL
                         WHERE client_id = $1 AND key = $2 AND state = 'started' AND lease_token = $3 RETURNING watched)
         ${NOTIFY_ENDED}`,
        [...fenceArgs(lease), channel],
      );
      return rows[0]?.n === 1;
    },

    async park(lease, { retryAfterMs }) {
      const { rows } = await runner.prepared<Ended>(
        `WITH ended AS (UPDATE ${t} SET lease_token = NULL, lease_until = NULL, attempts = attempts + 1,
                               next_attempt_at = now() + $5 * interval '1 millisecond'
                         WHERE client_id = $1 AND key = $2 AND state = 'started' AND lease_token = $3 RETURNING watched)
         ${NOTIFY_ENDED}`,
        [...fenceArgs(lease), channel, retryAfterMs],
      );
      return rows[0]?.n === 1;
    },

    async sweep(limit) {
      // Served by the partial index on unfinished keys.
      const { rows } = await runner.prepared<RawRow>(
        `SELECT ${ROW} FROM ${t}
          WHERE state = 'started' AND next_attempt_at <= now() AND (lease_token IS NULL OR lease_until <= now())
          ORDER BY next_attempt_at, created_at LIMIT $1`,
        [limit],
      );
      return rows.map(toRow);
    },

    async reap(batchSize) {
      // Finished keys only: an in-flight or parked key is kept whatever its age, as on SQLite.
      const { rows } = await runner.prepared<{ n: number }>(
        `WITH gone AS (DELETE FROM ${t} WHERE ctid = ANY (ARRAY(
           SELECT ctid FROM ${t} WHERE expires_at <= now() AND state = 'finished' LIMIT $1)) RETURNING 1)
         SELECT count(*)::int AS n FROM gone`,
        [batchSize],
      );
      return rows[0]?.n ?? 0;
    },

    transaction: <T>(work: (tx: Tx) => Promise<T>) => runner.transaction((query) => work(txOver(query))),

    ...(ends === undefined ? {} : { watch: ends.watch }),

    close: async () => {
      await Promise.all([runner.close(), ends?.close()]);
    },
  };
  return withFoldedCommits(store, commits);
}
