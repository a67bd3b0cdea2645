/**
 * The middleware gives a key up when the route answers something not final (a 5xx, 429, …) or
 * throws: a retry runs the handler afresh. On a full disk that release fails too; the guard keeps
 * its promise once the disk has room again, instead of holding the retry for a lease with `409`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Hono } from 'hono';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { idempotent } from '../../../src/server/middleware/hono.js';
import { sqliteKeyStore } from '../../../src/server/sqlite.js';
import type { KeyStore } from '../../../src/server/store/types.js';
import { postgresDisk, sqliteDisk, type Disk } from '../../support/full-disk.js';
import { openPgBackend, type PgBackend } from '../../support/pg.js';

const dir = mkdtempSync(join(tmpdir(), 'oncely-mw-full-disk-'));
let backend: PgBackend;
beforeAll(async () => {
  backend = await openPgBackend('mw_full_disk');
});
afterAll(async () => {
  await backend?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** An order route whose first run fills the disk, then answers 503 itself; later runs answer 201. */
function orders(store: KeyStore, disk: Disk, how: 'answers 503' | 'throws') {
  const runs: number[] = [];
  const app = new Hono();
  app.post('/orders', idempotent({ store, clientId: () => 'acme' }), async (c) => {
    runs.push(runs.length + 1);
    if (runs.length > 1) return c.json({ run: runs.length }, 201);
    await disk.fill();
    if (how === 'throws') throw new Error('the database is full');
    return c.json({ error: 'try again' }, 503);
  });
  app.onError((_error, c) => c.json({ error: 'internal' }, 500));
  const post = () => app.request('/orders', { method: 'POST', headers: { 'content-type': 'application/json', 'idempotency-key': 'k-order' }, body: '{}' });
  return { post, runs };
}

describe.each([
  ['SQLite', async () => sqliteKeyStore({ path: join(dir, `keys-${Math.random()}.db`) }), (store: KeyStore) => sqliteDisk(store)],
  ['PostgreSQL', () => backend.store(), (store: KeyStore) => postgresDisk(backend, (store as KeyStore & { schema: string }).schema)],
] as const)('a key the middleware gave up on a full disk (%s)', (_name, open, diskOf) => {
  it.each(['answers 503', 'throws'] as const)('runs the handler again for a retry once the disk has room, when the route %s', async (how) => {
    const store = await open();
    await store.migrate?.();
    const disk = await diskOf(store);
    try {
      const { post, runs } = orders(store, disk, how);
      expect((await post()).status).toBe(how === 'throws' ? 500 : 503);
      await disk.free();
      const retry = await post();
      expect(retry.status).toBe(201);
      expect(runs).toEqual([1, 2]);
    } finally {
      await disk.free();
      await store.close?.();
    }
  });
});
