/**
 * The KeyStore contract, part three: a phase written together with the outcome mark before it
 * (`before`) and the point after it (`after`), and an admission together with a first phase. The
 * store writes them as one: all or nothing, the row left at the last point, every data patch
 * merged in order. (Keeping the mark when the phase fails is the runner's job: it commits it
 * again on its own; see oncely's handler tests, 'keeps the outcome mark it carried'.) Run by every backend next to
 * `keystore-core.ts`.
 *
 * Registered by `describeKeyStore` (`./describe-key-store.ts`).
 */
import { describe, expect, it } from 'vitest';
import type { AdmitInput, KeyStore, Lease, Tx } from '../store/types.js';
import { contractHarness } from './keystore-harness.js';

const TABLE = 'CREATE TABLE IF NOT EXISTS contract_chained (client_id TEXT NOT NULL, idem_key TEXT NOT NULL, step TEXT NOT NULL)';

export function runKeyStoreChainedContract(name: string, factory: () => Promise<KeyStore>): void {
  describe(`KeyStore contract (marks before and points after a phase): ${name}`, () => {
    const h = contractHarness(factory, TABLE, { requestHash: 'c'.repeat(64) });
    const record = (key: string, step: string) => async (tx: Tx) =>
      tx.run('INSERT INTO contract_chained (client_id, idem_key, step) VALUES ($1, $2, $3)', [h.clientId, key, step]);
    const steps = async (key: string): Promise<string[]> =>
      (
        await h.store.transaction((tx) =>
          tx.all<{ step: string }>('SELECT step FROM contract_chained WHERE client_id = $1 AND idem_key = $2', [h.clientId, key]),
        )
      ).map((row) => row.step);
    const owned = async (key: string, over: Partial<AdmitInput> = {}): Promise<Lease> => {
      const admitted = await h.store.admit(h.input(key, over));
      if (!admitted.owned) throw new Error('not owned');
      return admitted.lease;
    };
    const mark = (point: string) => ({ recoveryPoint: point, data: { [point]: 'outcome' } });

    it('admits with a first phase and the EXTn_SENT after it, in one, and answers the row at that point', async () => {
      await h.open();
      const admitted = await h.store.admit(h.input('k1'), {
        phase: { recoveryPoint: 'H1_DONE', data: { h1: 1 }, leaseMs: 10_000, after: { recoveryPoint: 'EXT1_SENT' } },
        work: record('k1', 'H1'),
      });
      expect(admitted.owned && admitted.first).toEqual({ value: 1 });
      expect(admitted.row).toMatchObject({ state: 'started', recoveryPoint: 'EXT1_SENT', data: { h1: 1 } });
      expect(await h.store.load(h.clientId, 'k1')).toMatchObject({ state: 'started', recoveryPoint: 'EXT1_SENT', data: { h1: 1 } });
      expect(await steps('k1')).toEqual(['H1']);
    });

    it('commits a phase with the point after it: the row at that point, its data merged, the lease refreshed', async () => {
      await h.open();
      const lease = await owned('k2', { leaseMs: 1000 });
      const phase = await h.store.write(
        lease,
        { kind: 'phase', recoveryPoint: 'H2_DONE', data: { h2: true }, leaseMs: 60_000, after: { recoveryPoint: 'EXT2_SENT', data: { sent: 2 } } },
        record('k2', 'H2'),
      );
      expect(phase).toEqual({ ok: true, value: 1 });
      const row = await h.store.load(h.clientId, 'k2');
      expect(row).toMatchObject({ recoveryPoint: 'EXT2_SENT', data: { h2: true, sent: 2 } });
      expect(row!.leaseRemainingMs).toBeGreaterThan(30_000);
      expect(await steps('k2')).toEqual(['H2']);
    });

    it('commits nothing of a failing phase, the mark before it included: after or before its first statement, or a refused final response', async () => {
      await h.open();
      const lease = await owned('k3');
      await h.store.write(lease, { kind: 'phase', recoveryPoint: 'EXT1_SENT', data: { sent: 1 }, leaseMs: 10_000 });
      const unchanged = { state: 'started', recoveryPoint: 'EXT1_SENT', data: { sent: 1 }, response: null };
      const afterStatement = h.store.write(lease, { kind: 'phase', recoveryPoint: 'H2_DONE', leaseMs: 10_000, before: mark('EXT1_DONE') }, async (tx) => {
        await record('k3', 'H2')(tx);
        throw new Error('boom');
      });
      await expect(afterStatement).rejects.toThrow('boom');
      expect(await h.store.load(h.clientId, 'k3')).toMatchObject(unchanged);
      expect(await steps('k3')).toEqual([]);
      const beforeStatement = h.store.write(
        lease,
        { kind: 'finish', response: { status: 201, headers: {}, body: '{}' }, before: mark('EXT1_DONE') },
        async () => {
          throw new Error('before any statement');
        },
      );
      await expect(beforeStatement).rejects.toThrow('before any statement');
      expect(await h.store.load(h.clientId, 'k3')).toMatchObject(unchanged);
      const tooLarge = h.store.write(
        lease,
        { kind: 'finish', response: { status: 201, headers: {}, body: 'x'.repeat(10_000_000) }, before: mark('EXT1_DONE') },
        record('k3', 'final'),
      );
      await expect(tooLarge).rejects.toThrow(/exceeds maxResponseBytes/);
      expect(await h.store.load(h.clientId, 'k3')).toMatchObject(unchanged);
      expect(await steps('k3')).toEqual([]);
      // The owner still holds the row: the mark alone commits (as the runner then does).
      expect(await h.store.write(lease, { kind: 'phase', ...mark('EXT1_DONE'), leaseMs: 10_000 })).toEqual({ ok: true, value: undefined });
      expect(await h.store.load(h.clientId, 'k3')).toMatchObject({ recoveryPoint: 'EXT1_DONE', data: { sent: 1, EXT1_DONE: 'outcome' } });
    });

    it('finishes with the outcome mark before the response: with work, with work that runs no statement, and with none', async () => {
      await h.open();
      const cases: Array<[string, ((tx: Tx) => Promise<unknown>) | undefined]> = [
        ['k4', record('k4', 'H3')],
        ['k4b', async () => 'no statement'],
        ['k5', undefined],
      ];
      for (const [key, work] of cases) {
        const lease = await owned(key);
        await h.store.write(lease, { kind: 'phase', recoveryPoint: 'EXT1_SENT', data: { sent: 1 }, leaseMs: 10_000 });
        const done = await h.store.write(
          lease,
          {
            kind: 'finish',
            response: { status: 201, headers: { 'content-type': 'application/json' }, body: '{"ok":true}' },
            before: {
              recoveryPoint: 'EXT1_DONE',
              data: { risk: 'low' },
            },
          },
          work,
        );
        expect(done.ok, key).toBe(true);
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

    for (const work of ['statement', 'none'] as const) {
      it(`writes the mark, the phase and the point after it with every data patch in order (work: ${work})`, async () => {
        await h.open();
        const key = `k8-${work}`;
        const lease = await owned(key);
        await h.store.write(lease, { kind: 'phase', recoveryPoint: 'EXT1_SENT', data: { a: 'sent', b: 'sent' }, leaseMs: 10_000 });
        const phase = await h.store.write(
          lease,
          {
            kind: 'phase',
            recoveryPoint: 'H2_DONE',
            data: { b: 'phase', c: 'phase' },
            dataFrom: () => ({ c: 'work', d: 'work' }),
            leaseMs: 10_000,
            before: { recoveryPoint: 'EXT1_DONE', data: { a: 'mark', b: 'mark' } },
            after: { recoveryPoint: 'EXT2_SENT', data: { d: 'next' } },
          },
          work === 'statement' ? record(key, 'H2') : async () => 0,
        );
        expect(phase.ok).toBe(true);
        expect(await h.store.load(h.clientId, key)).toMatchObject({ recoveryPoint: 'EXT2_SENT', data: { a: 'mark', b: 'phase', c: 'work', d: 'next' } });
      });
    }

    it("merges a mark and the phase's data as separate writes would, `undefined` values included", async () => {
      await h.open();
      const lease = await owned('k9');
      await h.store.write(lease, { kind: 'phase', recoveryPoint: 'EXT1_SENT', data: { status: 'pending', kept: 1 }, leaseMs: 10_000 });
      const before = { recoveryPoint: 'EXT1_DONE', data: { status: 'captured' } };
      const done = await h.store.write(
        lease,
        { kind: 'phase', recoveryPoint: 'H2_DONE', leaseMs: 10_000, before, dataFrom: () => ({ status: undefined, h2: true }) },
        async () => 'no statement',
      );
      expect(done.ok).toBe(true);
      expect((await h.store.load(h.clientId, 'k9'))?.data).toEqual({ status: 'captured', kept: 1, h2: true });
    });

    it('keeps a statement the work sends after it returned out of the phase', async () => {
      await h.open();
      const lease = await owned('k10');
      await h.store.write(lease, { kind: 'phase', recoveryPoint: 'EXT1_SENT', leaseMs: 10_000 });
      let late: Promise<unknown> | undefined;
      const done = await h.store.write(
        lease,
        { kind: 'phase', recoveryPoint: 'H2_DONE', leaseMs: 10_000, before: { recoveryPoint: 'EXT1_DONE' }, after: { recoveryPoint: 'EXT2_SENT' } },
        async (tx) => {
          // Not awaited: it runs once the phase has committed.
          late = new Promise((resolve) => setTimeout(resolve, 20)).then(() =>
            tx.run('INSERT INTO contract_chained (client_id, idem_key, step) VALUES ($1, $2, $3)', [h.clientId, 'k10', 'late']),
          );
          return 'returned';
        },
      );
      await expect(late).rejects.toThrow(/ended/);
      expect(done.ok).toBe(true);
      expect((await h.store.load(h.clientId, 'k10'))?.recoveryPoint).toBe('EXT2_SENT');
      expect(await steps('k10')).toEqual([]);
    });

    it('commits nothing, not even the mark, for an owner whose lease was taken over', async () => {
      await h.open();
      const old = await owned('k6', { leaseMs: 50 });
      await h.store.write(old, { kind: 'phase', recoveryPoint: 'EXT1_SENT', leaseMs: 50 });
      await new Promise((resolve) => setTimeout(resolve, 120));
      const fresh = await h.store.takeOver(h.clientId, 'k6', 10_000);
      expect(fresh).not.toBeNull();
      const before = { recoveryPoint: 'EXT1_DONE', data: { stale: true } };
      expect(await h.store.write(old, { kind: 'phase', recoveryPoint: 'H2_DONE', leaseMs: 10_000, before }, record('k6', 'H2'))).toEqual({ ok: false });
      expect(await h.store.write(old, { kind: 'phase', recoveryPoint: 'H2_DONE', leaseMs: 10_000, before, after: { recoveryPoint: 'EXT2_SENT' } })).toEqual({
        ok: false,
      });
      expect(await h.store.write(old, { kind: 'finish', response: { status: 201, headers: {}, body: '{}' }, before })).toEqual({ ok: false });
      expect(await h.store.load(h.clientId, 'k6')).toMatchObject({ state: 'started', recoveryPoint: 'EXT1_SENT', data: {} });
      expect(await steps('k6')).toEqual([]);
    });
  });
}
