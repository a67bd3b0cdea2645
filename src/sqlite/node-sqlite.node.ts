/**
 * Node's built-in `node:sqlite` behind the same small surface as better-sqlite3 (see
 * `driver.node.ts`), so that the journal and the key store run on either without knowing which.
 *
 * Where the two differ, this side is made to behave as better-sqlite3 does:
 *
 * | better-sqlite3                          | node:sqlite                                   | here                                   |
 * | --------------------------------------- | --------------------------------------------- | -------------------------------------- |
 * | errors: `code` `'SQLITE_BUSY'`, …       | `code` `'ERR_SQLITE_ERROR'`, `errcode` 5      | `code` set to the SQLite name          |
 * | rows: plain objects, BLOBs as `Buffer`s | null-prototype objects, `Uint8Array`s         | plain objects, `Buffer`s               |
 * | unknown named parameters ignored        | rejected                                      | ignored                                |
 * | `db.pragma(…)`, `db.inTransaction`, `db.open`, `db.memory` | none, `isTransaction`, `isOpen`, none | all four         |
 * | `close()` twice: the second does nothing | the second throws                            | does nothing                           |
 *
 * Loading `node:sqlite` prints an `ExperimentalWarning` on Node 22.13+ and 24.0–24.14 (none on
 * 24.15+, where it is a release candidate). oncely, not the user, chose that module, so that one
 * warning is left out while oncely loads it ({@link loadNodeSqlite}); any other warning passes.
 *
 * @module
 * @internal
 */

/** What oncely uses of a `node:sqlite` statement (`StatementSync`). */
interface StatementSync {
  run(...params: unknown[]): { changes: number | bigint };
  get(...params: unknown[]): Record<string, unknown> | undefined;
  all(...params: unknown[]): Array<Record<string, unknown>>;
  iterate(...params: unknown[]): IterableIterator<Record<string, unknown>>;
  setAllowUnknownNamedParameters(enabled: boolean): void;
}

/** What oncely uses of a `node:sqlite` connection (`DatabaseSync`). */
interface DatabaseSync {
  prepare(sql: string): StatementSync;
  exec(sql: string): void;
  function(name: string, options: { deterministic?: boolean }, fn: (...args: never[]) => unknown): void;
  close(): void;
  readonly isOpen: boolean;
  readonly isTransaction: boolean;
}

/** The part of the `node:sqlite` module oncely uses. */
export interface NodeSqlite {
  readonly DatabaseSync: new (path: string, options?: { readonly timeout?: number; readonly readOnly?: boolean }) => DatabaseSync;
}

/** SQLite's primary result codes, by number, as better-sqlite3 names them in `code`. */
const CODES = [
  'OK',
  'ERROR',
  'INTERNAL',
  'PERM',
  'ABORT',
  'BUSY',
  'LOCKED',
  'NOMEM',
  'READONLY',
  'INTERRUPT',
  'IOERR',
  'CORRUPT',
  'NOTFOUND',
  'FULL',
  'CANTOPEN',
  'PROTOCOL',
  'EMPTY',
  'SCHEMA',
  'TOOBIG',
  'CONSTRAINT',
  'MISMATCH',
  'MISUSE',
  'NOLFS',
  'AUTH',
  'FORMAT',
  'RANGE',
  'NOTADB',
] as const;

/** The warning Node prints when `node:sqlite` is first loaded in a thread. */
const isSqliteExperimentalWarning = (warning: unknown, type: unknown): boolean =>
  (type === 'ExperimentalWarning' || (warning instanceof Error && warning.name === 'ExperimentalWarning')) && String(warning).includes('SQLite');

let loaded: { readonly module: NodeSqlite | undefined } | undefined;

/**
 * `node:sqlite`, or `undefined` where it cannot serve: absent (Node 20), behind
 * `--experimental-sqlite` (Node 22.5–22.12), or without the transaction state oncely checks
 * after every statement (`isTransaction`, Node 22.16 and 24.0 on). Loaded once.
 */
