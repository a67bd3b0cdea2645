/**
 * The SQLite driver seam of the journal and the key store: Node's built-in `node:sqlite` where it
 * serves (Node 22.16+ and 24+: nothing to install, nothing to compile), better-sqlite3 (an
 * optional peer) elsewhere — Node 20, which has no `node:sqlite`, and Node 22 before 22.16.
 *
 * {@link SqliteDatabase} is the part of better-sqlite3's API oncely uses; a better-sqlite3
 * connection is one as it is, and `node-sqlite.node.ts` makes a `node:sqlite` one behave the same
 * (its table lists every difference that matters here). Transactions are plain `BEGIN` /
 * `COMMIT` statements on both: better-sqlite3's `db.transaction()` helper has no counterpart.
 *
 * @module
 * @internal
 */
import type BetterSqlite3 from 'better-sqlite3';
import { ErrorCode, OncelyError } from '../errors/oncely-error.js';
import { requirePeer } from '../optional-peer.node.js';
import { NodeSqliteDatabase, loadNodeSqlite } from './node-sqlite.node.js';

/** A SQLite driver oncely can run on: `'node:sqlite'` (built into Node 22.16+) or `'better-sqlite3'` (a package). */
export type SqliteDriver = 'node:sqlite' | 'better-sqlite3';

/** A prepared statement: better-sqlite3's, or `node:sqlite`'s made to behave as it does. */
export interface SqliteStatement<P extends unknown[] = unknown[], R = unknown> {
  run(...params: P): { readonly changes: number };
  /** The first row, `undefined` when there is none. */
  get(...params: P): R | undefined;
  all(...params: P): R[];
  iterate(...params: P): IterableIterator<R>;
}

/** A connection: the members of better-sqlite3's `Database` oncely uses. */
export interface SqliteDatabase {
  prepare<P extends unknown[] = unknown[], R = unknown>(sql: string): SqliteStatement<P, R>;
  exec(sql: string): void;
  /** `PRAGMA source`: every row, or with `simple` the first column of the first row. */
  pragma(source: string, options?: { readonly simple?: boolean }): unknown;
  function(name: string, options: { readonly deterministic?: boolean }, fn: (...args: never[]) => unknown): void;
  readonly inTransaction: boolean;
  readonly open: boolean;
  readonly memory: boolean;
  /** Closes the connection; closing it again does nothing. */
  close(): void;
}

/** The drivers that can be loaded in this process, preferred first. */
export function availableDrivers(): SqliteDriver[] {
  const drivers: SqliteDriver[] = [];
  if (loadNodeSqlite()) drivers.push('node:sqlite');
  try {
    // A connection opened: better-sqlite3 loads its native module only then, and one built for
    // another Node's ABI fails only there.
    openDatabase(':memory:', { driver: 'better-sqlite3', timeout: 0 }).close();
    drivers.push('better-sqlite3');
  } catch {
    // Not installed, or built for another Node's ABI.
  }
  return drivers;
}

/**
 * The driver a connection opens with: `wanted` if given, else `node:sqlite` where it serves,
 * else better-sqlite3. Nothing is loaded but `node:sqlite`'s probe.
 */
export function resolveDriver(wanted?: SqliteDriver | undefined): SqliteDriver {
  return wanted ?? (loadNodeSqlite() ? 'node:sqlite' : 'better-sqlite3');
}

/** Whether `driver` needs the better-sqlite3 package (for `oncely serve`'s check of what is installed). */
export const needsBetterSqlite3 = (driver?: SqliteDriver): boolean => resolveDriver(driver) === 'better-sqlite3';

/** What {@link openDatabase} takes. */
export interface OpenOptions {
  /** See {@link resolveDriver}. */
  readonly driver?: SqliteDriver | undefined;
  /** SQLite's own busy timeout, ms (oncely's connections use 0: see `busy.node.ts`). */
  readonly timeout: number;
  /** Open the file read-only (tools and tests that look at a journal without changing it). */
  readonly readOnly?: boolean;
}

/**
 * A better-sqlite3 connection as a {@link SqliteDatabase}: structurally it is one (the interface is
 * the subset of its API oncely calls), but its generic `prepare` does not unify with the interface's.
 *
 * @example
 * ```ts
 * const db = fromBetterSqlite3(new Database('bench.db'));
 * ```
 */
export const fromBetterSqlite3 = (db: BetterSqlite3.Database): SqliteDatabase => db as unknown as SqliteDatabase;

/**
 * Opens `path` on `options.driver` (see {@link resolveDriver}).
 *
 * @throws OncelyError (`CONFIG`) when better-sqlite3 is needed and missing (naming the command
 * that installs it) or `node:sqlite` was asked for on a Node without it
 *
 * @example
 * ```ts
 * const db = openDatabase('oncely.db', { timeout: 0 });
 * db.pragma('journal_mode = WAL');
 * ```
 */
export function openDatabase(path: string, options: OpenOptions): SqliteDatabase {
  const driver = resolveDriver(options.driver);
  if (driver === 'node:sqlite') {
    const module = loadNodeSqlite();
    if (!module) {
      throw new OncelyError(
        ErrorCode.Config,
        `node:sqlite is not available on Node ${process.version}: it needs Node 22.16 or later (24 or later without an ExperimentalWarning). Use driver 'better-sqlite3' on this Node`,
      );
    }
    // Its statements' rows are typed by the caller, as better-sqlite3's are.
    return new NodeSqliteDatabase(module, path, { timeout: options.timeout, readOnly: options.readOnly ?? false }) as unknown as SqliteDatabase;
  }
  const Driver = requirePeer<typeof BetterSqlite3>('better-sqlite3');
  return fromBetterSqlite3(new Driver(path, { timeout: options.timeout, readonly: options.readOnly ?? false }));
}
