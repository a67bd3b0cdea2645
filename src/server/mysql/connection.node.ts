/**
 * The store's connections: a `mysql2/promise` pool (the caller's, or one opened from a URL on
 * first use), each connection set up once for the store, and a transaction that always ends.
 *
 * Isolation: READ COMMITTED, set on each connection the first time the store uses it. Every
 * fenced write locks its row (`SELECT … FOR UPDATE`), and a locking read sees the latest committed
 * row at any level, so the fence does not need REPEATABLE READ; what REPEATABLE READ would add is
 * a snapshot fixed at the first read of a long transaction (a handler under `transaction: true`
 * would not see rows committed meanwhile, as it does on PostgreSQL's default level) and next-key
 * gap locks on the app's own range reads, which turn concurrent inserts into deadlocks. A caller's
 * pool is changed that way too: say so in its docs.
 *
 * @module
 */
import type { Pool, PoolConnection } from 'mysql2/promise';

/** A MySQL error as mysql2 raises it. */
interface DriverError {
  readonly errno?: number;
  readonly fatal?: boolean;
}

/** The server's error numbers the store acts on. */
export const ErrorNumber = {
  Duplicate: 1062,
  LockWaitTimeout: 1205,
  Deadlock: 1213,
} as const;

/** Whether `error` is the server's error `errno`. */
export const isError = (error: unknown, errno: number): boolean => (error as DriverError | null)?.errno === errno;

/**
 * Whether `error` ended the transaction it happened in: a deadlock rolls the whole transaction
 * back (a later statement would run outside it, in autocommit), and a fatal error closes the
 * connection.
 */
export const endsTransaction = (error: unknown): boolean => isError(error, ErrorNumber.Deadlock) || isFatal(error);

/** Whether `error` closed the connection (the server ended it, or it was lost). */
export const isFatal = (error: unknown): boolean => (error as DriverError | null)?.fatal === true;

/** The two session limits the store sets for a while, in seconds. */
interface Limits {
  /** `innodb_lock_wait_timeout`: how long a statement waits for a row lock. */
  waitS: number;
  /** `wait_timeout`: how long the server keeps a session that sends nothing (and rolls its transaction back). */
  idleS: number;
}

/** What the store keeps about one connection it set up: its limits as the server gave them, and now. */
export interface Session {
  readonly defaults: Readonly<Limits>;
  readonly now: Limits;
}

/** The store's pool: connections set up once, borrowed one at a time. */
export interface Connections {
  /**
   * Runs `body` on a connection of the pool, set up for the store; it goes back after, or is
   * destroyed when it failed with the connection, or `body` called `spoil()`.
   */
  use<T>(body: (conn: PoolConnection, session: Session, spoil: () => void) => Promise<T>): Promise<T>;
  /** Ends the pool when the store opened it; a caller's pool is left open. */
  close(): Promise<void>;
}

/** Thrown through {@link Connections.use} to have the connection destroyed rather than reused. */
export class BrokenConnection extends Error {
  override readonly name = 'BrokenConnection';
}

/**
 * The store's connections over `pool`, or over a pool opened from `uri` on first use (`mysql2`
 * is then loaded only then: the entry can be imported without it).
 */
export function connectionsOver(source: { readonly pool: Pool } | { readonly uri: string }): Connections {
  let opened: Promise<Pool> | undefined;
  const pool = (): Promise<Pool> => (opened ??= 'pool' in source ? Promise.resolve(source.pool) : openPool(source.uri));
  const sessions = new WeakMap<object, Session>();
  const setUp = async (conn: PoolConnection): Promise<Session> => {
    const known = sessions.get(conn.connection);
    if (known) return known;
    await conn.query('SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED');
    const [rows] = await conn.query('SELECT @@innodb_lock_wait_timeout AS wait_s, @@wait_timeout AS idle_s');
    const row = (rows as { wait_s: unknown; idle_s: unknown }[])[0];
    const defaults = { waitS: Number(row?.wait_s ?? 50), idleS: Number(row?.idle_s ?? 28_800) };
    const session = { defaults, now: { ...defaults } };
    sessions.set(conn.connection, session);
    return session;
  };
  return {
    async use(body) {
      const conn = await (await pool()).getConnection();
      let broken = false;
      const spoil = (): void => void (broken = true);
      try {
        return await body(conn, await setUp(conn), spoil);
      } catch (error) {
        broken = error instanceof BrokenConnection || endsTransaction(error);
        throw error instanceof BrokenConnection && error.cause !== undefined ? error.cause : error;
      } finally {
        if (broken) conn.destroy();
        else conn.release();
      }
    },
    async close() {
      if ('uri' in source && opened) await (await opened).end();
    },
  };
}

async function openPool(uri: string): Promise<Pool> {
  let driver: typeof import('mysql2/promise');
  try {
    driver = await import('mysql2/promise');
  } catch (error) {
    throw new Error('mysqlKeyStore: mysql2 is not installed; it is needed for the MySQL key store. Install it: npm install mysql2@3', { cause: error });
  }
  // `supportBigNumbers`: a BIGINT beyond 2^53 comes back as text, not rounded (none of the store's is).
  return driver.createPool({ uri, supportBigNumbers: true });
}

/**
 * Runs `body` between BEGIN and COMMIT on `conn`, and rolls back when it throws. A ROLLBACK that
 * fails (the connection is gone) marks the connection broken; the body's own error is rethrown.
 */
export async function inTransaction<T>(conn: PoolConnection, body: () => Promise<T>): Promise<T> {
  await conn.query('START TRANSACTION');
  let value: T;
  try {
    value = await body();
  } catch (error) {
    await conn.query('ROLLBACK').catch(() => {
      throw new BrokenConnection('the ROLLBACK failed', { cause: error });
    });
    throw error;
  }
  await conn.query('COMMIT');
  return value;
}

/**
 * Sets the connection's lock wait and idle limit to `limits` (seconds, rounded up, at least one),
 * and each one not given back to the server's own, in one statement, and only when one differs.
 */
export async function setLimits(conn: PoolConnection, session: Session, limits: { readonly [K in keyof Limits]?: number | undefined }): Promise<void> {
  const wanted: Limits = { waitS: limits.waitS ?? session.defaults.waitS, idleS: limits.idleS ?? session.defaults.idleS };
  const sets: string[] = [];
  for (const [name, variable] of [
    ['waitS', 'innodb_lock_wait_timeout'],
    ['idleS', 'wait_timeout'],
  ] as const) {
    const seconds = Math.max(1, Math.ceil(wanted[name]));
    if (session.now[name] !== seconds) sets.push(`${variable} = ${seconds}`);
  }
  if (sets.length === 0) return;
  await conn.query(`SET SESSION ${sets.join(', ')}`);
  session.now.waitS = Math.max(1, Math.ceil(wanted.waitS));
  session.now.idleS = Math.max(1, Math.ceil(wanted.idleS));
}

/** The parameters `execute` takes, as mysql2 types them. */
type Values = Parameters<PoolConnection['execute']>[1];

/**
 * Runs `sql` as a prepared statement on `conn` (parameters bound, never escaped into the text).
 * Resolves to its rows (a query) or its result header (a change).
 */
export async function execute(conn: PoolConnection, sql: string, params: readonly unknown[]): Promise<unknown> {
  const [result] = await conn.execute(sql, params as Values);
  return result;
}
