/**
 * A `503` promises that the key is free again (PROTOCOL.md's response matrix). When the store is
 * what failed — a full disk — the release that keeps that promise fails too; the instance that
 * answered keeps it once the disk has room again: a retry is run, not held for a lease with `409`.
 *
 * Each test holds a payment inside its first external call, fills the disk, lets the call
 * return: the next phase's commit fails, and so does the release after it (see
 * `../support/full-disk.ts` for how the disk fills).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createRecoveryWorker } from '../../src/server/index.js';
import { sqliteKeyStore } from '../../src/server/sqlite.js';
import type { KeyStore } from '../../src/server/store.js';
import { droppingConnections } from '../support/dropped-connection.js';
import { postgresDisk, sqliteDisk, type Disk } from '../support/full-disk.js';
import { openPgBackend, type PgBackend } from '../support/pg.js';
import { createTestApp, type TestApp } from './fixtures.js';

const dir = mkdtempSync(join(tmpdir(), 'oncely-full-disk-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;
const file = (): string => join(dir, `keys-${(n += 1)}.db`);

let opened: KeyStore[] = [];
afterEach(async () => {
  await Promise.all(opened.map((store) => store.close?.()));
  opened = [];
});
const sqlite = (path: string): KeyStore => {
  const store = sqliteKeyStore({ path });
  opened.push(store);
  return store;
};

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Starts `work`, fills the disk while it is inside the risk check's `n`th call, and resolves to what `work` gives. */
async function fillDuringRiskCall<T>(app: TestApp, disk: Disk, n: number, work: () => Promise<T>): Promise<T> {
  let answer!: () => void;
  app.risk.gate = new Promise((resolve) => (answer = resolve));
  const result = work();
  while (app.risk.calls < n) await sleep(5);
  await disk.fill();
  app.risk.gate = undefined;
  answer();
  return result;
}

/** Posts a payment and fills the disk while its risk check runs: its answer. */
const failOnFullDisk = (app: TestApp, disk: Disk, key: string): Promise<Response> => fillDuringRiskCall(app, disk, 1, () => app.post({ amount: 10 }, { key }));

describe('a 503 answered on a full disk (SQLite)', () => {
  it('runs the retry sent once the disk has room again, though the release after the 503 failed', async () => {
    const app = await createTestApp({ store: sqlite(file()) });
    const disk = await sqliteDisk(app.store);
    expect((await failOnFullDisk(app, disk, 'k-full')).status).toBe(503);
    await disk.free();
    const retry = await app.post({ amount: 10 }, { key: 'k-full' });
    expect(retry.status).toBe(201);
    expect(await app.count('ledger')).toBe(1);
    expect([app.risk.applied.size, app.rail.applied.size]).toEqual([1, 1]);
  });

  it('answers 503 again, not 409, to a retry while the disk is still full, and runs the one after it has room', async () => {
    const app = await createTestApp({ store: sqlite(file()) });
    const disk = await sqliteDisk(app.store);
    expect((await failOnFullDisk(app, disk, 'k-still-full')).status).toBe(503);
    const early = await app.post({ amount: 10 }, { key: 'k-still-full' });
    expect(early.status).toBe(503);
    expect(early.headers.get('retry-after')).not.toBeNull();
    await disk.free();
    expect((await app.post({ amount: 10 }, { key: 'k-still-full' })).status).toBe(201);
    expect(await app.count('ledger')).toBe(1);
  });

  it("frees the key for another instance's retry once the disk has room again, with no request to the instance that answered 503", async () => {
    const path = file();
    const a = await createTestApp({ store: sqlite(path) });
    // Waits long enough for the key to be freed, far less than the lease it would wait out otherwise.
    const b = await createTestApp({ store: sqlite(path), inFlightWaitMs: 20_000 });
    const disk = await sqliteDisk(a.store);
    expect((await failOnFullDisk(a, disk, 'k-elsewhere')).status).toBe(503);
    await disk.free();
    const retry = await b.post({ amount: 10 }, { key: 'k-elsewhere' });
    expect(retry.status).toBe(201);
    expect(await b.count('ledger')).toBe(1);
    // B resumed the payment A left at EXT1_SENT: the charge was made once, by B.
    expect([a.rail.calls, b.rail.applied.size]).toEqual([0, 1]);
  });
});

