/**
 * The KeyStore contract's core suite: admission (the 100-way race), takeover, fencing, the data merge, finish, release, transactions.
 *
 * Dialect-neutral on purpose: it uses only the KeyStore API and `$n` SQL that both dialects
 * accept, and every test works on its own random client id, so it can share a database with
 * other tests (a long-lived PostgreSQL) without cleaning up.
 *
 * Registered by `describeKeyStore` (`./describe-key-store.ts`).
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { AdmitInput, KeyStore, Lease, StoredResponse } from '../store/types.js';

/** The suite's own table, in SQL every dialect accepts (a store migrates it as its dialect's script). */
const TABLE = 'CREATE TABLE IF NOT EXISTS contract_effects (client_id TEXT NOT NULL, idem_key TEXT NOT NULL, n INTEGER NOT NULL)';

const RESPONSE: StoredResponse = { status: 201, headers: { 'content-type': 'application/json' }, body: '{"id":"pay_1","amount":5}' };

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Runs the KeyStore contract against `factory`, which returns a fresh (unmigrated or migrated)
 * store; the suite migrates it with its own table and closes it after each test.
 */
export function runKeyStoreContract(name: string, factory: () => Promise<KeyStore>): void {
  describe(`KeyStore contract: ${name}`, () => {
    let store: KeyStore;
    let clientId: string;
    afterEach(async () => {
      await store?.close?.();
    });

    async function open(): Promise<KeyStore> {
      store = await factory();
      await store.migrate?.({ [store.dialect]: TABLE });
      clientId = `c${crypto.randomUUID().slice(0, 8)}`;
      return store;
    }
    const input = (key: string, over: Partial<AdmitInput> = {}): AdmitInput => ({
      clientId,
      key,
      requestHash: 'a'.repeat(64),
      endpoint: 'POST /v1/payments',
      requestBody: '{"amount":5}',
      leaseMs: 10_000,
      ttlMs: 86_400_000,
      ...over,
    });
    const effects = async (key: string): Promise<number> => {
      const row = await store.transaction((tx) =>
        tx.get<{ n: number | string }>('SELECT COUNT(*) AS n FROM contract_effects WHERE client_id = $1 AND idem_key = $2', [clientId, key]),
      );
      return Number(row?.n ?? 0);
    };
    const effect = (key: string) => async (tx: Parameters<Parameters<KeyStore['transaction']>[0]>[0]) =>
      tx.run('INSERT INTO contract_effects (client_id, idem_key, n) VALUES ($1, $2, $3)', [clientId, key, 1]);
    const expireLease = async (key: string, leaseMs = 40): Promise<Lease> => {
      const admitted = await store.admit(input(key, { leaseMs }));
      if (!admitted.owned) throw new Error('expected to own the key');
      await sleep(leaseMs + 30);
      return admitted.lease;
    };

    it('gives the first admission ownership of a started row with a live lease', async () => {
      await open();
      const result = await store.admit(input('k1'));
      expect(result.owned).toBe(true);
      expect(result.row).toMatchObject({ clientId, key: 'k1', state: 'started', recoveryPoint: null, response: null, attempts: 0 });
      expect(result.row!.requestBody).toBe('{"amount":5}');
      expect(result.row!.leaseRemainingMs).toBeGreaterThan(5_000);
      expect(result.row!.expiresAt - result.row!.createdAt).toBe(86_400_000);
    });

    it('returns the existing row, unchanged, to a second admission of the same key', async () => {
      await open();
      await store.admit(input('k1'));
      const second = await store.admit(input('k1', { requestHash: 'b'.repeat(64), requestBody: '{}' }));
      expect(second.owned).toBe(false);
      expect(second.row!.requestHash).toBe('a'.repeat(64));
      expect(second.row!.requestBody).toBe('{"amount":5}');
    });

    it('gives exactly one of 100 concurrent admissions of one key ownership', async () => {
      await open();
      const results = await Promise.all(Array.from({ length: 100 }, () => store.admit(input('race'))));
      expect(results.filter((r) => r.owned)).toHaveLength(1);
      expect(results.filter((r) => !r.owned)).toHaveLength(99);
    });

    it('scopes keys per client: the same key of two clients is two owned rows', async () => {
      await open();
      const mine = await store.admit(input('shared'));
      const theirs = await store.admit(input('shared', { clientId: `${clientId}x` }));
      expect([mine.owned, theirs.owned]).toEqual([true, true]);
    });

    describe('admission with a first phase', () => {
      const first = (key: string, over: { fail?: Error; onRun?: () => void } = {}) => ({
        phase: { recoveryPoint: 'H1_DONE', data: { given: true }, dataFrom: (changed: number | undefined) => ({ changed }), leaseMs: 10_000 },
        work: async (tx: Parameters<Parameters<KeyStore['transaction']>[0]>[0]) => {
          over.onRun?.();
          const changed = await effect(key)(tx);
          if (over.fail) throw over.fail;
          return changed;
        },
      });

      it('commits the key, the work, its recovery point and its data together for the owner', async () => {
        await open();
        const result = await store.admit(input('f1'), first('f1'));
        if (!result.owned) throw new Error('not owned');
        expect(result.first).toEqual({ value: 1 });
        expect(result.row).toMatchObject({ state: 'started', recoveryPoint: 'H1_DONE', data: { given: true, changed: 1 } });
        expect(result.row.leaseRemainingMs).toBeGreaterThan(5_000);
        const stored = await store.load(clientId, 'f1');
        expect(stored).toMatchObject({ state: 'started', recoveryPoint: 'H1_DONE', data: { given: true, changed: 1 } });
        expect(stored?.leaseRemainingMs).toBeGreaterThan(5_000);
        expect(await effects('f1')).toBe(1);
        // The lease is the admission's: it fences the next phase.
        expect(await store.write(result.lease, { kind: 'phase', recoveryPoint: 'EXT1_SENT', leaseMs: 10_000 })).toEqual({ ok: true, value: undefined });
      });

      it('stores nothing, not even the key, when the work throws, and rejects with its error', async () => {
        await open();
        const boom = new Error('H1 failed');
        await expect(store.admit(input('f2'), first('f2', { fail: boom }))).rejects.toBe(boom);
        expect(await store.load(clientId, 'f2')).toBeUndefined();
        expect(await effects('f2')).toBe(0);
        // The key is free: the next admission owns it.
        expect((await store.admit(input('f2'))).owned).toBe(true);
      });

      it('runs the work only for the owner: a second admission finds the row at its recovery point', async () => {
        await open();
        await store.admit(input('f3'), first('f3'));
        let ran = 0;
        const second = await store.admit(input('f3'), first('f3', { onRun: () => (ran += 1) }));
        expect(second.owned).toBe(false);
        expect(second.row!.recoveryPoint).toBe('H1_DONE');
        expect(ran).toBe(0);
        expect(await effects('f3')).toBe(1);
      });

      it('runs the work once for 100 concurrent admissions of one key', async () => {
        await open();
        let ran = 0;
        const results = await Promise.all(Array.from({ length: 100 }, () => store.admit(input('f4'), first('f4', { onRun: () => (ran += 1) }))));
        expect(results.filter((r) => r.owned)).toHaveLength(1);
        // The first phase commits with the admission: no duplicate ever sees the row without it.
        expect(results.filter((r) => !r.owned).every((r) => r.row!.recoveryPoint === 'H1_DONE')).toBe(true);
        expect(ran).toBe(1);
        expect(await effects('f4')).toBe(1);
      });
    });

    it('commits work, recovery point and data together in a phase write', async () => {
      await open();
      const admitted = await store.admit(input('k1'));
      if (!admitted.owned) throw new Error('not owned');
      const result = await store.write(
        admitted.lease,
        { kind: 'phase', recoveryPoint: 'H1_DONE', data: { a: 1 }, dataFrom: (changed) => ({ changed }), leaseMs: 10_000 },
        effect('k1'),
      );
      expect(result).toEqual({ ok: true, value: 1 });
      const row = await store.load(clientId, 'k1');
      expect(row?.recoveryPoint).toBe('H1_DONE');
      expect(row?.data).toEqual({ a: 1, changed: 1 });
      expect(await effects('k1')).toBe(1);
    });

    it('commits nothing of a phase whose work throws', async () => {
      await open();
      const admitted = await store.admit(input('k1'));
      if (!admitted.owned) throw new Error('not owned');
      const failing = store.write(admitted.lease, { kind: 'phase', recoveryPoint: 'H1_DONE', leaseMs: 10_000 }, async (tx) => {
        await effect('k1')(tx);
        throw new Error('step failed');
      });
      await expect(failing).rejects.toThrow('step failed');
      expect((await store.load(clientId, 'k1'))?.recoveryPoint).toBeNull();
      expect(await effects('k1')).toBe(0);
    });

    it('refuses takeover while the lease is live and once the row is finished', async () => {
      await open();
      const admitted = await store.admit(input('k1'));
      if (!admitted.owned) throw new Error('not owned');
      expect(await store.takeOver(clientId, 'k1', 10_000)).toBeNull();
      await store.write(admitted.lease, { kind: 'finish', response: RESPONSE });
      expect(await store.takeOver(clientId, 'k1', 10_000)).toBeNull();
    });

    it('fences the old owner after a takeover: its phase, finish, release and park writes return ok:false and change nothing', async () => {
      await open();
      const old = await expireLease('k1');
      const fresh = await store.takeOver(clientId, 'k1', 10_000);
      expect(fresh).not.toBeNull();
      expect(fresh?.token).not.toBe(old.token);
      expect(await store.takeOver(clientId, 'k1', 10_000)).toBeNull();

      expect(await store.write(old, { kind: 'phase', recoveryPoint: 'H1_DONE', leaseMs: 10_000 }, effect('k1'))).toEqual({ ok: false });
      expect(await store.write(old, { kind: 'finish', response: RESPONSE }, effect('k1'))).toEqual({ ok: false });
      expect((await store.write(old, { kind: 'release', forget: true })).ok).toBe(false);
      expect((await store.write(old, { kind: 'park', retryAfterMs: 1000 })).ok).toBe(false);
      const row = await store.load(clientId, 'k1');
      expect(row).toMatchObject({ state: 'started', recoveryPoint: null, response: null, attempts: 0 });
      expect(await effects('k1')).toBe(0);

      expect((await store.write(fresh!, { kind: 'phase', recoveryPoint: 'H1_DONE', leaseMs: 10_000 }, effect('k1'))).ok).toBe(true);
      expect(await effects('k1')).toBe(1);
    });

    it('fences a stale owner whose commits carry no work: ok:false, nothing changed', async () => {
      await open();
      const old = await expireLease('k1');
      expect(await store.takeOver(clientId, 'k1', 10_000)).not.toBeNull();
      expect(await store.write(old, { kind: 'phase', recoveryPoint: 'EXT1_SENT', data: { risk: 1 }, leaseMs: 10_000 })).toEqual({ ok: false });
      expect(await store.write(old, { kind: 'finish', response: RESPONSE })).toEqual({ ok: false });
      expect(await store.load(clientId, 'k1')).toMatchObject({ state: 'started', recoveryPoint: null, data: {}, response: null });
    });

    it('merges phase data shallowly, in commit order: a later value replaces an earlier one whole, null included', async () => {
      await open();
      const admitted = await store.admit(input('k1'));
      if (!admitted.owned) throw new Error('not owned');
      const { lease } = admitted;
      await store.write(lease, { kind: 'phase', recoveryPoint: 'H1_DONE', data: { a: { x: 1, y: 2 }, b: 'keep', c: 1 }, leaseMs: 10_000 });
      await store.write(lease, { kind: 'phase', recoveryPoint: 'EXT1_SENT', leaseMs: 10_000 });
      await store.write<{ z: number }>(
        lease,
        { kind: 'phase', recoveryPoint: 'EXT1_DONE', data: { a: { x: 3 }, c: 2 }, dataFrom: (result) => ({ c: null, d: result?.z }), leaseMs: 10_000 },
        async () => ({ z: 9 }),
      );
      const row = await store.load(clientId, 'k1');
      expect(row?.recoveryPoint).toBe('EXT1_DONE');
      expect(row?.data).toEqual({ a: { x: 3 }, b: 'keep', c: null, d: 9 });
    });

    it('finishes with the response (given or computed by the work), clears the lease, keeps the data', async () => {
      await open();
      const admitted = await store.admit(input('k1'));
      if (!admitted.owned) throw new Error('not owned');
      await store.write(admitted.lease, { kind: 'phase', recoveryPoint: 'H1_DONE', data: { charge: 'ch_1' }, leaseMs: 10_000 });
      const done = await store.write(
        admitted.lease,
        { kind: 'finish', response: (changed) => ({ ...RESPONSE, body: `{"changed":${changed}}` }) },
        effect('k1'),
      );
      expect(done).toEqual({ ok: true, value: 1 });
      const row = await store.load(clientId, 'k1');
      expect(row).toMatchObject({ state: 'finished', leaseRemainingMs: null, data: { charge: 'ch_1' } });
      expect(row?.response).toEqual({ ...RESPONSE, body: '{"changed":1}' });
      expect(await store.write(admitted.lease, { kind: 'phase', recoveryPoint: 'H2_DONE', leaseMs: 1 })).toEqual({ ok: false });
    });

    it('forgets a released row with no recovery point, so the key executes afresh', async () => {
      await open();
      const admitted = await store.admit(input('k1'));
      if (!admitted.owned) throw new Error('not owned');
      expect((await store.write(admitted.lease, { kind: 'release', forget: true })).ok).toBe(true);
      expect(await store.load(clientId, 'k1')).toBeUndefined();
      expect((await store.admit(input('k1'))).owned).toBe(true);
    });

    it('keeps a released row that has a recovery point, without a lease, ready for takeover', async () => {
      await open();
      const admitted = await store.admit(input('k1'));
      if (!admitted.owned) throw new Error('not owned');
      await store.write(admitted.lease, { kind: 'phase', recoveryPoint: 'EXT1_SENT', leaseMs: 10_000 });
      expect((await store.write(admitted.lease, { kind: 'release', forget: true })).ok).toBe(true);
      const row = await store.load(clientId, 'k1');
      expect(row).toMatchObject({ state: 'started', recoveryPoint: 'EXT1_SENT', leaseRemainingMs: null });
      expect(await store.takeOver(clientId, 'k1', 10_000)).not.toBeNull();
    });

    it('runs application transactions with $n placeholders and rolls them back on a throw', async () => {
      await open();
      await store.transaction(effect('t1'));
      await expect(
        store.transaction(async (tx) => {
          await effect('t2')(tx);
          throw new Error('abort');
        }),
      ).rejects.toThrow('abort');
      const rows = await store.transaction((tx) =>
        tx.all<{ idem_key: string }>('SELECT idem_key FROM contract_effects WHERE client_id = $1 ORDER BY idem_key', [clientId]),
      );
      expect(rows.map((r) => r.idem_key)).toEqual(['t1']);
    });
  });
}
