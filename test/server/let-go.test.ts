/**
 * The let-go a front end retries when the store could not record it (`src/server/let-go.ts`): fenced
 * (never frees a key another owner holds now) and bounded (a store that never recovers costs a
 * fixed number of remembered keys, each for one lease).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { MAX_PENDING, createLetGo } from '../../src/server/let-go.js';
import { sqliteKeyStore } from '../../src/server/sqlite.js';
import type { KeyStore, Lease } from '../../src/server/store/types.js';
import { sqliteDisk } from '../support/full-disk.js';

const dir = mkdtempSync(join(tmpdir(), 'oncely-let-go-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const admission = { clientId: 'acme', key: 'k', requestHash: 'h', endpoint: 'POST /x', requestBody: '{}', leaseMs: 30_000, ttlMs: 60_000 };

describe('createLetGo', () => {
  it('frees nothing that another owner took over meanwhile: the retried release is fenced by the abandoned token', async () => {
    const path = join(dir, 'fenced.db');
    const mine = sqliteKeyStore({ path });
    // Another instance on the same file, whose clock is past the abandoned lease.
    const theirs = sqliteKeyStore({ path, now: () => Date.now() + admission.leaseMs + 1 });
    try {
      await mine.migrate();
      const disk = await sqliteDisk(mine);
      const first = await mine.admit(admission);
      if (!first.owned) throw new Error('not owned');
      const letGo = createLetGo({ store: mine, leaseMs: admission.leaseMs });
      await disk.fill();
      await letGo.release(first.lease, { forget: true });
      await expect(letGo.before('acme', 'k')).rejects.toThrow();
      const next = await theirs.takeOver('acme', 'k', admission.leaseMs);
      expect(next).not.toBeNull();
      await disk.free();
      await letGo.before('acme', 'k');
      // The release under the old token changed nothing: the row is the new owner's, who finishes it.
      expect((await theirs.load('acme', 'k'))?.leaseRemainingMs).toBeGreaterThan(0);
      expect((await theirs.write(next!, { kind: 'finish', response: { status: 201, headers: {}, body: 'ok' } })).ok).toBe(true);
      // Forgotten once tried (here or in the background): nothing is retried for the key any more.
      expect(letGo.before('acme', 'k')).toBeUndefined();
    } finally {
      await Promise.all([mine.close(), theirs.close()]);
    }
  });

  it(`remembers at most ${MAX_PENDING} keys, each only until its lease would have run out, when the store never recovers`, async () => {
    let releases = 0;
    const broken = (): Pick<KeyStore, 'write' | 'load'> => ({
      write: (_lease, change) => ((releases += change.kind === 'release' ? 1 : 0), Promise.reject(new Error('disk full'))),
      load: () => Promise.reject(new Error('disk full')),
    });
    const lease = (key: string): Lease => ({ clientId: 'acme', key, token: `t-${key}` });
    const letGo = createLetGo({ store: broken(), leaseMs: 60_000 });
    for (let i = 0; i <= MAX_PENDING; i += 1) await letGo.release(lease(`k${i}`), { forget: true });
    await expect(letGo.before('acme', 'k0')).rejects.toThrow('disk full');
    await expect(letGo.before('acme', `k${MAX_PENDING - 1}`)).rejects.toThrow('disk full');
    expect(letGo.before('acme', `k${MAX_PENDING}`)).toBeUndefined();

    const brief = createLetGo({ store: broken(), leaseMs: 1 });
    await brief.release(lease('k-brief'), { forget: false });
    await new Promise((resolve) => setTimeout(resolve, 5));
    const before = releases;
    expect(brief.before('acme', 'k-brief')).toBeUndefined();
    expect(releases).toBe(before);
  });
});
