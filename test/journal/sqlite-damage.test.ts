import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openRawDb } from '../support/sqlite-db.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { JournalError } from '../../src/errors.js';
import { sqliteJournal } from '../../src/journal/sqlite.node.js';
import { operation } from '../contract/journal.contract.js';

let dir: string;
let path: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'oncely-damage-'));
  path = join(dir, 'journal.db');
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const rejection = async (promise: Promise<unknown>): Promise<JournalError> => {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(JournalError);
  expect((error as JournalError).name).toBe('JournalError');
  expect((error as JournalError).path).toBe(path);
  expect((error as JournalError).message).toContain(path);
  return error as JournalError;
};

describe('SQLite journal on a damaged, foreign or locked file', () => {
  it('reports a file that is not a database as damaged, every time, without rewriting it', async () => {
    writeFileSync(path, `not a database\n${'x'.repeat(4000)}`);
    const bytes = readFileSync(path);
    const journal = sqliteJournal({ path });
    const first = await rejection(journal.put(operation()));
    expect(first.message).toMatch(/damaged/);
    expect(first.hint).toMatch(/move it aside/);
    expect(first.hint).toMatch(/never resets or deletes/);
    const second = await rejection(journal.list());
    expect(second.message).toMatch(/damaged/);
    expect(readFileSync(path).equals(bytes)).toBe(true);
    expect(existsSync(`${path}-wal`)).toBe(false);
  });

  it('reports a journal whose pages were overwritten as damaged and leaves the bytes as they were', async () => {
    const journal = sqliteJournal({ path });
    await journal.putMany(Array.from({ length: 400 }, () => operation()));
    await journal.close();
    const size = statSync(path).size;
    expect(size).toBeGreaterThan(8 * 4096);
    const damaged = readFileSync(path);
    damaged.fill(0xa5, 3 * 4096, 6 * 4096);
    writeFileSync(path, damaged);

    const reopened = sqliteJournal({ path });
    const error = await rejection(reopened.list());
    expect(error.message).toMatch(/damaged/);
    expect(readFileSync(path).equals(damaged)).toBe(true);
  });

  it('refuses a SQLite database of another application and never writes to it', async () => {
    const foreign = openRawDb(path);
    foreign.exec("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO users (name) VALUES ('ada')");
    foreign.close();
    const bytes = readFileSync(path);
    const journal = sqliteJournal({ path });
    const error = await rejection(journal.put(operation()));
    expect(error.message).toMatch(/not an oncely journal/);
    expect(error.message).toMatch(/users/);
    expect(error.hint).toMatch(/file of its own/);
    expect(readFileSync(path).equals(bytes)).toBe(true);
    const check = openRawDb(path, { readonly: true });
    expect(check.prepare("SELECT count(*) AS n FROM sqlite_schema WHERE name LIKE 'oncely%'").get()).toEqual({ n: 0 });
    check.close();
  });

  it('reports a lock held past busyTimeoutMs, then works once the lock is gone', async () => {
    const journal = sqliteJournal({ path, busyTimeoutMs: 100 });
    const op = operation();
    await journal.put(op);
    const other = openRawDb(path);
    other.exec('BEGIN IMMEDIATE');
    try {
      const error = await rejection(journal.update(op.scope, op.key, { attempts: 1 }));
      expect(error.message).toMatch(/locked/);
      expect(error.hint).toMatch(/busyTimeoutMs/);
      const late = sqliteJournal({ path, busyTimeoutMs: 100 });
      const atOpen = await rejection(late.list());
      expect(atOpen.message).toMatch(/locked/);
      other.exec('COMMIT');
      expect(await late.list()).toHaveLength(1);
      await late.close();
    } finally {
      if (other.inTransaction) other.exec('ROLLBACK');
      other.close();
    }
    expect((await journal.update(op.scope, op.key, { attempts: 1 }))?.attempts).toBe(1);
    await journal.close();
  });

  it("waits for another connection's lock without blocking the event loop, and succeeds once it is released", async () => {
    const journal = sqliteJournal({ path, busyTimeoutMs: 10_000 });
    const op = operation();
    await journal.put(op);
    const other = openRawDb(path);
    other.exec('BEGIN IMMEDIATE');
    // Only a running event loop can fire these timers: a blocking lock wait would starve them,
    // the lock would never be released, and the update would time out instead.
    let ticks = 0;
    const ticker = setInterval(() => (ticks += 1), 10);
    setTimeout(() => {
      other.exec('COMMIT');
      other.close();
    }, 300);
    try {
      const updated = await journal.update(op.scope, op.key, { attempts: 3 });
      expect(updated?.attempts).toBe(3);
      expect(ticks).toBeGreaterThanOrEqual(5);
    } finally {
      clearInterval(ticker);
      if (other.open) other.close();
      await journal.close();
    }
  });

  it('reports a path it cannot create as a JournalError naming the path', async () => {
    writeFileSync(join(dir, 'a-file'), 'x');
    path = join(dir, 'a-file', 'journal.db');
    const error = await rejection(sqliteJournal({ path }).list());
    expect(error.hint).toMatch(/directory/);
  });
});
