/**
 * One better-sqlite3 connection as the SQLite KeyStore uses it: pragmas for several processes
 * on one file, a statement cache, a per-process async mutex, `BEGIN IMMEDIATE` transactions and
 * the {@link Tx} adapter for application SQL. The key table's SQL lives in `sqlite.node.ts`.
 *
 * @module
 */
import type Database from 'better-sqlite3';
import { requirePeer } from '../../optional-peer.node.js';
import type { Tx } from './types.js';

/** What {@link openSqlite} returns. */
export interface SqliteConnection {
  readonly db: Database.Database;
  /** A cached prepared statement for `sql`. */
  prepare(sql: string): Database.Statement;
  /** Runs `fn` alone among this process's store operations (see {@link createMutex}). */
  locked<T>(fn: () => Promise<T> | T): Promise<T>;
  /** Runs `body` in `BEGIN IMMEDIATE … COMMIT`, rolling back on a throw. Call it under `locked`. */
  immediate<T>(body: () => Promise<T> | T): Promise<T>;
  /**
   * Runs `body` as one atomic write, group-committed with the other writes queued meanwhile (see
   * {@link createGroupCommit}); resolves only after the transaction holding it has committed.
   * Do not call it under `locked`: it takes the lock itself.
   */
  write<T>(body: (scope: WriteScope) => Promise<T> | T): Promise<T>;
  /** The application's view of the open transaction. */
  readonly tx: Tx;
}

/**
 * A FIFO mutex. better-sqlite3 is one synchronous connection, but `work(tx)` callbacks are
 * async: while one request's transaction awaits its work, another request's statement would run
 * *inside that open transaction* (and commit or roll back with it). So every store operation of
 * a process runs under this lock; other processes are kept out by SQLite's own write lock.
 * A `work` callback must therefore never call the store itself (it would wait for itself).
 */
function createMutex(): <T>(fn: () => Promise<T> | T) => Promise<T> {
  let tail: Promise<unknown> = Promise.resolve();
  return <T>(fn: () => Promise<T> | T): Promise<T> => {
    const run = tail.then(fn, fn);
    tail = run.catch(() => undefined);
    return run;
  };
}

/**
 * What a write's body gets. A body whose writes must be undone together if it throws — more than
 * one statement, or a statement followed by something that may throw — calls `savepoint()`
 * before its first write. {@link SqliteConnection.tx} does that itself on its first statement.
 * A body that writes one statement and nothing after needs none: SQLite undoes a failed
 * statement on its own, and a savepoint costs two statements.
 */
export interface WriteScope {
  /** Opens this write's savepoint unless it is open already. */
  savepoint(): void;
}

interface WriteTask {
  readonly body: (scope: WriteScope) => unknown;
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * Group commit for the key store's writes. A commit is most of what a write costs here (WAL
 * frame writes and lock syscalls), and an idempotent request makes several (admission, each
 * recovery point, the final response). So writes queued while the lock is busy — other requests
 * reaching a phase boundary at the same time — run together in one `BEGIN IMMEDIATE … COMMIT`,
 * each in its own savepoint:
 *
 * - each write is still atomic on its own: one that throws is rolled back to its savepoint (see
 *   {@link WriteScope}: a one-statement write needs none) and rejects alone; the others commit;
 * - nothing resolves before the COMMIT that holds it, so a recovery point is never reported (and
 *   no crash hook fires) before it is durable; if the COMMIT fails, or SQLite aborts the
 *   transaction, every write of the group rejects and none of them happened;
 * - fencing is unchanged: each write checks its lease token inside the transaction, under the
 *   database's write lock;
 * - a write on its own (no concurrency) is one transaction, as before, started one turn of the
 *   event loop later.
 *
 * Application work inside a write must not wait for I/O (it never should: no external call runs
 * inside a transaction): the whole group, and the database's write lock, wait with it.
 *
 * Writes of one group may see each other's uncommitted rows (two requests with one key in one
 * group: the second finds the first's row). They commit or fail together, so nothing is ever
 * answered from a row that did not commit.
 */
