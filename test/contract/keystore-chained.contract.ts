/**
 * The KeyStore contract, part three: an outcome mark committed before a phase (`prior`) and a
 * point committed after it (`next`), which a store may write in the phase's own round trips or
 * statement: each stays in order, and a mark stays committed when the phase fails. Run by every
 * backend next to `keystore.contract.ts`.
 *
 * Usage: `runKeyStoreChainedContract('sqlite', async () => sqliteKeyStore({ path: ':memory:' }))`.
 */
import { describe, expect, it } from 'vitest';
import { commitsOf } from '../../src/server/commits.js';
import type { AdmitInput, KeyStore, Lease, Tx } from '../../src/server/store/types.js';
import { contractHarness } from './keystore-harness.js';

const TABLE = 'CREATE TABLE IF NOT EXISTS contract_chained (client_id TEXT NOT NULL, key TEXT NOT NULL, step TEXT NOT NULL)';

export function runKeyStoreChainedContract(name: string, factory: () => Promise<KeyStore>): void {
  describe(`KeyStore contract (marks before and points after a phase): ${name}`, () => {
    const h = contractHarness(factory, TABLE, { requestHash: 'c'.repeat(64) });
    const record = (key: string, step: string) => async (tx: Tx) =>
      tx.run('INSERT INTO contract_chained (client_id, key, step) VALUES ($1, $2, $3)', [h.clientId, key, step]);
    const steps = async (key: string): Promise<string[]> =>
      (await h.store.transaction((tx) => tx.all<{ step: string }>('SELECT step FROM contract_chained WHERE client_id = $1 AND key = $2', [h.clientId, key]))).map((row) => row.step);
    const owned = async (key: string, over: Partial<AdmitInput> = {}): Promise<Lease> => {
      const admitted = await commitsOf(h.store).admit(h.input(key, over));
      if (!admitted.owned) throw new Error('not owned');
      return admitted.lease;
    };

    it('admits with a first phase and the EXTn_SENT after it, each committed, and says so', async () => {
      await h.open();
      const admitted = await commitsOf(h.store).admit(h.input('k1'), {
        commit: { recoveryPoint: 'H1_DONE', data: { h1: 1 }, leaseMs: 10_000, durable: false, next: { recoveryPoint: 'EXT1_SENT', leaseMs: 10_000, durable: true } },
        work: record('k1', 'H1'),
      });
      expect(admitted.owned && admitted.first).toEqual({ value: 1, next: true });
      expect(await h.store.load(h.clientId, 'k1')).toMatchObject({ state: 'started', recoveryPoint: 'EXT1_SENT', data: { h1: 1 } });
      expect(await steps('k1')).toEqual(['H1']);
    });

    it('commits a phase, then its next point; the next point merges its data and refreshes the lease', async () => {
      await h.open();
      const lease = await owned('k2', { leaseMs: 1000 });
      const phase = await commitsOf(h.store).commitPhase(
        lease,
        { recoveryPoint: 'H2_DONE', data: { h2: true }, leaseMs: 1000, durable: false, next: { recoveryPoint: 'EXT2_SENT', data: { sent: 2 }, leaseMs: 60_000, durable: true } },
        record('k2', 'H2'),
      );
      expect(phase).toEqual({ ok: true, value: 1, next: true });
      const row = await h.store.load(h.clientId, 'k2');
      expect(row).toMatchObject({ recoveryPoint: 'EXT2_SENT', data: { h2: true, sent: 2 } });
      expect(row!.leaseRemainingMs).toBeGreaterThan(30_000);
      expect(await steps('k2')).toEqual(['H2']);
    });

    // A mark with a hook is committed on its own; one without may share the phase's statements.
    for (const hooked of [true, false]) {
      const hook = (push: () => void) => (hooked ? { committed: push } : {});

      it(`commits the outcome mark${hooked ? ' (with a hook)' : ''} before the phase, and keeps it when the phase fails: before or after its first statement, or in its final response`, async () => {
        await h.open();
        const order: string[] = [];
        const mark = (point: string) => ({ recoveryPoint: point, data: { [point]: 'outcome' }, leaseMs: 10_000, durable: false, ...hook(() => void order.push(`mark ${point}`)) });
        const lease = await owned('k3');
        await commitsOf(h.store).commitPhase(lease, { recoveryPoint: 'EXT1_SENT', leaseMs: 10_000 });
        const afterStatement = commitsOf(h.store).commitPhase(lease, { recoveryPoint: 'H2_DONE', leaseMs: 10_000, prior: mark('EXT1_DONE') }, async (tx) => {
          await record('k3', 'H2')(tx);
          order.push('statement answered');
          throw new Error('boom');
        });
        await expect(afterStatement).rejects.toThrow('boom');
        expect(await h.store.load(h.clientId, 'k3')).toMatchObject({ state: 'started', recoveryPoint: 'EXT1_DONE', data: { EXT1_DONE: 'outcome' } });
        expect(await steps('k3')).toEqual([]);
        // The hook runs once the mark is in, before the work sees its first statement's answer.
        expect(order).toEqual(hooked ? ['mark EXT1_DONE', 'statement answered'] : ['statement answered']);

        await commitsOf(h.store).commitPhase(lease, { recoveryPoint: 'EXT2_SENT', leaseMs: 10_000 });
        const beforeStatement = commitsOf(h.store).finish(
          lease,
          { status: 201, headers: {}, body: '{}' },
          async () => {
            throw new Error('before any statement');
          },
          mark('EXT2_DONE'),
        );
        await expect(beforeStatement).rejects.toThrow('before any statement');
        expect(await h.store.load(h.clientId, 'k3')).toMatchObject({ state: 'started', recoveryPoint: 'EXT2_DONE', data: { EXT1_DONE: 'outcome', EXT2_DONE: 'outcome' } });

        // The work ran and the response is refused (too large): the mark stays, the response does not.
        await commitsOf(h.store).commitPhase(lease, { recoveryPoint: 'EXT3_SENT', leaseMs: 10_000 });
        const tooLarge = commitsOf(h.store).finish(lease, { status: 201, headers: {}, body: 'x'.repeat(10_000_000) }, async () => 'no statement', mark('EXT3_DONE'));
        await expect(tooLarge).rejects.toThrow(/exceeds maxResponseBytes/);
        expect(await h.store.load(h.clientId, 'k3')).toMatchObject({ state: 'started', recoveryPoint: 'EXT3_DONE', response: null });
        expect(order).toEqual(hooked ? ['mark EXT1_DONE', 'statement answered', 'mark EXT2_DONE', 'mark EXT3_DONE'] : ['statement answered']);
      });

      it(`finishes after the outcome mark${hooked ? ' (with a hook)' : ''}: with work, with work that runs no statement, and with none`, async () => {
        await h.open();
        const cases: Array<[string, ((tx: Tx) => Promise<unknown>) | undefined]> = [
          ['k4', record('k4', 'H3')],
          ['k4b', async () => 'no statement'],
          ['k5', undefined],
        ];
        for (const [key, work] of cases) {
          const lease = await owned(key);
          await commitsOf(h.store).commitPhase(lease, { recoveryPoint: 'EXT1_SENT', data: { sent: 1 }, leaseMs: 10_000 });
          let calls = 0;
          const done = await commitsOf(h.store).finish(lease, { status: 201, headers: { 'content-type': 'application/json' }, body: '{"ok":true}' }, work, {
            recoveryPoint: 'EXT1_DONE',
            data: { risk: 'low' },
            leaseMs: 10_000,
            durable: false,
            ...hook(() => void (calls += 1)),
          });
          expect(done.ok, key).toBe(true);
          expect(calls, key).toBe(hooked ? 1 : 0);
          expect(await h.store.load(h.clientId, key), key).toMatchObject({
            state: 'finished',
            recoveryPoint: 'EXT1_DONE',
            data: { sent: 1, risk: 'low' },
            response: { status: 201, body: '{"ok":true}' },
            leaseRemainingMs: null,
          });
          expect(await steps(key), key).toEqual(key === 'k4' ? ['H3'] : []);
        }
      });

      it(`commits a point after the outcome mark and the phase${hooked ? ' (with a hook)' : ''}, with every data patch in order`, async () => {
        await h.open();
        const lease = await owned('k8');
        await commitsOf(h.store).commitPhase(lease, { recoveryPoint: 'EXT1_SENT', data: { a: 'sent', b: 'sent' }, leaseMs: 10_000 });
        const phase = await commitsOf(h.store).commitPhase(
          lease,
          {
            recoveryPoint: 'H2_DONE',
            data: { b: 'phase', c: 'phase' },
            dataFrom: () => ({ c: 'work', d: 'work' }),
            leaseMs: 10_000,
            prior: { recoveryPoint: 'EXT1_DONE', data: { a: 'mark', b: 'mark' }, leaseMs: 10_000, ...hook(() => undefined) },
            next: { recoveryPoint: 'EXT2_SENT', data: { d: 'next' }, leaseMs: 10_000, durable: true },
          },
          async () => 'no statement',
        );
        expect(phase).toEqual({ ok: true, value: 'no statement', next: true });
        expect(await h.store.load(h.clientId, 'k8')).toMatchObject({ recoveryPoint: 'EXT2_SENT', data: { a: 'mark', b: 'phase', c: 'work', d: 'next' } });
      });
    }

    it('runs a mark\'s hook after the mark committed and before anything after it did, with or without work', async () => {
      await h.open();
      const seen: string[] = [];
      const watched = (key: string, point: string) => ({
        recoveryPoint: point,
        leaseMs: 10_000,
        durable: false,
        committed: async () => {
          const row = await h.store.load(h.clientId, key);
          seen.push(`${point}: ${row?.state}/${row?.recoveryPoint}`);
        },
      });
      const lease = await owned('k7');
      await commitsOf(h.store).commitPhase(lease, { recoveryPoint: 'EXT1_SENT', leaseMs: 10_000 });
      // A point with no work after the mark (two external calls in a row: EXT2_SENT).
      expect((await commitsOf(h.store).commitPhase(lease, { recoveryPoint: 'EXT2_SENT', leaseMs: 10_000, prior: watched('k7', 'EXT1_DONE') })).ok).toBe(true);
      // A phase with work after the mark.
      expect((await commitsOf(h.store).commitPhase(lease, { recoveryPoint: 'H3_DONE', leaseMs: 10_000, prior: watched('k7', 'EXT2_DONE') }, record('k7', 'H3'))).ok).toBe(true);
      await commitsOf(h.store).commitPhase(lease, { recoveryPoint: 'EXT3_SENT', leaseMs: 10_000 });
      // The final response with no work after the mark.
      expect((await commitsOf(h.store).finish(lease, { status: 201, headers: {}, body: '{}' }, undefined, watched('k7', 'EXT3_DONE'))).ok).toBe(true);
      expect(seen).toEqual(['EXT1_DONE: started/EXT1_DONE', 'EXT2_DONE: started/EXT2_DONE', 'EXT3_DONE: started/EXT3_DONE']);
      expect(await h.store.load(h.clientId, 'k7')).toMatchObject({ state: 'finished', recoveryPoint: 'EXT3_DONE' });
    });

    it('merges a mark, the phase\'s data and the next point as separate writes would, `undefined` values included', async () => {
      await h.open();
      for (const hooked of [true, false]) {
        const key = `k9-${hooked}`;
        const lease = await owned(key);
        await commitsOf(h.store).commitPhase(lease, { recoveryPoint: 'EXT1_SENT', data: { status: 'pending', kept: 1 }, leaseMs: 10_000 });
        const prior = { recoveryPoint: 'EXT1_DONE', data: { status: 'captured' }, leaseMs: 10_000, ...(hooked ? { committed: () => undefined } : {}) };
        const done = await commitsOf(h.store).commitPhase(lease, { recoveryPoint: 'H2_DONE', leaseMs: 10_000, prior, dataFrom: () => ({ status: undefined, h2: true }) }, async () => 'no statement');
        expect(done.ok, key).toBe(true);
        expect((await h.store.load(h.clientId, key))?.data, key).toEqual({ status: 'captured', kept: 1, h2: true });
      }
    });

    it('keeps a statement the work sends after it returned out of the phase', async () => {
      await h.open();
      const lease = await owned('k10');
      await commitsOf(h.store).commitPhase(lease, { recoveryPoint: 'EXT1_SENT', leaseMs: 10_000 });
      let late: Promise<unknown> | undefined;
      const done = await commitsOf(h.store).commitPhase(
        lease,
        { recoveryPoint: 'H2_DONE', leaseMs: 10_000, prior: { recoveryPoint: 'EXT1_DONE', leaseMs: 10_000 }, next: { recoveryPoint: 'EXT2_SENT', leaseMs: 10_000 } },
        async (tx) => {
          // Not awaited: it runs once the phase has committed.
          late = new Promise((resolve) => setTimeout(resolve, 20)).then(() =>
            tx.run('INSERT INTO contract_chained (client_id, key, step) VALUES ($1, $2, $3)', [h.clientId, 'k10', 'late']),
          );
          return 'returned';
        },
      );
      await expect(late).rejects.toThrow(/ended/);
      expect(done.ok).toBe(true);
      const row = await h.store.load(h.clientId, 'k10');
      expect(row?.recoveryPoint).toBe(done.ok && done.next ? 'EXT2_SENT' : 'H2_DONE');
      expect(await steps('k10')).toEqual([]);
    });

    it('commits nothing, not even the mark, for an owner whose lease was taken over', async () => {
      await h.open();
      const old = await owned('k6', { leaseMs: 50 });
      await commitsOf(h.store).commitPhase(old, { recoveryPoint: 'EXT1_SENT', leaseMs: 50 });
      await new Promise((resolve) => setTimeout(resolve, 120));
      const fresh = await h.store.takeOver(h.clientId, 'k6', 10_000);
      expect(fresh).not.toBeNull();
      const prior = { recoveryPoint: 'EXT1_DONE', data: { stale: true }, leaseMs: 10_000, durable: false };
      expect(await commitsOf(h.store).commitPhase(old, { recoveryPoint: 'H2_DONE', leaseMs: 10_000, prior }, record('k6', 'H2'))).toEqual({ ok: false });
      expect(await commitsOf(h.store).commitPhase(old, { recoveryPoint: 'H2_DONE', leaseMs: 10_000, prior })).toEqual({ ok: false });
      expect(await commitsOf(h.store).finish(old, { status: 201, headers: {}, body: '{}' }, undefined, prior)).toEqual({ ok: false });
      expect(await h.store.load(h.clientId, 'k6')).toMatchObject({ state: 'started', recoveryPoint: 'EXT1_SENT', data: {} });
      expect(await steps('k6')).toEqual([]);
    });
  });
}
