/**
 * A SQLite file whose write lock another process holds: the key store waits for it without
 * blocking the event loop (a timer keeps firing), then commits, or gives up after
 * `busyTimeoutMs` with an error that says so.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { sqliteKeyStore } from '../../../src/server/store/sqlite.node.js';
import { holdWriteLock, watchEventLoop } from '../../support/sqlite-lock.js';

const dir = mkdtempSync(join(tmpdir(), 'oncely-sqlite-busy-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;
const admission = (key: string) => ({ clientId: 'acme', key, requestHash: 'h', endpoint: 'POST /x', requestBody: '{}', leaseMs: 10_000, ttlMs: 60_000 });

describe('sqliteKeyStore on a file another process holds locked', () => {
  it('keeps the event loop turning while writes wait for the lock, and commits them once it is released', { timeout: 20_000 }, async () => {
    const path = join(dir, `wait-${(n += 1)}.db`);
    const store = sqliteKeyStore({ path, busyTimeoutMs: 10_000 });
    await store.migrate();
    const holder = await holdWriteLock(path, 1500);
    const loop = watchEventLoop();
    const started = performance.now();
    const admitted = await Promise.all([store.admit(admission('k1')), store.admit(admission('k2'))]);
    const waited = performance.now() - started;
    const longestTurn = loop.stop();
    await holder.released;
    expect(admitted.map((a) => a.owned)).toEqual([true, true]);
    expect(waited).toBeGreaterThan(1000);
    expect(longestTurn).toBeLessThan(50);
    expect((await store.load('acme', 'k1'))?.state).toBe('started');
    await store.close();
  });

  it('reads while another process holds the write lock', { timeout: 20_000 }, async () => {
    const path = join(dir, `read-${(n += 1)}.db`);
    const store = sqliteKeyStore({ path, busyTimeoutMs: 10_000 });
    await store.migrate();
    await store.admit(admission('k1'));
    const holder = await holdWriteLock(path, 1500);
    const started = performance.now();
    expect((await store.load('acme', 'k1'))?.state).toBe('started');
    expect(performance.now() - started).toBeLessThan(500);
    await holder.released;
    await store.close();
  });

  it(
    'fails a write with an error naming the file and busyTimeoutMs once the lock outlasts it, commits nothing, and works after',
    { timeout: 20_000 },
    async () => {
      const path = join(dir, `timeout-${(n += 1)}.db`);
      const store = sqliteKeyStore({ path, busyTimeoutMs: 300 });
      await store.migrate();
      const holder = await holdWriteLock(path, 1500);
      const loop = watchEventLoop();
      const started = performance.now();
      const failure = await store.admit(admission('k1')).then(
        () => undefined,
        (error: unknown) => error,
      );
      const waited = performance.now() - started;
      const longestTurn = loop.stop();
      expect(failure).toBeInstanceOf(Error);
      expect((failure as Error).message).toMatch(/locked by another connection for over 300 ms/);
      expect((failure as Error).message).toContain(path);
      expect(waited).toBeGreaterThanOrEqual(290);
      expect(waited).toBeLessThan(1200);
      expect(longestTurn).toBeLessThan(50);
      await holder.released;
      expect(await store.load('acme', 'k1')).toBeUndefined();
      expect((await store.admit(admission('k1'))).owned).toBe(true);
      await store.close();
    },
  );
});
