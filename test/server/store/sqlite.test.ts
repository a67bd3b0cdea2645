import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import { sqliteKeyStore } from '../../../src/server/store/sqlite.node.js';
import { runKeyStoreContract } from '../../contract/keystore.contract.js';

const dir = mkdtempSync(join(tmpdir(), 'oncely-sqlite-contract-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

runKeyStoreContract('sqlite (in memory)', async () => sqliteKeyStore({ path: ':memory:' }));
let n = 0;
runKeyStoreContract('sqlite (file, WAL)', async () => sqliteKeyStore({ path: join(dir, `store-${(n += 1)}.db`) }));
