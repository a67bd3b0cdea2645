/**
 * The KeyStore contract, the row's later life: a parked row waits out its backoff, the recovery
 * worker's `sweep` finds started rows with no live lease, and `reap` deletes finished rows past
 * their retention. `sweep` and `reap` are optional members: a store without one declares it
 * (`without`), and its tests are then not registered (the suite checks the store indeed lacks it).
 *
 * @module
 */
import { describe, expect, it } from 'vitest';
import type { KeyStore, Lease, StoredResponse } from '../store/types.js';
import { contractHarness } from './keystore-harness.js';

/** The suite's own table, in SQL every dialect accepts. */
const TABLE = 'CREATE TABLE IF NOT EXISTS contract_lifecycle (client_id TEXT NOT NULL, idem_key TEXT NOT NULL)';

const RESPONSE: StoredResponse = { status: 201, headers: { 'content-type': 'application/json' }, body: '{"id":"pay_1","amount":5}' };

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The optional members of the contract a lifecycle test needs. */
export type LifecycleMember = 'sweep' | 'reap';

/**
 * Registers the lifecycle tests of `factory`'s store, but those of the members in `without`, and
 * checks that the store lacks each member it says it lacks.
 */
export function runLifecycleContract(name: string, factory: () => Promise<KeyStore>, without: readonly LifecycleMember[] = []): void {
  const has = (member: LifecycleMember): boolean => !without.includes(member);
  describe(`KeyStore contract (park, sweep, reap): ${name}`, () => {
    const h = contractHarness(factory, TABLE);
    const expireLease = async (key: string, leaseMs = 40): Promise<Lease> => {
      const admitted = await h.store.admit(h.input(key, { leaseMs }));
      if (!admitted.owned) throw new Error('expected to own the key');
      await sleep(leaseMs + 30);
      return admitted.lease;
    };

    if (without.length > 0) {
      it(`lacks the optional members it declares missing (${without.join(', ')})`, async () => {
        await h.open();
        for (const member of without) expect(h.store[member], `the store has ${member}() but declares it missing`).toBeUndefined();
      });
    }

    it('parks a row: lease cleared, attempt counted, open to takeover at once', async () => {
      await h.open();
      const admitted = await h.store.admit(h.input('k1'));
      if (!admitted.owned) throw new Error('not owned');
      expect((await h.store.write(admitted.lease, { kind: 'park', retryAfterMs: 400 })).ok).toBe(true);
      expect(await h.store.load(h.clientId, 'k1')).toMatchObject({ state: 'started', attempts: 1, leaseRemainingMs: null });
      expect((await h.store.write(admitted.lease, { kind: 'park', retryAfterMs: 400 })).ok).toBe(false);
      expect(await h.store.takeOver(h.clientId, 'k1', 10_000)).not.toBeNull();
    });

    if (has('sweep')) {
      it('holds a parked row from sweeps until it is due, and a takeover takes it off them', async () => {
        await h.open();
        const admitted = await h.store.admit(h.input('k1'));
        if (!admitted.owned) throw new Error('not owned');
        expect((await h.store.write(admitted.lease, { kind: 'park', retryAfterMs: 400 })).ok).toBe(true);
        const row = await h.store.load(h.clientId, 'k1');
        expect(row).toMatchObject({ attempts: 1, leaseRemainingMs: null });
        const mine = async () => (await h.store.sweep!(1000)).filter((r) => r.clientId === h.clientId).map((r) => r.key);
        expect(await mine()).toEqual([]);
        await sleep(500);
        expect(await mine()).toEqual(['k1']);
        expect(await h.store.takeOver(h.clientId, 'k1', 10_000)).not.toBeNull();
        expect(await mine()).toEqual([]);
      });

      it('sweeps started rows with an expired lease, oldest first, never live or finished ones', async () => {
        await h.open();
        await expireLease('old');
        await expireLease('newer');
        await h.store.admit(h.input('live'));
        const finished = await h.store.admit(h.input('done', { leaseMs: 1 }));
        if (finished.owned) await h.store.write(finished.lease, { kind: 'finish', response: RESPONSE });
        await sleep(5);
        const swept = (await h.store.sweep!(1000)).filter((r) => r.clientId === h.clientId).map((r) => r.key);
        expect(swept).toEqual(['old', 'newer']);
        expect((await h.store.sweep!(1)).length).toBe(1);
      });
    }

    if (has('reap')) {
      it('keeps a key that finished after its retention for a retention from its finish: a retry still gets the answer', async () => {
        await h.open();
        const late = await h.store.admit(h.input('late', { ttlMs: 300 }));
        if (!late.owned) throw new Error('not owned');
        await sleep(400); // in flight past its retention (parked, resumed by the worker)
        expect(await h.store.reap!(100)).toBe(0);
        expect((await h.store.write(late.lease, { kind: 'finish', response: RESPONSE })).ok).toBe(true);
        expect(await h.store.reap!(100)).toBe(0);
        expect(await h.store.admit(h.input('late', { ttlMs: 300 }))).toMatchObject({ owned: false, row: { state: 'finished', response: RESPONSE } });
        await sleep(400);
        while ((await h.store.reap!(100)) > 0);
        expect(await h.store.load(h.clientId, 'late')).toBeUndefined();
      });

      it('reaps finished keys past their expiry in batches, and keeps started and unexpired ones', async () => {
        await h.open();
        for (const key of ['f1', 'f2', 'f3']) {
          const admitted = await h.store.admit(h.input(key, { ttlMs: 1 }));
          if (admitted.owned) await h.store.write(admitted.lease, { kind: 'finish', response: RESPONSE });
        }
        await h.store.admit(h.input('started-expired', { ttlMs: 1 }));
        const kept = await h.store.admit(h.input('fresh'));
        if (kept.owned) await h.store.write(kept.lease, { kind: 'finish', response: RESPONSE });
        await sleep(10);
        expect(await h.store.reap!(2)).toBe(2);
        while ((await h.store.reap!(100)) > 0);
        for (const key of ['f1', 'f2', 'f3']) expect(await h.store.load(h.clientId, key)).toBeUndefined();
        expect((await h.store.load(h.clientId, 'started-expired'))?.state).toBe('started');
        expect((await h.store.load(h.clientId, 'fresh'))?.state).toBe('finished');
      });
    }
  });
}