function createGroupCommit(
  db: Database.Database,
  prepare: (sql: string) => Database.Statement,
  locked: <T>(fn: () => Promise<T> | T) => Promise<T>,
): { write: <T>(body: (scope: WriteScope) => Promise<T> | T) => Promise<T>; current: () => WriteScope | undefined } {
  let queue: WriteTask[] = [];
  let scheduled = false;
  // The scope of the write running now (writes of a group run one after another, under the lock).
  let running: WriteScope | undefined;

  /** Throws when SQLite ended the transaction under a write (I/O error, disk full): see {@link assertInTransaction}. */
  const stillOpen = (): void => assertInTransaction(db);

  const runGroup = async (): Promise<void> => {
    scheduled = false;
    const tasks = queue;
    queue = [];
    if (tasks.length === 0) return;
    const settled: Array<{ ok: true; value: unknown } | { ok: false; error: unknown }> = [];
    let failure: { error: unknown } | undefined;
    try {
      prepare('BEGIN IMMEDIATE').run();
      for (const task of tasks) {
        let opened = false;
        const scope: WriteScope = {
          savepoint() {
            if (opened) return;
            // Outside a transaction SAVEPOINT would begin one of its own, outside the group.
            stillOpen();
            prepare('SAVEPOINT oncely_write').run();
            opened = true;
          },
        };
        running = scope;
        try {
          const value = await task.body(scope);
          stillOpen();
          if (opened) prepare('RELEASE oncely_write').run();
          settled.push({ ok: true, value });
        } catch (error) {
          // SQLite ended the whole transaction (I/O error, disk full): the group's earlier
          // writes are gone with it, so none of them may be reported done.
          if (!db.inTransaction) throw error;
          if (opened) {
            prepare('ROLLBACK TO oncely_write').run();
            prepare('RELEASE oncely_write').run();
          }
          settled.push({ ok: false, error });
        } finally {
          running = undefined;
        }
      }
      prepare('COMMIT').run();
    } catch (error) {
      failure = { error };
      try {
        if (db.inTransaction) prepare('ROLLBACK').run();
      } catch {
        // The connection is broken; every write of the group is reported failed below.
      }
    } finally {
      // Every task settles, whatever happened: a request must never hang on its commit.
      tasks.forEach((task, index) => {
        const outcome = failure ? { ok: false as const, error: failure.error } : (settled[index] ?? { ok: false as const, error: new Error('write not run') });
        if (outcome.ok) task.resolve(outcome.value);
        else task.reject(outcome.error);
      });
    }
  };

  const write = <T>(body: (scope: WriteScope) => Promise<T> | T): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      queue.push({ body, resolve: resolve as (value: unknown) => void, reject });
      if (!scheduled) {
        // Behind whatever holds the lock now: everything queued until the group starts joins it.
        // The group starts on the next turn of the event loop, not in this one: a request runs
        // from one commit to the next without yielding (every await in between is a microtask), so
        // only a turn of the loop lets the other requests that arrived in the same poll reach
        // their own commits and join the group.
        scheduled = true;
        setImmediate(() => void locked(runGroup).catch(() => undefined));
      }
    });
  return { write, current: () => running };
}

/**
 * Throws unless a transaction is open. SQLite rolls the whole transaction back on some errors
 * (SQLITE_FULL, SQLITE_IOERR, SQLITE_NOMEM) even inside a savepoint; if application work caught
 * such an error and went on, its next statements — and the recovery point after them — would
 * run in autocommit mode and commit on their own, without the work they belong with.
 */
export function assertInTransaction(db: Database.Database): void {
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
function enableWal(db: Database.Database, busyTimeoutMs: number): void {
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

/**
 * Opens `path` with WAL, `synchronous=NORMAL` (durable at each checkpoint, never corrupt) and a
 * busy timeout, so several server processes can share the file.
 *
 * @example
 * ```ts
 * const connection = openSqlite('oncely.db', 5000);
 * await connection.locked(() => connection.immediate(() => connection.tx.run('DELETE FROM t')));
 * ```
 */
export function openSqlite(path: string, busyTimeoutMs: number): SqliteConnection {
  const Driver = requirePeer<typeof Database>('better-sqlite3');
  const db = new Driver(path, { timeout: busyTimeoutMs });
  db.pragma(`busy_timeout = ${Math.max(0, Math.floor(busyTimeoutMs))}`);
  enableWal(db, busyTimeoutMs);
  db.pragma('synchronous = NORMAL');

  const statements = new Map<string, Database.Statement>();
  const prepare = (sql: string): Database.Statement => {
    let statement = statements.get(sql);
    if (!statement) {
      statement = db.prepare(sql);
      statements.set(sql, statement);
    }
    return statement;
  };

  const locked = createMutex();
  const group = createGroupCommit(db, prepare, locked);

  // `$1, $2` (the placeholders shared with PostgreSQL) become SQLite's numbered `?1, ?2`, bound
  // by number, so a placeholder may repeat. Application SQL must not contain `$n` in literals.
  // Keyed by the application's own text, so a statement run again costs one Map lookup.
  const appStatements = new Map<string, Database.Statement>();
  const adapt = (sql: string, params: readonly unknown[] = []): [Database.Statement, Record<number, Param>] => {
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
    locked,
    write: group.write,
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
