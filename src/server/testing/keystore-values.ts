/**
 * The KeyStore contract, part two: what goes in comes back byte for byte, and a lost lease
 * commits nothing even when the work swallows the error that told it so. Run by every backend
 * next to `keystore-core.ts` (PostgreSQL sends some of its own statements as literal SQL, so
 * that BEGIN and COMMIT share their round trips: hostile text is where that would break).
 *
 * Registered by `describeKeyStore` (`./describe-key-store.ts`).
 */
import { describe, expect, it } from 'vitest';
import type { AdmitInput, KeyStore, Tx } from '../store/types.js';
import { contractHarness } from './keystore-harness.js';

const TABLE = 'CREATE TABLE IF NOT EXISTS contract_values (client_id TEXT NOT NULL, idem_key TEXT NOT NULL, note TEXT NOT NULL)';

/** Text that breaks naive quoting: quotes, backslashes, placeholders, dollar quotes, comments, non-ASCII. */
const HOSTILE = [
  "it's",
  "'; DROP TABLE oncely_keys; --",
  '\\',
  "\\'",
  "E'\\x41'",
  '$1 $2 $$ $fn$ ?1',
  '/* open comment',
  '-- line comment\n; SELECT 1',
  'tab\tnewline\r\nend',
  'Zürich ĳ 日本 😀 \u202Eevil',
].join(' | ');

export function runKeyStoreValuesContract(name: string, factory: () => Promise<KeyStore>): void {
  describe(`KeyStore contract (values): ${name}`, () => {
    const h = contractHarness(factory, TABLE, {
      clientSuffix: "'\\",
      requestHash: 'b'.repeat(64),
      endpoint: `POST /v1/payments?q=${HOSTILE}`,
      requestBody: JSON.stringify({ reference: HOSTILE, pad: 'x'.repeat(60_000) }),
    });
    const note = (key: string) => async (tx: Tx) =>
      tx.run('INSERT INTO contract_values (client_id, idem_key, note) VALUES ($1, $2, $3)', [h.clientId, key, HOSTILE]);
    const notes = async (key: string): Promise<string[]> =>
      (
        await h.store.transaction((tx) =>
          tx.all<{ note: string }>('SELECT note FROM contract_values WHERE client_id = $1 AND idem_key = $2', [h.clientId, key]),
        )
      ).map((row) => row.note);

    it('stores hostile text verbatim through admission, a phase, an outcome mark and the final response', async () => {
      await h.open();
      const key = `k-${HOSTILE}`;
      const admitted = await h.store.admit(h.input(key), {
        phase: { recoveryPoint: 'H1_DONE', data: { given: HOSTILE }, dataFrom: (changed: number | undefined) => ({ changed, also: HOSTILE }), leaseMs: 10_000 },
        work: note(key),
      });
      if (!admitted.owned) throw new Error('not owned');
      expect(admitted.row.data).toEqual({ given: HOSTILE, changed: 1, also: HOSTILE });
      const phase = await h.store.write(
        admitted.lease,
        { kind: 'phase', recoveryPoint: 'H2_DONE', data: { h2: HOSTILE }, dataFrom: () => ({ h2b: HOSTILE }), leaseMs: 10_000 },
        note(key),
      );
      expect(phase.ok).toBe(true);
      expect((await h.store.write(admitted.lease, { kind: 'phase', recoveryPoint: 'EXT1_DONE', data: { ext: HOSTILE }, leaseMs: 10_000 })).ok).toBe(true);
      const response = {
        status: 201,
        headers: { 'x-note': HOSTILE.replace(/[\r\n]/g, ' '), 'content-type': 'application/json' },
        body: JSON.stringify({ note: HOSTILE }),
      };
      expect((await h.store.write(admitted.lease, { kind: 'finish', response: () => response }, note(key))).ok).toBe(true);

      const row = await h.store.load(h.clientId, key);
      expect(row).toMatchObject({
        clientId: h.clientId,
        key,
        endpoint: h.input(key).endpoint,
        requestBody: h.input(key).requestBody,
        state: 'finished',
        response,
      });
      expect(row?.data).toEqual({ given: HOSTILE, changed: 1, also: HOSTILE, h2: HOSTILE, h2b: HOSTILE, ext: HOSTILE });
      expect(Object.keys(row?.response?.headers ?? {})).toEqual(['x-note', 'content-type']);
      expect(await notes(key)).toEqual([HOSTILE, HOSTILE, HOSTILE]);
      // A duplicate admission with the same hostile text finds the row instead of a second one.
      expect((await h.store.admit(h.input(key))).owned).toBe(false);
    });

    it('commits nothing for a lost lease even when the work swallows the error its statement raised', async () => {
      await h.open();
      const admitted = await h.store.admit(h.input('swallow', { leaseMs: 50 }));
      if (!admitted.owned) throw new Error('not owned');
      await new Promise((resolve) => setTimeout(resolve, 120));
      expect(await h.store.takeOver(h.clientId, 'swallow', 10_000)).not.toBeNull();
      let caught: unknown;
      const swallowing = async (tx: Tx): Promise<string> => {
        try {
          await note('swallow')(tx);
        } catch (error) {
          caught = error;
        }
        return 'carried on';
      };
      expect(await h.store.write(admitted.lease, { kind: 'phase', recoveryPoint: 'H1_DONE', leaseMs: 10_000 }, swallowing)).toEqual({ ok: false });
      expect(caught).toBeDefined();
      expect(await h.store.write(admitted.lease, { kind: 'finish', response: { status: 201, headers: {}, body: '' } }, swallowing)).toEqual({ ok: false });
      const row = await h.store.load(h.clientId, 'swallow');
      expect(row).toMatchObject({ state: 'started', recoveryPoint: null, response: null });
      expect(await notes('swallow')).toEqual([]);
    });

    it('ends the transaction of a work that fails while its first statement is still on its way', async () => {
      await h.open();
      const admitted = await h.store.admit(h.input('racing', { leaseMs: 100 }));
      if (!admitted.owned) throw new Error('not owned');
      const failing = h.store.write(admitted.lease, { kind: 'phase', recoveryPoint: 'H1_DONE', leaseMs: 100 }, async (tx) => {
        await Promise.all([note('racing')(tx), Promise.reject(new Error('validation failed'))]);
      });
      await expect(failing).rejects.toThrow('validation failed');
      // Nothing committed, nothing left holding the row: once the lease runs out, it can be taken over.
      await new Promise((resolve) => setTimeout(resolve, 200));
      const taken = await h.store.takeOver(h.clientId, 'racing', 10_000);
      expect(taken).not.toBeNull();
      expect(await h.store.load(h.clientId, 'racing')).toMatchObject({ state: 'started', recoveryPoint: null });
      expect(await notes('racing')).toEqual([]);
    });
  });
}
