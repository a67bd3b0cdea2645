/**
 * A journal file whose write lock another process holds: the journal waits for it without
 * blocking the event loop (a timer keeps firing), then commits, or gives up after
 * `busyTimeoutMs` with a `JournalError` that says so.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { JournalError } from '../../src/errors.js';
import { sqliteJournal } from '../../src/journal/sqlite.node.js';
import { operation } from '../contract/journal.contract.js';
import { holdWriteLock, watchEventLoop } from '../support/sqlite-lock.js';

let dir: string;
let path: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'oncely-journal-busy-'));
  path = join(dir, 'journal.db');
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('SQLite journal on a file another process holds locked', () => {
  it('keeps the event loop turning while calls wait for the lock, and commits them once it is released', { timeout: 20_000 }, async () => {
    const journal = sqliteJournal({ path, busyTimeoutMs: 10_000 });
    await journal.list();
    const holder = await holdWriteLock(path, 1500);
    const loop = watchEventLoop();
    const started = performance.now();
    const ops = [operation(), operation()];
    const [put, putMany] = await Promise.all([journal.put(ops[0]!), journal.putMany([ops[1]!])]);
    const waited = performance.now() - started;
    const longestTurn = loop.stop();
    await holder.released;
    expect([put.created, putMany[0]?.created]).toEqual([true, true]);
    expect(waited).toBeGreaterThan(1000);
    expect(longestTurn).toBeLessThan(50);
    expect(await journal.list()).toHaveLength(2);
    await journal.close();
  });

  it('fails a call with a JournalError once the lock outlasts busyTimeoutMs, commits nothing, and works after', { timeout: 20_000 }, async () => {
    const journal = sqliteJournal({ path, busyTimeoutMs: 300 });
    await journal.list();
    const holder = await holdWriteLock(path, 1500);
    const loop = watchEventLoop();
    const started = performance.now();
    const op = operation();
    const failure = await journal.put(op).then(
      () => undefined,
      (error: unknown) => error,
    );
    const waited = performance.now() - started;
    const longestTurn = loop.stop();
    expect(failure).toBeInstanceOf(JournalError);
    expect((failure as JournalError).message).toMatch(/locked by another connection for over 300 ms/);
    expect(waited).toBeGreaterThanOrEqual(290);
    expect(waited).toBeLessThan(1200);
    expect(longestTurn).toBeLessThan(50);
    await holder.released;
    expect(await journal.get(op.scope, op.key)).toBeUndefined();
    expect((await journal.put(op)).created).toBe(true);
    await journal.close();
  });
});
