/**
 * The minimal reference store (`test/support/reference-store.ts`: each primitive one plain
 * transaction, written as docs/key-store.md tells a third party to) passes every KeyStore
 * contract suite the built-in stores pass.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import { runKeyStoreChainedContract } from '../../contract/keystore-chained.contract.js';
import { runKeyStoreValuesContract } from '../../contract/keystore-values.contract.js';
import { runKeyStoreContract } from '../../contract/keystore.contract.js';
import { runWholeRequestContract } from '../../contract/keystore-whole.contract.js';
import { referenceKeyStore } from '../../support/reference-store.js';

const dir = mkdtempSync(join(tmpdir(), 'oncely-reference-store-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;
const factory = async () => referenceKeyStore(join(dir, `store-${(n += 1)}.db`));

runKeyStoreContract('reference store (plain primitives)', factory);
runKeyStoreValuesContract('reference store (plain primitives)', factory);
runKeyStoreChainedContract('reference store (plain primitives)', factory);
runWholeRequestContract('reference store (plain primitives)', factory);
