/**
 * WAL checkpoints off the request path.
 *
 * In WAL mode SQLite copies the log back into the database file every `wal_autocheckpoint`
 * pages (1 000 by default), inside whichever COMMIT crosses the mark, and with
 * `synchronous=NORMAL` that checkpoint ends with an fsync of the database file. better-sqlite3 is
 * synchronous, so the request whose commit crossed the mark — and every request behind it on the
 * event loop — waited for the copy and the fsync. Measured on the key store's first-execution
 * statements (`bench/sqlite-commit.ts`), checkpoints were two thirds of the cost of a commit.
 *
 * So the store's connection only checkpoints as a backstop ({@link BACKSTOP_PAGES}), and a worker
 * thread with its own connection to the same file runs `wal_checkpoint(PASSIVE)` every
 * `intervalMs`. A passive checkpoint never blocks a writer or a reader: it copies what it can, and
 * the writer's own checkpoint at the backstop finds little left to copy. Durability
 * is unchanged: a commit is as durable as before (in the WAL, fsynced at checkpoint time), only
 * the thread that does the checkpoint differs. If the worker cannot start or dies, the
 * connection goes back to SQLite's own automatic checkpoints.
 *
 * @module
 */
import { statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type { SqliteDatabase, SqliteDriver } from '../../sqlite/driver.node.js';

/** SQLite's default `wal_autocheckpoint`, restored when the worker is not running. */
const SQLITE_DEFAULT_PAGES = 1000;

/**
 * The store connection's own `wal_autocheckpoint` while the worker runs (2 048 pages of 4 KiB =
 * 8 MiB of log). Under constant writes a passive checkpoint never catches up with the last frame,
 * so the log is not started over from the beginning until a checkpoint in the writer itself
 * crosses this mark; by then the worker has copied all but the last few frames, so that
 * checkpoint is short. It also bounds the log if the worker falls behind or dies without notice.
 */
export const BACKSTOP_PAGES = 2048;

/**
 * The log file size past which the writer itself checkpoints with TRUNCATE, waiting for the
 * worker's checkpoint to end if one is running. Without it nothing holds the writer back while a
 * slow disk keeps the worker's checkpoint (and its lock) busy: the writer's backstop checkpoint is
 * passive and gives up when the lock is taken, and the log grows with the write rate. 32 MiB.
 */
export const LIMIT_BYTES = 4 * BACKSTOP_PAGES * 4096;

/** The longest one backpressure checkpoint holds the writer back. */
const BOUND_WAIT_MS = 200;

// CommonJS, evaluated in the worker, on the store's driver: better-sqlite3 is resolved by the
// parent (below) and passed in; node:sqlite's ExperimentalWarning (Node 22, and 24 before 24.15)
// is left out here as in the parent (see node-sqlite.node.ts).
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const open = () => {
  if (workerData.driver === 'better-sqlite3') {
    const Database = require(workerData.module);
    const db = new Database(workerData.path, { timeout: workerData.busyTimeoutMs, fileMustExist: true });
    return { checkpoint: () => db.pragma('wal_checkpoint(PASSIVE)'), close: () => db.close() };
  }
  const emitWarning = process.emitWarning;
  process.emitWarning = (warning, ...rest) => {
    if (!String(warning).includes('SQLite')) emitWarning.call(process, warning, ...rest);
  };
  const { DatabaseSync } = require('node:sqlite');
  process.emitWarning = emitWarning;
  const db = new DatabaseSync(workerData.path, { timeout: workerData.busyTimeoutMs });
  const statement = db.prepare('PRAGMA wal_checkpoint(PASSIVE)');
  return { checkpoint: () => statement.get(), close: () => db.close() };
};
const db = open();
const checkpoint = () => db.checkpoint();
const timer = setInterval(() => {
  try {
    checkpoint();
  } catch {
    // SQLITE_BUSY (another checkpoint is running) or a transient I/O error: try again next time.
  }
}, workerData.intervalMs);
parentPort.on('message', () => {
  clearInterval(timer);
  try {
    checkpoint();
  } catch {}
  db.close();
  process.exit(0);
});
`;

/** A running checkpointer. */
export interface Checkpointer {
  /**
   * Checkpoints in the calling thread if the log file is past {@link LIMIT_BYTES}: the
   * backpressure that keeps the log bounded. Call it now and then between transactions, under
   * the store's lock, so that no write of the connection runs until it resolves.
   */
  bound(): Promise<void>;
  /** Runs a last checkpoint and stops the worker. */
  close(): Promise<void>;
}

/**
 * Starts checkpointing `path` (a WAL database that `db` has open) from a worker thread.
 *
 * @example
 * ```ts
 * const checkpointer = startCheckpointer(db, 'oncely.db', { intervalMs: 50, busyTimeoutMs: 5000, driver: 'node:sqlite' });
 * // …
 * await checkpointer.close();
 * ```
 */
export function startCheckpointer(
  db: SqliteDatabase,
  path: string,
  options: { readonly intervalMs: number; readonly busyTimeoutMs: number; readonly driver: SqliteDriver },
): Checkpointer {
  const fallBack = (): void => {
    if (db.open) db.pragma(`wal_autocheckpoint = ${SQLITE_DEFAULT_PAGES}`);
  };
  let worker: Worker;
  try {
    worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { module: options.driver === 'better-sqlite3' ? createRequire(import.meta.url).resolve('better-sqlite3') : undefined, path, ...options },
    });
  } catch {
    return { bound: () => Promise.resolve(), close: () => Promise.resolve() };
  }
  db.pragma(`wal_autocheckpoint = ${BACKSTOP_PAGES}`);
  // A worker that could not open the file or died leaves checkpoints to SQLite again.
  let closing = false;
  worker.on('error', fallBack);
  const exited = new Promise<void>((resolve) =>
    worker.once('exit', () => {
      if (!closing) fallBack();
      resolve();
    }),
  );
  // It must never keep a process alive on its own.
  worker.unref();
  const log = `${path}-wal`;
  return {
    async bound() {
      try {
        if (statSync(log).size <= LIMIT_BYTES) return;
        // A checkpoint that finds the worker's running, another process writing or a reader on
        // the log's end answers busy at once (the connection has no busy timeout: a wait there
        // would block the event loop), having copied what it could. So it is tried again after a
        // pause, holding this connection's writes back (that is the point), but never long: a
        // reader in another process can hold the log for as long as it likes. After
        // BOUND_WAIT_MS the writes go on, and the next call tries again.
        const deadline = Date.now() + BOUND_WAIT_MS;
        while ((db.pragma('wal_checkpoint(TRUNCATE)') as Array<{ busy: number }>)[0]?.busy === 1 && Date.now() < deadline) {
          await new Promise((resolve) => setTimeout(resolve, 2));
        }
      } catch {
        // No log file (nothing written yet), or SQLite failed: the next call tries again.
      }
    },
    async close() {
      if (closing) return exited;
      closing = true;
      worker.postMessage('close');
      const timeout = setTimeout(() => void worker.terminate(), 5000);
      await exited;
      clearTimeout(timeout);
    },
  };
}
