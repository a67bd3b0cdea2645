/**
 * What `sqliteJournal()` takes and what it returns: its options (path, durability, …) and the
 * journal's own fields, apart from the file's workings in `sqlite.node.ts`.
 *
 * @module
 */
import type { Journal } from './types.js';

/**
 * How much a committed journal write survives.
 *
 * @example
 * ```ts
 * sqliteJournal({ durability: Durability.Power }); // payments on a laptop that may lose power
 * ```
 */
export const Durability = {
  /**
   * Survives a crash or kill of the process (WAL, `synchronous=NORMAL`): a committed write is
   * in the WAL file in the OS's page cache. A power loss or OS crash may lose the last writes.
   * A settled operation's outcome is written behind (`updateLater`): `post()` resolves with the
   * answer and the outcome commits right after; a crash in between leaves the operation pending,
   * and `resume()` gets the server's replay of it.
   */
  Process: 'process',
  /**
   * Survives power loss too (WAL, `synchronous=FULL`): every commit waits for fsync, and nothing
   * is written behind: `post()` resolves only once its outcome is on disk.
   */
  Power: 'power',
} as const;

/**
 * One of {@link Durability}'s values.
 *
 * @example
 * ```ts
 * const durability: Durability = process.env.JOURNAL_FSYNC ? 'power' : 'process';
 * ```
 */
export type Durability = (typeof Durability)[keyof typeof Durability];

/**
 * Options of {@link sqliteJournal}.
 *
 * @example
 * ```ts
 * const options: SqliteJournalOptions = { path: '/var/lib/app/oncely.db', durability: 'power', busyTimeoutMs: 10_000 };
 * ```
 */
export interface SqliteJournalOptions {
  /**
   * The journal file; its directory is created if missing. Without it: `ONCELY_JOURNAL`, else
   * `~/.oncely/journal.db`.
   *
   * @example
   * ```ts
   * sqliteJournal({ path: '/var/lib/payroll/oncely.db' });
   * ```
   */
  readonly path?: string;
  /**
   * `'process'` survives a crash or `SIGKILL` of the process; `'power'` also survives power loss
   * at the cost of an fsync per write (`'power'`).
   *
   * @default 'process'
   * @example
   * ```ts
   * sqliteJournal({ durability: 'power' });
   * ```
   */
  readonly durability?: Durability;
  /**
   * How long a call waits for another process's lock on the file before failing with a
   * `JournalError`. The wait does not block the event loop (it is retried asynchronously).
   *
   * @default 5000
   * @example
   * ```ts
   * sqliteJournal({ busyTimeoutMs: 30_000 });
   * ```
   */
  readonly busyTimeoutMs?: number;
  /**
   * Run `PRAGMA quick_check` when the file is opened, so a damaged file is reported at once
   * rather than when a damaged page is first read.
   *
   * @default true
   * @example
   * ```ts
   * sqliteJournal({ verifyOnOpen: false }); // huge journals where the scan costs too much
   * ```
   */
  readonly verifyOnOpen?: boolean;
  /**
   * The SQLite driver: `'node:sqlite'`, built into Node 22.16 and later (nothing to install), or
   * `'better-sqlite3'`, an optional peer (`npm install better-sqlite3@12`), the only one on Node
   * 20. Both read and write the same file format, so a journal moves between them as it is.
   *
   * @default 'node:sqlite' where Node has it, else 'better-sqlite3'
   * @example
   * ```ts
   * sqliteJournal({ driver: 'better-sqlite3' });
   * ```
   */
  readonly driver?: 'node:sqlite' | 'better-sqlite3';
}

/**
 * A {@link Journal} backed by a SQLite file.
 *
 * @example
 * ```ts
 * const journal: SqliteJournal = sqliteJournal();
 * console.log(`journal at ${journal.path} (${journal.durability})`);
 * ```
 */
export interface SqliteJournal extends Journal {
  readonly kind: 'sqlite';
  /** The resolved file path. */
  readonly path: string;
  readonly durability: Durability;
  /** The driver the file is opened with (see {@link SqliteJournalOptions.driver}). */
  readonly driver: 'node:sqlite' | 'better-sqlite3';
}
