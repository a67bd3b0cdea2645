/**
 * One SQLite connection (`node:sqlite` or better-sqlite3, see `../../sqlite/driver.node.ts`) as
 * the SQLite KeyStore uses it: pragmas for several processes
 * on one file, a statement cache, the group commit of its writes (`../../sqlite/group-commit.node.ts`,
 * shared with the journal: it waits for other processes' locks without blocking the event loop),
 * `BEGIN IMMEDIATE` transactions and the {@link Tx} adapter for application SQL. The key table's
 * SQL lives in `sqlite.node.ts`.
 *
 * The connection is synchronous, but `work(tx)` callbacks are async: while one
 * request's transaction awaits its work, another request's statement would run *inside that open
 * transaction* (and commit or roll back with it). So every store operation of a process runs
 * either as a grouped write or under `locked`, one at a time; other processes are kept out by
 * SQLite's own write lock. A `work` callback must therefore never call the store itself (it
 * would wait for itself).
 *
 * @module
 */
import { openDatabase, type SqliteDatabase, type SqliteDriver, type SqliteStatement } from '../../sqlite/driver.node.js';
import { DRIVER_BUSY_TIMEOUT_MS, isBusy } from '../../sqlite/busy.node.js';
import { groupCommit, type CallScope } from '../../sqlite/group-commit.node.js';
import type { Tx } from './types.js';

/** What {@link openSqlite} returns. */
export interface SqliteConnection {
  readonly db: SqliteDatabase;
  /** A cached prepared statement for `sql`. */
  prepare(sql: string): SqliteStatement;
  /**
   * Runs `fn` alone among this process's store operations: no write's transaction is open
   * meanwhile. `fn` must change nothing when it fails with SQLITE_BUSY (a read, or
   * {@link SqliteConnection.immediate}): it then runs again once the lock may be free, until
   * `busyTimeoutMs`, without blocking the event loop.
   */
  locked<T>(fn: () => Promise<T> | T): Promise<T>;
  /** Runs `body` in `BEGIN IMMEDIATE … COMMIT`, rolling back on a throw. Call it under `locked`. */
  immediate<T>(body: () => Promise<T> | T): Promise<T>;
  /**
   * Runs `body` as one write, group-committed with the other writes queued until the next turn of
   * the event loop; resolves only after the transaction holding it has committed. A body that
   * throws is undone back to its savepoint ({@link WriteScope}) and rejects alone. Do not call it
   * under `locked`: it takes the lock itself.
   */
  write<T>(body: (scope: WriteScope) => Promise<T> | T): Promise<T>;
  /** The application's view of the open transaction. */
  readonly tx: Tx;
}

/**
 * What a write's body gets. A body whose writes must be undone together if it throws — more than
 * one statement, or a statement followed by something that may throw — calls `savepoint()`
 * before its first write. {@link SqliteConnection.tx} does that itself on its first statement.
 * A body that writes one statement and nothing after needs none: SQLite undoes a failed
 * statement on its own, and a savepoint costs two statements.
 */
export type WriteScope = CallScope;

/**
 * Throws unless a transaction is open. SQLite rolls the whole transaction back on some errors
 * (SQLITE_FULL, SQLITE_IOERR, SQLITE_NOMEM) even inside a savepoint; if application work caught
 * such an error and went on, its next statements — and the recovery point after them — would
 * run in autocommit mode and commit on their own, without the work they belong with.
 */
export function assertInTransaction(db: SqliteDatabase): void {
  if (!db.inTransaction) throw new Error('SQLite ended the transaction (I/O error or disk full); nothing of this write was committed');
}

type Param = string | number | bigint | Buffer | null;

function toParam(value: unknown): Param {
  if (value === undefined || value === null) return null;
  if (typeof value === 'boolean') return value ? 1 : 0;
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'bigint' || Buffer.isBuffer(value)) return value;
  if (value instanceof Date) return value.getTime();
  return JSON.stringify(value);
}

/**
 * Switches a connection to WAL. Two processes opening a new file at the same moment race for the
 * exclusive lock this needs, and SQLite answers SQLITE_BUSY at once instead of calling the busy
 * handler, so the switch is retried here (a blocking wait: it happens once, at startup) until
 * `busyTimeoutMs`.
 */
