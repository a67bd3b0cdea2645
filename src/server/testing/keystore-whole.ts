/**
 * The KeyStore contract for a whole request's transaction (`beginRequest`, the middleware's
 * `transaction: true`, run here through `runWholeRequest`): the key, the work and the stored response commit as one
 * transaction; nothing of it is visible, and nothing is kept, before that commit; a concurrent
 * admission of the key waits for it. Every backend runs it, as it runs `keystore-core.ts`.
 *
 * Registered by `describeKeyStore` (`./describe-key-store.ts`).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { runWholeRequest } from '../store/request-transaction.js';
import type { AdmitInput, KeyStore, StoredResponse, Tx, WholeRequest } from '../store/types.js';

/** The suite's own table, in SQL every dialect accepts (a store migrates it as its dialect's script). */
const TABLE = 'CREATE TABLE IF NOT EXISTS whole_effects (client_id TEXT NOT NULL, idem_key TEXT NOT NULL, n INTEGER NOT NULL)';

/** A gate the test opens: the work waits at it with its transaction open. */
function gate(): { readonly reached: Promise<void>; open(): void; readonly opened: Promise<void>; arrive(): void } {
  let arrive!: () => void;
  let open!: () => void;
  const reached = new Promise<void>((resolve) => (arrive = resolve));
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { reached, opened, open, arrive };
}

/**
 * Runs the whole-request contract against `factory` (a fresh store, migrated by the suite, closed
 * after each test). `boundsWait`: the store honours {@link AdmitInput.waitMs} (PostgreSQL's server;
 * a store whose admissions queue in process, as SQLite's and PGlite's, may ignore it).
 */
