/**
 * The SQLite key store checkpoints its WAL from a worker thread, so no request's commit pays for
 * a checkpoint; with `checkpointIntervalMs: 0` SQLite's own automatic checkpoints stay in charge.
 */
import { copyFileSync, existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openRawDb } from '../../support/sqlite-db.js';
import { afterAll, describe, expect, it } from 'vitest';
import { sqliteKeyStore } from '../../../src/server/store/sqlite.node.js';
import { BACKSTOP_PAGES } from '../../../src/server/store/sqlite-checkpointer.node.js';
import type { KeyStore } from '../../../src/server/store/types.js';

const dir = mkdtempSync(join(tmpdir(), 'oncely-checkpoint-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;

async function admitMany(store: KeyStore, count: number): Promise<void> {
  await Promise.all(
    Array.from({ length: count }, (_, i) =>
      store.admit({ clientId: 'c', key: `k${i}`, requestHash: 'h', endpoint: 'POST /x', requestBody: '{}', leaseMs: 10_000, ttlMs: 60_000 }),
    ),
  );
}

/** Rows of the key table found in the database file alone, without its WAL: what checkpoints copied. */
function rowsInMainFile(path: string): number {
  const copy = `${path}.copy-${(n += 1)}`;
  copyFileSync(path, copy);
  const db = openRawDb(copy, { readonly: true });
  try {
    const table = db.prepare("SELECT 1 FROM sqlite_master WHERE name = 'oncely_keys'").get();
    return table ? (db.prepare('SELECT count(*) AS n FROM oncely_keys').get() as { n: number }).n : 0;
  } finally {
    db.close();
  }
}

const until = async (check: () => boolean, ms: number): Promise<boolean> => {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return check();
};

describe('sqliteKeyStore: background checkpoints', () => {
  it('copies committed rows into the database file from the worker, while the store connection only keeps a backstop', async () => {
    const path = join(dir, `bg-${(n += 1)}.db`);
    const store = sqliteKeyStore({ path, checkpointIntervalMs: 20 });
    await store.migrate();
    await admitMany(store, 50);
    // 50 small commits are far below any automatic checkpoint: only the worker copies them.
    expect(await until(() => rowsInMainFile(path) === 50, 5000)).toBe(true);
    await store.close();
    // The worker's connection closed too: the last connection to close removes the WAL.
    expect(existsSync(`${path}-wal`)).toBe(false);
  });

  it('leaves checkpoints to SQLite with checkpointIntervalMs: 0 (the same rows stay in the WAL)', async () => {
    const path = join(dir, `off-${(n += 1)}.db`);
    const store = sqliteKeyStore({ path, checkpointIntervalMs: 0 });
    await store.migrate();
    await admitMany(store, 50);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(rowsInMainFile(path)).toBe(0);
    await store.close();
    expect(rowsInMainFile(path)).toBe(50);
  });

  it('keeps the log from growing with what is written: 128 MB written, the log stays under half of it', async () => {
    const path = join(dir, `bound-${(n += 1)}.db`);
    const store = sqliteKeyStore({ path, checkpointIntervalMs: 20 });
    await store.migrate();
    let largest = 0;
    for (let batch = 0; batch < 160; batch += 1) {
      await Promise.all(
        Array.from({ length: 100 }, (_, i) =>
          store.admit({
            clientId: 'c',
            key: `b${batch}-${i}`,
            requestHash: 'h'.repeat(64),
            endpoint: 'POST /x',
            requestBody: 'x'.repeat(8000),
            leaseMs: 10_000,
            ttlMs: 60_000,
          }),
        ),
      );
      largest = Math.max(largest, statSync(`${path}-wal`).size);
    }
    // Without any checkpoint in the writer the log would hold all 128 MB (16 000 rows of 8 KB).
    // With one it peaks at the backstop plus what is written while a checkpoint holds the lock,
    // which depends on the write rate and the disk, not on how much is written.
    expect(largest).toBeGreaterThan(BACKSTOP_PAGES * 4096);
    expect(largest).toBeLessThan(64_000_000);
    await store.close();
    expect(rowsInMainFile(path)).toBe(16_000);
  });
});