export function loadNodeSqlite(): NodeSqlite | undefined {
  if (loaded) return loaded.module;
  const emitWarning = process.emitWarning;
  let module: NodeSqlite | undefined;
  process.emitWarning = function (this: unknown, warning: string | Error, ...rest: unknown[]) {
    const type = typeof rest[0] === 'object' && rest[0] !== null ? (rest[0] as { type?: unknown }).type : rest[0];
    if (isSqliteExperimentalWarning(warning, type)) return;
    (emitWarning as (...args: unknown[]) => void).call(process, warning, ...rest);
  } as typeof process.emitWarning;
  try {
    module = process.getBuiltinModule?.('node:sqlite') as NodeSqlite | undefined;
  } finally {
    process.emitWarning = emitWarning;
  }
  if (module) {
    const probe = new module.DatabaseSync(':memory:');
    if (typeof probe.isTransaction !== 'boolean') module = undefined;
    probe.close();
  }
  loaded = { module };
  return module;
}

/** `error` with its `code` set to SQLite's name for its `errcode` (`SQLITE_BUSY`), as better-sqlite3's errors carry. */
function withSqliteCode(error: unknown): unknown {
  const errcode = (error as { errcode?: unknown } | null)?.errcode;
  if (typeof errcode !== 'number') return error;
  const name = CODES[errcode & 0xff];
  if (name !== undefined) Object.assign(error as object, { code: `SQLITE_${name}` });
  return error;
}

/** A row as better-sqlite3 returns it: a plain object, BLOBs as `Buffer`s. */
function plain(row: Record<string, unknown>): Record<string, unknown> {
  const copy: Record<string, unknown> = {};
  for (const name in row) {
    const value = row[name];
    copy[name] = value instanceof Uint8Array && !Buffer.isBuffer(value) ? Buffer.from(value.buffer, value.byteOffset, value.byteLength) : value;
  }
  return copy;
}

/** A `node:sqlite` statement with better-sqlite3's errors, rows and leniency. */
class Statement {
  constructor(private readonly statement: StatementSync) {
    statement.setAllowUnknownNamedParameters(true);
  }

  run(...params: unknown[]): { changes: number } {
    try {
      return { changes: Number(this.statement.run(...params).changes) };
    } catch (error) {
      throw withSqliteCode(error);
    }
  }

  get(...params: unknown[]): unknown {
    try {
      const row = this.statement.get(...params);
      return row === undefined ? undefined : plain(row);
    } catch (error) {
      throw withSqliteCode(error);
    }
  }

  all(...params: unknown[]): unknown[] {
    try {
      return this.statement.all(...params).map(plain);
    } catch (error) {
      throw withSqliteCode(error);
    }
  }

  *iterate(...params: unknown[]): IterableIterator<unknown> {
    try {
      for (const row of this.statement.iterate(...params)) yield plain(row);
    } catch (error) {
      throw withSqliteCode(error);
    }
  }
}

/** A `node:sqlite` connection with the better-sqlite3 members oncely uses. */
export class NodeSqliteDatabase {
  readonly memory: boolean;
  private readonly db: DatabaseSync;

  constructor(module: NodeSqlite, path: string, options: { readonly timeout: number; readonly readOnly: boolean }) {
    this.memory = path === ':memory:' || path === '';
    try {
      this.db = new module.DatabaseSync(path, options);
    } catch (error) {
      throw withSqliteCode(error);
    }
  }

  get open(): boolean {
    return this.db.isOpen;
  }

  get inTransaction(): boolean {
    return this.db.isOpen && this.db.isTransaction;
  }

  prepare(sql: string): Statement {
    try {
      return new Statement(this.db.prepare(sql));
    } catch (error) {
      throw withSqliteCode(error);
    }
  }

  exec(sql: string): void {
    try {
      this.db.exec(sql);
    } catch (error) {
      throw withSqliteCode(error);
    }
  }

  /** better-sqlite3's `pragma`: every row, or with `simple` the first column of the first row. */
  pragma(source: string, options: { readonly simple?: boolean } = {}): unknown {
    const rows = this.prepare(`PRAGMA ${source}`).all() as Array<Record<string, unknown>>;
    if (!options.simple) return rows;
    const first = rows[0];
    return first === undefined ? undefined : Object.values(first)[0];
  }

  function(name: string, options: { readonly deterministic?: boolean }, fn: (...args: never[]) => unknown): void {
    this.db.function(name, { ...options }, fn);
  }

  close(): void {
    if (this.db.isOpen) this.db.close();
  }
}