export function runWholeRequestContract(name: string, factory: () => Promise<KeyStore>, { boundsWait = false } = {}): void {
  describe(`KeyStore contract, whole request in the admission: ${name}`, () => {
    let store: KeyStore;
    let clientId: string;
    afterEach(async () => {
      await store?.close?.();
    });

    async function open(): Promise<void> {
      store = await factory();
      await store.migrate?.({ [store.dialect]: TABLE });
      clientId = `w${crypto.randomUUID().slice(0, 8)}`;
    }
    const input = (key: string, over: Partial<AdmitInput> = {}): AdmitInput => ({
      clientId,
      key,
      requestHash: 'a'.repeat(64),
      endpoint: 'POST /v1/orders',
      requestBody: '',
      leaseMs: 10_000,
      ttlMs: 86_400_000,
      ...over,
    });
    const effects = async (key: string): Promise<number> => {
      const row = await store.transaction((tx) =>
        tx.get<{ n: number | string }>('SELECT COUNT(*) AS n FROM whole_effects WHERE client_id = $1 AND idem_key = $2', [clientId, key]),
      );
      return Number(row?.n ?? 0);
    };
    /** The request's work: one INSERT, then (optionally) a wait at `at`, a failure, or a body of `bytes`. */
    const whole = (key: string, over: { at?: ReturnType<typeof gate>; fail?: Error; bytes?: number; onRun?: () => void } = {}): WholeRequest<number> => ({
      async work(tx: Tx) {
        over.onRun?.();
        const changed = await tx.run('INSERT INTO whole_effects (client_id, idem_key, n) VALUES ($1, $2, $3)', [clientId, key, 1]);
        if (over.at) {
          over.at.arrive();
          await over.at.opened;
        }
        if (over.fail) throw over.fail;
        return changed;
      },
      response: (changed): StoredResponse => ({
        status: 201,
        headers: { 'content-type': 'application/json' },
        body: over.bytes ? 'x'.repeat(over.bytes) : `{"changed":${changed}}`,
      }),
    });

    it('commits the key, the work and the response together: the owner gets its row finished', async () => {
      await open();
      const result = await runWholeRequest(store, input('w1'), whole('w1'));
      if (!result.owned) throw new Error('not owned');
      expect(result.first).toEqual({ value: 1 });
      expect(result.row).toMatchObject({ state: 'finished', response: { status: 201, body: '{"changed":1}' }, leaseRemainingMs: null });
      expect(await store.load(clientId, 'w1')).toMatchObject({ state: 'finished', response: { status: 201, body: '{"changed":1}' }, leaseRemainingMs: null });
      expect(await effects('w1')).toBe(1);
      // A later admission finds the finished row: a replay.
      const again = await runWholeRequest(store, input('w1'), whole('w1'));
      expect(again).toMatchObject({ owned: false, row: { state: 'finished', response: { body: '{"changed":1}' } } });
      expect(await effects('w1')).toBe(1);
    });

    it('keeps nothing, not even the key, when the work throws, and rejects with its error', async () => {
      await open();
      const boom = new Error('not final');
      await expect(runWholeRequest(store, input('w2'), whole('w2', { fail: boom }))).rejects.toBe(boom);
      expect(await store.load(clientId, 'w2')).toBeUndefined();
      expect(await effects('w2')).toBe(0);
      expect((await store.admit(input('w2'))).owned).toBe(true);
    });

    it('keeps nothing when the response is over the store’s cap', async () => {
      await open();
      await expect(runWholeRequest(store, input('w3'), whole('w3', { bytes: 70_000 }))).rejects.toThrow(/65536|cap|exceeds|larger/i);
      expect(await store.load(clientId, 'w3')).toBeUndefined();
      expect(await effects('w3')).toBe(0);
    });

    it('shows nothing while the work runs; a concurrent admission waits for the COMMIT and finds the row finished', async () => {
      await open();
      const at = gate();
      const owner = runWholeRequest(store, input('w4'), whole('w4', { at }));
      await at.reached;
      let settled = false;
      const duplicate = runWholeRequest(store, input('w4', { waitMs: 30_000 }), whole('w4')).finally(() => (settled = true));
      // Give the duplicate every chance to answer early: it must not.
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(settled).toBe(false);
      at.open();
      expect((await owner).owned).toBe(true);
      expect(await duplicate).toMatchObject({ owned: false, row: { state: 'finished', response: { body: '{"changed":1}' } } });
      expect(await effects('w4')).toBe(1);
    });

    it('lets the concurrent admission own the key when the owner’s transaction rolls back', async () => {
      await open();
      const at = gate();
      const boom = new Error('handler answered 503');
      const owner = runWholeRequest(store, input('w5'), whole('w5', { at, fail: boom }));
      await at.reached;
      const duplicate = runWholeRequest(store, input('w5', { waitMs: 30_000 }), whole('w5'));
      await new Promise((resolve) => setTimeout(resolve, 100));
      at.open();
      await expect(owner).rejects.toBe(boom);
      expect(await duplicate).toMatchObject({ owned: true, row: { state: 'finished' } });
      expect(await effects('w5')).toBe(1);
    });

    // Only where the store honours the wait: SQLite's and PGlite's admissions queue in process.
    if (boundsWait)
      it('answers a concurrent admission “in flight, not yet visible” (row null) once its wait runs out', async () => {
        await open();
        const at = gate();
        const owner = runWholeRequest(store, input('w7'), whole('w7', { at }));
        await at.reached;
        const started = Date.now();
        expect(await runWholeRequest(store, input('w7', { waitMs: 150 }), whole('w7'))).toEqual({ owned: false, row: null });
        expect(Date.now() - started).toBeGreaterThanOrEqual(140);
        at.open();
        expect((await owner).owned).toBe(true);
        // The duplicate's transaction rolled back: the owner's effect alone, the key finished.
        expect(await effects('w7')).toBe(1);
        expect(await store.load(clientId, 'w7')).toMatchObject({ state: 'finished' });
      });

    it('runs the work once for 100 concurrent admissions of one key', { timeout: 60_000 }, async () => {
      await open();
      let ran = 0;
      const results = await Promise.all(
        Array.from({ length: 100 }, () => runWholeRequest(store, input('w6', { waitMs: 30_000 }), whole('w6', { onRun: () => (ran += 1) }))),
      );
      expect(results.filter((r) => r.owned)).toHaveLength(1);
      expect(results.filter((r) => !r.owned).every((r) => r.row?.state === 'finished')).toBe(true);
      expect(ran).toBe(1);
      expect(await effects('w6')).toBe(1);
    });
  });
}
