/**
 * The options of the SQLite KeyStore (`sqlite.node.ts`).
 *
 * @module
 */

/** Options of `sqliteKeyStore` (`sqlite.node.ts`). */
export interface SqliteKeyStoreOptions {
  /** Database file; `:memory:` for a private in-process database (tests). */
  readonly path: string;
  /**
   * How long a write waits for another process's write lock before failing (with an error that
   * says so, its `cause` SQLite's `SQLITE_BUSY`). The wait does not block the event loop: the
   * write is tried again on a timer.
   * @default 5000
   */
  readonly busyTimeoutMs?: number;
  /**
   * Largest stored response body, in UTF-8 bytes: the key table is not a blob store. A larger
   * final response makes `finish` throw (and commit nothing).
   * @default 65536
   */
  readonly maxResponseBytes?: number;
  /**
   * How often a worker thread checkpoints the WAL into the database file, so that no request's
   * commit pays for a checkpoint and its fsync (see `sqlite-checkpointer.node.ts`); `0` leaves
   * checkpoints to SQLite's automatic ones, inside commits. Not used for `:memory:`.
   * @default 50
   */
  readonly checkpointIntervalMs?: number;
  /**
   * The SQLite driver: `'node:sqlite'`, built into Node 22.16 and later (nothing to install), or
   * `'better-sqlite3'`, an optional peer (`npm install better-sqlite3@12`), the only one on Node
   * 20. Both read and write the same file format; processes on either may share one file.
   * @default 'node:sqlite' where Node has it, else 'better-sqlite3'
   */
  readonly driver?: 'node:sqlite' | 'better-sqlite3';
  /**
   * The clock, epoch ms. Inject one only in tests.
   * @default Date.now
   */
  readonly now?: () => number;
}
