/**
 * A SQLite connection of a test's own, on the driver oncely itself picks in this runtime
 * (`node:sqlite` on Node 22.16+, better-sqlite3 on Node 20): a test that opens the journal's or the
 * store's file behind their back runs on every Node the suites run on. The options are
 * better-sqlite3's constructor options that the tests use.
 */
import { existsSync } from 'node:fs';
import { openDatabase, type SqliteDatabase } from '../../src/sqlite/driver.node.js';

export type { SqliteDatabase } from '../../src/sqlite/driver.node.js';

/** Opens `path` as `new Database(path, options)` of better-sqlite3 would (busy timeout 5 s unless given). */
export function openRawDb(
  path: string,
  options: { readonly readonly?: boolean; readonly fileMustExist?: boolean; readonly timeout?: number } = {},
): SqliteDatabase {
  if (options.fileMustExist && !existsSync(path)) throw Object.assign(new Error(`unable to open database file: ${path}`), { code: 'SQLITE_CANTOPEN' });
  return openDatabase(path, { timeout: options.timeout ?? 5000, readOnly: options.readonly ?? false });
}