function enableWal(db: SqliteDatabase, busyTimeoutMs: number): void {
  const deadline = Date.now() + busyTimeoutMs;
  const pause = new Int32Array(new SharedArrayBuffer(4));
  for (;;) {
    try {
      db.pragma('journal_mode = WAL');
      return;
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      if (code !== 'SQLITE_BUSY' || Date.now() >= deadline) throw error;
      Atomics.wait(pause, 0, 0, 5 + Math.random() * 20);
    }
  }
}

/** What a write or `locked` call that waited `busyTimeoutMs` for another process's lock fails with. */
function busyError(path: string, busyTimeoutMs: number, cause: unknown): Error {
  return new Error(
    `sqliteKeyStore: the database file ${path} stayed locked by another connection for over ${busyTimeoutMs} ms; ` +
      'find the process holding a long transaction on it, or raise busyTimeoutMs',
    { cause },
  );
}

/**
 * Opens `path` with WAL and `synchronous=NORMAL` (durable at each checkpoint, never corrupt), so
 * several server processes can share the file. A write or `locked` call that finds the file
 * locked by another process waits for it asynchronously, up to `busyTimeoutMs`, then fails with
 * an error that names the file. `driver`: see `openDatabase` (`node:sqlite` where Node has it).
 *
 * @example
 * ```ts
 * const connection = openSqlite('oncely.db', 5000);
 * await connection.locked(() => connection.immediate(() => connection.tx.run('DELETE FROM t')));
 * ```
 */
export function openSqlite(path: string, busyTimeoutMs: number, driver?: SqliteDriver | undefined): SqliteConnection {
  const db = openDatabase(path, { driver, timeout: DRIVER_BUSY_TIMEOUT_MS });
  enableWal(db, busyTimeoutMs);
  db.pragma('synchronous = NORMAL');

  const statements = new Map<string, SqliteStatement>();
  const prepare = (sql: string): SqliteStatement => {
    let statement = statements.get(sql);
    if (!statement) {
      statement = db.prepare(sql);
      statements.set(sql, statement);
    }
    return statement;
  };

  const group = groupCommit({
    connect: () => db,
    busyTimeoutMs,
    // A request runs from one commit to the next without yielding to the event loop: only the
    // next turn lets the other requests of the same poll reach their commits and join the group.
    gather: 'turn',
    mapError: (error) => (isBusy(error) ? busyError(path, busyTimeoutMs, error) : error),
  });

  // `$1, $2` (the placeholders shared with PostgreSQL) become SQLite's numbered `?1, ?2`, bound
  // by number, so a placeholder may repeat. Application SQL must not contain `$n` in literals.
  // Keyed by the application's own text, so a statement run again costs one Map lookup.
  const appStatements = new Map<string, SqliteStatement>();
  const adapt = (sql: string, params: readonly unknown[] = []): [SqliteStatement, Record<number, Param>] => {
    const bound: Record<number, Param> = {};
    for (let index = 0; index < params.length; index += 1) bound[index + 1] = toParam(params[index]);
    let statement = appStatements.get(sql);
    if (!statement) {
      statement = prepare(sql.replace(/\$(\d+)/g, '?$1'));
      appStatements.set(sql, statement);
    }
    return [statement, bound];
  };
  const tx: Tx = {
    dialect: 'sqlite',
    run: async (sql, params) => {
      assertInTransaction(db);
      group.current()?.savepoint();
      const [statement, bound] = adapt(sql, params);
      return statement.run(bound).changes;
    },
    all: async <T extends object>(sql: string, params?: readonly unknown[]) => {
      assertInTransaction(db);
      group.current()?.savepoint();
      const [statement, bound] = adapt(sql, params);
      return statement.all(bound) as T[];
    },
    get: async <T extends object>(sql: string, params?: readonly unknown[]) => {
      assertInTransaction(db);
      group.current()?.savepoint();
      const [statement, bound] = adapt(sql, params);
      return statement.get(bound) as T | undefined;
    },
  };

  return {
    db,
    prepare,
    locked: group.exclusive,
    write: (body) => group.submit('scoped', body),
    async immediate<T>(body: () => Promise<T> | T): Promise<T> {
      // IMMEDIATE takes the write lock up front: a deferred transaction that read first could
      // fail to upgrade (SQLITE_BUSY without waiting) when another process writes meanwhile.
      prepare('BEGIN IMMEDIATE').run();
      try {
        const result = await body();
        prepare('COMMIT').run();
        return result;
      } catch (error) {
        if (db.inTransaction) prepare('ROLLBACK').run();
        throw error;
      }
    },
    tx,
  };
}
