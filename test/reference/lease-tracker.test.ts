/**
 * The reference server's lease tracker (`src/reference/lease-tracker.ts`): what it holds is what
 * shutdown gives back, so a lease is dropped only once the store has let go of it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { trackLeases } from '../../src/reference/lease-tracker.js';
import { sqliteKeyStore } from '../../src/server/sqlite.js';
import type { KeyStore, Lease } from '../../src/server/store/types.js';
import { sqliteDisk } from '../support/full-disk.js';

const dir = mkdtempSync(join(tmpdir(), 'oncely-lease-tracker-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const admission = { clientId: 'acme', key: 'k', requestHash: 'h', endpoint: 'POST /x', requestBody: '{}', leaseMs: 30_000, ttlMs: 60_000 };

describe('trackLeases', () => {
  it.each([
    ['release', (store: KeyStore, lease: Lease) => store.write(lease, { kind: 'release', forget: true }).then((done) => done.ok)],
    ['park', (store: KeyStore, lease: Lease) => store.write(lease, { kind: 'park', retryAfterMs: 1000 }).then((done) => done.ok)],
    [
      'finish',
      (store: KeyStore, lease: Lease) => store.write(lease, { kind: 'finish', response: { status: 201, headers: {}, body: '{}' } }).then((done) => done.ok),
    ],
  ] as const)('keeps a lease whose %s the store refused (a full disk), so that shutdown gives it back', async (name, letGo) => {
    const store = sqliteKeyStore({ path: join(dir, `${name}.db`) });
    try {
      await store.migrate();
      const disk = await sqliteDisk(store);
      const tracker = trackLeases(store);
      const admitted = await tracker.store.admit(admission);
      if (!admitted.owned) throw new Error('not owned');
      await disk.fill();
      await expect(letGo(tracker.store, admitted.lease)).rejects.toThrow();
      expect(tracker.held()).toEqual([admitted.lease]);
      await disk.free();
      expect(await letGo(tracker.store, admitted.lease)).toBe(true);
      expect(tracker.held()).toEqual([]);
    } finally {
      await store.close();
    }
  });
});
