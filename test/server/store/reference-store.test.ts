/**
 * The minimal reference store (`test/support/reference-store.ts`: each primitive one plain
 * transaction, written as docs/key-store.md tells a third party to, on `oncely/server/store`
 * alone) passes every KeyStore contract suite the built-in stores pass, run from
 * `oncely/server/testing`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import { describeKeyStore } from '../../../src/server/testing.js';
import { referenceKeyStore } from '../../support/reference-store.js';

const dir = mkdtempSync(join(tmpdir(), 'oncely-reference-store-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;
const factory = async () => referenceKeyStore(join(dir, `store-${(n += 1)}.db`));

// Every shipped suite, as a store author runs them; its whole requests go through the core's
// `beginRequest` (the reference store has none).
describeKeyStore('reference store (plain primitives)', factory);
