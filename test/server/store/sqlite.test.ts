import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { sqliteKeyStore } from '../../../src/server/store/sqlite.node.js';
import { runKeyStoreContract } from '../../contract/keystore.contract.js';

const dir = mkdtempSync(join(tmpdir(), 'oncely-sqlite-contract-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

runKeyStoreContract('sqlite (in memory)', async () => sqliteKeyStore({ path: ':memory:' }));
let n = 0;
runKeyStoreContract('sqlite (file, WAL)', async () => sqliteKeyStore({ path: join(dir, `store-${(n += 1)}.db`) }));

describe('sqliteKeyStore response cap', () => {
  it('refuses to store a response body over maxResponseBytes and commits nothing', async () => {
    const store = sqliteKeyStore({ path: ':memory:', maxResponseBytes: 10 });
    await store.migrate();
    const admitted = await store.admit({ clientId: 'acme', key: 'k', requestHash: 'h', endpoint: 'POST /x', requestBody: '{}', leaseMs: 10_000, ttlMs: 60_000 });
    if (!admitted.owned) throw new Error('not owned');
    await expect(store.finish(admitted.lease, { status: 200, headers: {}, body: 'x'.repeat(11) })).rejects.toThrow(/maxResponseBytes/);
    expect((await store.load('acme', 'k'))?.state).toBe('started');
    expect((await store.finish(admitted.lease, { status: 200, headers: {}, body: 'x'.repeat(10) })).ok).toBe(true);
    await store.close();
  });
});
