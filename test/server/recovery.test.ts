import { afterEach, describe, expect, it } from 'vitest';
import { createReaper, createRecoveryWorker } from '../../src/server/index.js';
import type { PhaseHooks } from '../../src/server/index.js';
import type { KeyStore } from '../../src/server/store/types.js';
import { referenceKeyStore } from '../support/reference-store.js';
import { createTestApp as createApp, type TestApp } from './fixtures.js';

let app: TestApp;
afterEach(async () => {
  await app.store.close?.();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
// Long enough that a loaded machine never lets a live lease lapse before the 409 check.
const LEASE_MS = 600;

/**
 * Freezes the first attempt right after `point` commits, as if the process had died there: it
 * holds its (expiring) lease and does nothing more until `wake()` lets the zombie continue.
 */
function freezeAfter(point: string): { hooks: PhaseHooks; frozen: Promise<void>; wake: () => void } {
  let wake!: () => void;
  let reached!: () => void;
  const frozen = new Promise<void>((resolve) => (reached = resolve));
  const gate = new Promise<void>((resolve) => (wake = resolve));
  let done = false;
  return {
    frozen,
    wake,
    hooks: {
      async afterCommit(committed) {
        if (committed !== point || done) return;
        done = true;
        reached();
        await gate;
      },
    },
  };
}

async function assertCompletedOnce(): Promise<void> {
  expect(await app.count('ledger')).toBe(1);
  expect(app.rail.applied.size).toBe(1);
  expect(app.risk.applied.size).toBe(1);
  expect(await app.count('step_runs', 'step = $1', ['H1_DONE'])).toBe(1);
  expect(await app.count('step_runs', 'step = $1', ['H2_DONE'])).toBe(1);
}

const POINTS = ['H1_DONE', 'EXT1_SENT', 'EXT1_DONE', 'H2_DONE', 'EXT2_SENT', 'EXT2_DONE'];

// The built-in store (its commits folded), and the minimal reference store over the primitives alone.
const STORES: ReadonlyArray<readonly [string, (() => KeyStore) | undefined]> = [
  ['sqlite store', undefined],
  ['reference store (plain primitives)', () => referenceKeyStore(':memory:')],
];

describe.each(STORES)('%s', (_name, makeStore) => {
  const createTestApp: typeof createApp = (options = {}) => createApp(makeStore ? { store: makeStore(), ...options } : options);

  describe('takeover after a lost lease', () => {
    it.each(POINTS)('resumes from %s on a client retry without re-running committed steps, and fences the old owner', async (point) => {
      const crash = freezeAfter(point);
      // Duplicates answer at once here: the 409 below is the frozen owner's key seen in flight.
      app = await createTestApp({ leaseMs: LEASE_MS, hooks: crash.hooks, inFlightWaitMs: 0 });
      const zombie = app.post({ amount: 30 });
      await crash.frozen;
      expect((await app.post({ amount: 30 })).status).toBe(409);
      await sleep(LEASE_MS + 100);

      const retry = await app.post({ amount: 30 });
      expect(retry.status).toBe(201);
      expect(retry.headers.get('idempotency-replay')).toBeNull();
      await assertCompletedOnce();
      expect(app.handler.metrics.snapshot().events.lease_takeovers).toBe(1);

      crash.wake();
      const late = await zombie;
      expect(late.status).toBe(409);
      await assertCompletedOnce();
      expect(app.handler.metrics.snapshot().events.leases_lost).toBe(1);
      expect((await app.post({ amount: 30 })).headers.get('idempotency-replay')).toBe('true');
    });
  });

  describe('outcome unknown', () => {
    it('answers 202, then a retry probes the rail, finds it applied and completes without a second call', async () => {
      app = await createTestApp();
      app.rail.script.push('timeout-after-apply');
      const first = await app.post({ amount: 30 });
      expect(first.status).toBe(202);
      expect(Number(first.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(first.headers.get('idempotency-key')).toBe('key-1');
      expect((await first.json()).type).toBe('https://oncely.dev/problems/outcome-unknown');
      const retry = await app.post({ amount: 30 });
      expect(retry.status).toBe(201);
      expect(app.rail.calls).toBe(1);
      expect(app.rail.probes).toBe(1);
      await assertCompletedOnce();
    });

    it('answers 202, then a retry probes, finds nothing and calls again with the same derived key', async () => {
      app = await createTestApp();
      app.rail.script.push('timeout-before-apply');
      expect((await app.post({ amount: 30 })).status).toBe(202);
      const retry = await app.post({ amount: 30 });
      expect(retry.status).toBe(201);
      expect(app.rail.calls).toBe(2);
      await assertCompletedOnce();
    });

    it('treats an external call that throws as unknown (202, error reported), never as a failure', async () => {
      const errors: unknown[] = [];
      app = await createTestApp({ hooks: { onError: (error) => errors.push(error) } });
      app.rail.script.push('throws-after-apply');
      expect((await app.post({ amount: 30 })).status).toBe(202);
      expect(String(errors[0])).toContain('ECONNRESET');
      expect((await app.post({ amount: 30 })).status).toBe(201);
      expect(app.rail.calls).toBe(1);
      await assertCompletedOnce();
    });

    it('stays 202 and resumable while the probe cannot tell', async () => {
      app = await createTestApp();
      app.rail.script.push('timeout-after-apply');
      app.rail.probeBlind = true;
      expect((await app.post({ amount: 30 })).status).toBe(202);
      expect((await app.post({ amount: 30 })).status).toBe(202);
      const row = await app.store.load('acme', 'key-1');
      expect(row).toMatchObject({ state: 'started', recoveryPoint: 'EXT2_SENT', attempts: 2 });
      app.rail.probeBlind = false;
      expect((await app.post({ amount: 30 })).status).toBe(201);
      await assertCompletedOnce();
      expect(app.handler.metrics.snapshot().requests.pending).toBe(2);
    });
  });

  describe('createRecoveryWorker', () => {
    it('alone completes a row whose owner died, and the client then gets the replay', async () => {
      const crash = freezeAfter('EXT2_SENT');
      app = await createTestApp({ leaseMs: LEASE_MS, hooks: crash.hooks });
      const zombie = app.post({ amount: 30 });
      await crash.frozen;
      const worker = createRecoveryWorker({ store: app.store, handler: app.handler });
      expect((await worker.runOnce()).finished).toBe(0);
      await sleep(LEASE_MS + 100);
      expect((await worker.runOnce()).finished).toBe(1);
      await assertCompletedOnce();
      expect(app.handler.metrics.snapshot().events.recoveries).toBe(1);
      const replay = await app.post({ amount: 30 });
      expect(replay.status).toBe(201);
      expect(replay.headers.get('idempotency-replay')).toBe('true');
      crash.wake();
      expect((await zombie).status).toBe(409);
      await assertCompletedOnce();
    });

    it('completes a parked row once its backoff is due, and backs off again while the probe cannot tell', async () => {
      app = await createTestApp({ parkBackoff: { baseMs: 400, maxMs: 5000 } });
      app.rail.script.push('timeout-after-apply');
      app.rail.probeBlind = true;
      expect((await app.post({ amount: 30 })).status).toBe(202);
      const worker = createRecoveryWorker({ store: app.store, handler: app.handler });
      expect((await worker.runOnce()).pending).toBe(0);
      await sleep(600);
      expect((await worker.runOnce()).pending).toBe(1);
      // Parked with attempts = 1 this time: the next try is due after 400 · 2 = 800 ms, not sooner.
      await sleep(50);
      expect((await worker.runOnce()).pending).toBe(0);
      app.rail.probeBlind = false;
      await sleep(900);
      expect((await worker.runOnce()).finished).toBe(1);
      await assertCompletedOnce();
      expect(app.rail.calls).toBe(1);
    });

    it('runs on its interval once started, and stops', async () => {
      const crash = freezeAfter('H1_DONE');
      app = await createTestApp({ leaseMs: LEASE_MS, hooks: crash.hooks });
      void app.post({ amount: 30 });
      await crash.frozen;
      const worker = createRecoveryWorker({ store: app.store, handler: app.handler, intervalMs: 20 });
      worker.start();
      for (let i = 0; i < 100 && (await app.count('ledger')) === 0; i += 1) await sleep(20);
      await worker.stop();
      await assertCompletedOnce();
      crash.wake();
    });
  });

  describe('createReaper', () => {
    it('deletes finished keys past their TTL in batches and keeps started ones', async () => {
      // A TTL short enough to pass in the test, and a lease below it (a lease ≥ TTL is refused).
      app = await createTestApp({ leaseMs: 250, ttlMs: 300 });
      for (const key of ['a', 'b', 'c']) expect((await app.post({ amount: 1 }, { key })).status).toBe(201);
      app.rail.script.push('timeout-after-apply');
      expect((await app.post({ amount: 1 }, { key: 'parked' })).status).toBe(202);
      const reaper = createReaper({ store: app.store, metrics: app.handler.metrics, batchSize: 2 });
      expect(await reaper.runOnce()).toBe(0);
      await sleep(330);
      expect(await reaper.runOnce()).toBe(3);
      expect(await app.store.load('acme', 'a')).toBeUndefined();
      expect((await app.store.load('acme', 'parked'))?.state).toBe('started');
      expect(app.handler.metrics.snapshot().events.keys_reaped).toBe(3);
      expect(app.handler.metrics.render()).toContain('oncely_keys_reaped_total 3');
      const fresh = await app.post({ amount: 1 }, { key: 'a' });
      expect(fresh.headers.get('idempotency-replay')).toBeNull();
    });
  });
});
