/**
 * The PostgreSQL KeyStore: the engine for many server instances on one database. The database
 * arbitrates every race (admission, takeover, fencing) and is the only clock: lease expiry,
 * `leaseRemainingMs`, `createdAt` and `expiresAt` all come from `now()`, so instances with skewed
 * clocks still agree.
 *
 * The table, and why it is not partitioned, are explained in `postgres-schema.node.ts`; every
 * statement is in `postgres-sql.node.ts`; the admission in `postgres-admit.node.ts`; fencing, the size check and the row folding are the
 * store core's (`core.ts`), over this dialect's transport (`postgres-fenced.node.ts`, the
 * pipelined runner in `postgres-runner.node.ts`).
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
import { fencedWrite, txOver } from './core.js';
import { LOST } from './lease-lost.js';
import { planWrite, refuseIdleWork, type RowChange } from './write-plan.js';
import { schemaFor } from './app-schema.js';
import { admitOn, beginRequestOn } from './postgres-admit.node.js';
import { fenceArgs, landed, pgSession, shaped } from './postgres-fenced.node.js';
import { endChannel, listenForEnds, listenConfig as listenTarget } from './postgres-listen.node.js';
import { createPgliteRunner, type PgliteLike } from './postgres-pglite.node.js';
import { listenConfig } from './postgres-hosts.node.js';
import { createPgRunner } from './postgres-runner.node.js';
import type { Runner, Statement } from './postgres-transport.node.js';
import { schemaFromPool, schemaFromUrl } from './postgres-url.node.js';
import { migrate } from './postgres-schema.node.js';
import { poolerRefusal } from './postgres-session.node.js';
import { toRow, type RawRow } from './postgres-rows.node.js';
import { postgresSql } from './postgres-sql.node.js';
import type { AppSchema, Fenced, KeyStore, Lease, Tx, WriteChange } from './types.js';
import { InvalidOptionError } from '../errors/invalid-option-error.js';

export type { PgliteLike, PgliteQueryable, PgliteResults } from './postgres-pglite.node.js';

/**
 * Options of {@link postgresKeyStore}: exactly one of `connectionString`, `pool` or `pglite`.
 *
 * @example
 * ```ts
 * const options: PostgresKeyStoreOptions = { connectionString: 'postgres://db.internal/payments', schema: 'oncely', statementTimeoutMs: 5000 };
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

/** What a statement that ends a lease answers: how many rows it ended. */
type Ended = { readonly n: number };

/**
 * Opens a PostgreSQL KeyStore over a connection string, a `pg` pool or a PGlite instance. Call
 * `migrate()` once before use; any number of instances may do so at the same time.
 *
 * @example
 * ```ts
 * import { postgresKeyStore } from 'oncely/server/postgres';
 * const store = postgresKeyStore({ connectionString: process.env.DATABASE_URL ?? 'postgres://127.0.0.1:5432/payments', schema: 'oncely' });
 * await store.migrate();
 * ```
 */