describe('a 503 answered after a takeover whose reload failed', () => {
  it('frees the key it had just taken over: the next retry takes it over again and runs', async () => {
    const store = sqlite(file());
    let failLoads = 0;
    // The store answers every call but the loads it is told to fail (as a dropped connection would).
    const flaky: KeyStore = {
      ...store,
      load: (clientId, key) => (failLoads > 0 ? ((failLoads -= 1), Promise.reject(new Error('connection lost'))) : store.load(clientId, key)),
    };
    const app = await createTestApp({ store: flaky });
    // Parked at EXT1_SENT (the risk check timed out): the next request takes the row over.
    app.risk.script.push('timeout-before-apply');
    expect((await app.post({ amount: 10 }, { key: 'k-reload' })).status).toBe(202);
    failLoads = 1;
    expect((await app.post({ amount: 10 }, { key: 'k-reload' })).status).toBe(503);
    expect((await app.post({ amount: 10 }, { key: 'k-reload' })).status).toBe(201);
    expect(await app.count('ledger')).toBe(1);
  });
});

describe('a key the recovery worker gave up on a full disk (SQLite)', () => {
  it("is free for the client's retry once the disk has room again, though the worker's park failed", async () => {
    const app = await createTestApp({ store: sqlite(file()), parkBackoff: { baseMs: 1, maxMs: 1 } });
    const disk = await sqliteDisk(app.store);
    // The request's risk check times out (202, parked); the worker's attempt finds it unavailable.
    app.risk.script.push('timeout-before-apply', 'unavailable');
    expect((await app.post({ amount: 10 }, { key: 'k-worker' })).status).toBe(202);
    await sleep(5);
    const worker = createRecoveryWorker({ store: app.store, handler: app.handler });
    expect(await fillDuringRiskCall(app, disk, 2, () => worker.runOnce())).toMatchObject({ transient: 1 });
    await disk.free();
    expect((await app.post({ amount: 10 }, { key: 'k-worker' })).status).toBe(201);
    expect(await app.count('ledger')).toBe(1);
  });
});

describe('a 503 answered on a full disk (PostgreSQL)', () => {
  let backend: PgBackend;
  beforeAll(async () => {
    backend = await openPgBackend('full_disk');
  });
  afterAll(() => backend?.close());

  it('runs the retry sent once the disk has room again, though the release after the 503 failed', async () => {
    const store = await backend.store();
    const app = await createTestApp({ store });
    const disk = await postgresDisk(backend, store.schema);
    expect((await failOnFullDisk(app, disk, 'k-full')).status).toBe(503);
    await disk.free();
    const retry = await app.post({ amount: 10 }, { key: 'k-full' });
    expect(retry.status).toBe(201);
    expect(await app.count('ledger')).toBe(1);
    expect([app.risk.applied.size, app.rail.applied.size]).toEqual([1, 1]);
  });

  it('runs the retry sent once connections hold again, though the release after the 503 was cut off with its connection', async () => {
    const store = await backend.store();
    const app = await createTestApp({ store });
    const connections = await droppingConnections(backend, store.schema);
    const cut: Disk = { fill: connections.cut, free: connections.mend };
    expect((await failOnFullDisk(app, cut, 'k-cut')).status).toBe(503);
    await connections.mend();
    const retry = await app.post({ amount: 10 }, { key: 'k-cut' });
    expect(retry.status).toBe(201);
    expect(await app.count('ledger')).toBe(1);
    expect([app.risk.applied.size, app.rail.applied.size]).toEqual([1, 1]);
  });
});
