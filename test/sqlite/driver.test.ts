import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { availableDrivers, openDatabase, resolveDriver, type SqliteDatabase, type SqliteDriver } from '../../src/sqlite/driver.node.js';

const ROOT = resolve(import.meta.dirname, '../..');
const [major = 0, minor = 0] = process.versions.node.split('.').map(Number);
/** Node 22.16 brought what oncely needs of node:sqlite (its transaction state); Node 20 has none. */
const hasNodeSqlite = major > 22 || (major === 22 && minor >= 16);
/** The driver oncely must run on in this Node, and any more a run asks for (CI: `ONCELY_SQLITE_DRIVERS`). */
const expected = [hasNodeSqlite ? 'node:sqlite' : 'better-sqlite3', ...(process.env['ONCELY_SQLITE_DRIVERS'] ?? '').split(',').filter(Boolean)];

let dir: string;
const opened: SqliteDatabase[] = [];
const open = (driver: SqliteDriver, path = join(dir, 'test.db')): SqliteDatabase => {
  const db = openDatabase(path, { driver, timeout: 0 });
  opened.push(db);
  return db;
};
afterEach(() => {
  for (const db of opened.splice(0)) db.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});
const freshDir = (): string => (dir = mkdtempSync(join(tmpdir(), 'oncely-driver-')));

describe('the SQLite driver of this Node', () => {
  it(`offers the drivers this run covers (${expected.join(', ')}): the contract suites run on each driver offered`, () => {
    expect(availableDrivers()).toEqual(expect.arrayContaining(expected));
  });

  it('picks node:sqlite where Node has it, better-sqlite3 where it does not', () => {
    expect(resolveDriver()).toBe(hasNodeSqlite ? 'node:sqlite' : 'better-sqlite3');
    expect(resolveDriver('better-sqlite3')).toBe('better-sqlite3');
  });

  it('opens node:sqlite when asked for where Node has it, and otherwise refuses naming the Node it needs', () => {
    freshDir();
    if (hasNodeSqlite) expect(open('node:sqlite').prepare<[], { one: number }>('SELECT 1 AS one').get()).toEqual({ one: 1 });
    else expect(() => open('node:sqlite')).toThrow(/node:sqlite is not available on Node v20\.[\d.]+: it needs Node 22\.16 or later/);
  });

  it('prints no ExperimentalWarning for node:sqlite, in the journal or the key store and its checkpoint worker, and lets other warnings through', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'test/sqlite/warnings.child.ts', freshDir()], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise<number | null>((done) => child.on('exit', done));
    expect({ code, driver: stdout.trim() }).toEqual({ code: 0, driver: resolveDriver() });
    expect(stderr).toContain('ExperimentalWarning: the application warns');
    expect(stderr).not.toContain('SQLite is an experimental feature');
  });
});

// The same answers from both drivers: better-sqlite3's behaviour is what the journal and the store were written against.
describe.each(availableDrivers())('the %s connection', (driver) => {
  it('reports a file locked by another connection as SQLITE_BUSY, at once', () => {
    freshDir();
    const holder = open(driver);
    const other = open(driver);
    holder.exec('PRAGMA journal_mode = WAL; CREATE TABLE t (x INTEGER)');
    holder.exec('BEGIN IMMEDIATE');
    const started = Date.now();
    expect(() => other.exec('BEGIN IMMEDIATE')).toThrow(expect.objectContaining({ code: 'SQLITE_BUSY' }));
    expect(Date.now() - started).toBeLessThan(1000);
    expect({ holder: holder.inTransaction, other: other.inTransaction }).toEqual({ holder: true, other: false });
    holder.exec('COMMIT');
    expect(holder.inTransaction).toBe(false);
  });

  it('reports a file that is not a database as SQLITE_NOTADB', () => {
    const path = join(freshDir(), 'junk.db');
    writeFileSync(path, 'not a database '.repeat(400));
    expect(() => open(driver, path).pragma('quick_check')).toThrow(expect.objectContaining({ code: 'SQLITE_NOTADB' }));
  });

  it('answers rows as plain objects, BLOBs as Buffers, no row as undefined, and changes as a number', () => {
    const db = open(driver, ':memory:');
    db.exec('CREATE TABLE t (k TEXT PRIMARY KEY, n INTEGER, b BLOB)');
    const insert = db.prepare<[Record<string, unknown>]>('INSERT INTO t (k, n, b) VALUES (@k, @n, @b) ON CONFLICT (k) DO NOTHING');
    // A named parameter the statement does not use is ignored, as better-sqlite3 does.
    expect(insert.run({ k: 'a', n: 7, b: Buffer.from('hi'), unused: 1 }).changes).toBe(1);
    expect(insert.run({ k: 'a', n: 8, b: null }).changes).toBe(0);
    const row = db.prepare<[string], { k: string; n: number; b: Buffer }>('SELECT k, n, b FROM t WHERE k = ?').get('a');
    expect(Object.getPrototypeOf(row)).toBe(Object.prototype);
    expect(Buffer.isBuffer(row?.b)).toBe(true);
    expect({ ...row, b: row?.b.toString() }).toEqual({ k: 'a', n: 7, b: 'hi' });
    expect(db.prepare('SELECT k FROM t WHERE k = ?').get('none')).toBeUndefined();
    expect([...db.prepare<[], { k: string }>('SELECT k FROM t').iterate()]).toEqual([{ k: 'a' }]);
    expect(db.memory).toBe(true);
  });

  it('reads pragmas as better-sqlite3 does, runs user functions, and closes twice without error', () => {
    const db = open(driver, join(freshDir(), 'p.db'));
    expect(db.pragma('journal_mode = WAL', { simple: true })).toBe('wal');
    expect(db.pragma('user_version = 3')).toEqual([]);
    expect(db.pragma('user_version', { simple: true })).toBe(3);
    expect(db.pragma('user_version')).toEqual([{ user_version: 3 }]);
    db.function('twice', { deterministic: true }, (text: string) => `${text}${text}`);
    expect(db.prepare<[], { v: string }>("SELECT twice('ab') AS v").get()).toEqual({ v: 'abab' });
    expect(db.memory).toBe(false);
    db.close();
    expect(db.open).toBe(false);
    expect(() => db.close()).not.toThrow();
  });
});