export function postgresKeyStore(
  options: PostgresKeyStoreOptions,
): KeyStore & Required<Pick<KeyStore, 'migrate' | 'beginRequest' | 'sweep' | 'reap' | 'close'>> {
  const schema = options.schema ?? schemaFromUrl(options.connectionString) ?? schemaFromPool(options.pool) ?? 'public';
  if (!SCHEMA_NAME.test(schema)) throw new InvalidOptionError('postgresKeyStore', 'schema', `is not a valid schema name: ${JSON.stringify(schema)}`);
  const sources = [options.connectionString, options.pool, options.pglite].filter((source) => source !== undefined);
  if (sources.length !== 1) throw new InvalidOptionError('postgresKeyStore', 'connectionString', 'or pool or pglite: pass exactly one of them');
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
        // The listen URL when given (a real session past any pooler), else the pool's own target;
        // a multi-host URL is read per connection, so a reconnect follows a failover.
        listenConfig(listenTarget(options)),
        endChannel(schema),
        // Only a watched row's end notifies (see the schema's notes); once set, never again.
        async (clientId, key) => {
          await runner.prepared(postgresSql(schema).watch, [clientId, key]);
        },
        { session: options.listenUrl !== undefined },
      );
  const SQL = postgresSql(schema);
  // The longest lease this store has granted: what bounds the idle time of a transaction under a
  // lease (`pgSession`), whose own lease the store's finish is not told.
  let longestLeaseMs: number | undefined;
  const granted = (leaseMs: number): void => {
    if (longestLeaseMs === undefined || leaseMs > longestLeaseMs) longestLeaseMs = leaseMs;
  };
  const fenced = async <T>(
    lease: Lease,
    work: ((tx: Tx) => Promise<T>) | undefined,
    statement: (result: T | undefined) => Statement,
    at?: string,
  ): Promise<Fenced<T | undefined>> =>
    fencedWrite(pgSession(runner, SQL, lease, longestLeaseMs), {
      store: 'postgresKeyStore',
      dialect: 'postgres',
      work,
      statement,
      landed: at === undefined ? undefined : () => landed(runner, SQL, lease, at),
    });

  const admit = admitOn(runner, SQL, maxResponseBytes);
  const beginRequest = beginRequestOn(runner, SQL, maxResponseBytes);

  const store: KeyStore & Required<Pick<KeyStore, 'migrate' | 'beginRequest' | 'sweep' | 'reap' | 'close'>> = {
    dialect: 'postgres',

    migrate: (app?: AppSchema) =>
      migrate(runner, schema, app && schemaFor('postgresKeyStore', 'postgres', app)).catch((error: unknown) => {
        throw poolerRefusal(error) ?? error;
      }),

    admit: ((input, first) => {
      granted(input.leaseMs);
      return admit(input, first);
    }) as KeyStore['admit'],

    beginRequest,

    async load(clientId, key) {
      const { rows } = await runner.prepared<RawRow>(SQL.load, [clientId, key]);
      return rows[0] ? toRow(rows[0]) : undefined;
    },

    async takeOver(clientId, key, leaseMs) {
      granted(leaseMs);
      const { rows } = await runner.prepared<{ lease_token: string }>(SQL.takeOver, [clientId, key, leaseMs]);
      return rows[0] ? { clientId, key, token: rows[0].lease_token } : null;
    },

    write: (lease, change, work) => {
      refuseIdleWork('postgresKeyStore', change, work);
      // A release or park: one statement that ends the lease (and notifies a watched row's waiters).
      if (change.kind === 'release' || change.kind === 'park') return letGo(lease, change);
      if (change.kind === 'phase') granted(change.leaseMs);
      const limits = { store: 'postgresKeyStore', key: lease.key, maxResponseBytes };
      // A phase's lost answer is resolved by its point: the row at the last point under the lease.
      const at = change.kind === 'phase' ? (change.after ?? change).recoveryPoint : undefined;
      return fenced(lease, work, (result) => statementOf(lease, planWrite(change, result, limits)), at);
    },

    async sweep(limit) {
      const { rows } = await runner.prepared<RawRow>(SQL.sweep, [limit]);
      return rows.map(toRow);
    },

    async reap(batchSize) {
      const { rows } = await runner.prepared<{ n: number }>(SQL.reap, [batchSize]);
      return rows[0]?.n ?? 0;
    },

    transaction: <T>(work: (tx: Tx) => Promise<T>) =>
      runner.transaction((query) => work(txOver('postgres', async (op, sql, params) => shaped(op, await query(sql, params))))),

    ...(ends === undefined ? {} : { watch: ends.watch }),

    close: async () => {
      await Promise.all([runner.close(), ends?.close()]);
    },
  };
  /**
   * A phase or a finish as its one fenced statement, sent with the work's COMMIT: `oncely_point`
   * (the mark before and the point after folded into the phase's own UPDATE), or `oncely_finish`
   * (with the outcome mark before the response, `oncely_finish_after`).
   */
  function statementOf(lease: Lease, row: RowChange): Statement {
    if (!row.response) return { sql: SQL.point, params: [...fenceArgs(lease), row.recoveryPoint, JSON.stringify(row.data), row.leaseMs] };
    const stored = [row.response.status, JSON.stringify(row.response.headers), row.response.body];
    if (row.recoveryPoint !== undefined) return { sql: SQL.finishAfter, params: [...fenceArgs(lease), row.recoveryPoint, JSON.stringify(row.data), ...stored] };
    return { sql: SQL.finish, params: [...fenceArgs(lease), ...stored] };
  }
  /** A release (forgetting a row with no point yet) or a park: the lease ended, or lost. */
  async function letGo(lease: Lease, change: Extract<WriteChange, { kind: 'release' | 'park' }>): Promise<Fenced<undefined>> {
    let n: number;
    if (change.kind === 'park') n = await ended(SQL.park, lease, change.retryAfterMs);
    // A row with a recovery point records work that happened: it is kept whatever `forget` says.
    else n = change.forget && (await ended(SQL.forget, lease)) === 1 ? 1 : await ended(SQL.release, lease);
    return n === 1 ? { ok: true, value: undefined } : LOST;
  }
  /** A statement that ends a lease (and notifies a watched row's waiters): the rows it ended. */
  async function ended(sql: string, lease: Lease, ...more: unknown[]): Promise<number> {
    const { rows } = await runner.prepared<Ended>(sql, [...fenceArgs(lease), SQL.channel, ...more]);
    return rows[0]?.n ?? 0;
  }
  return store;
}
