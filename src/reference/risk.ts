/**
 * External system 1, simulated: a risk check that scores a payment.
 *
 * It behaves like a real third party as far as the payment service can tell: it keeps its own
 * table (`risk_checks`), written in its own transaction and never inside a phase of the
 * caller; it honours its idempotency key (a second check with the same key is a no-op that
 * returns the first result); it can be probed by key; and it obeys the `ext1` faults.
 *
 * @module
 */
import type { KeyStore } from '../server/store/types.js';
import type { Faults } from './faults.js';
import { insertOnce } from './insert-once.js';

/** The answer of a risk check or a probe. */
export type RiskReply =
  | { readonly status: 'ok'; readonly riskId: string; readonly score: number }
  /** Nothing came back: the check may or may not have been recorded. */
  | { readonly status: 'timeout' }
  /** The system refused to work (503): certainly nothing recorded. */
  | { readonly status: 'unavailable' }
  /** A probe found no check under that key. */
  | { readonly status: 'absent' };

/** Options of {@link createRiskSystem}. */
export interface RiskSystemOptions {
  /** The database the system keeps its table in (the reference app shares its own). */
  readonly store: KeyStore;
  readonly faults: Faults;
}

/** The simulated risk check. */
export interface RiskSystem {
  /** Scores a payment under the system's idempotency key. */
  check(systemKey: string, request: { readonly clientId: string; readonly amount: number }): Promise<RiskReply>;
  /** Looks a check up by its idempotency key. */
  probe(systemKey: string): Promise<RiskReply>;
}

interface RiskRow {
  readonly risk_id: string;
  readonly score: number | string;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** A deterministic score, so that a repeated check could not disagree with the first anyway. */
function score(amount: number): number {
  return Math.min(99, Math.floor(Math.log10(amount + 1) * 10));
}

/**
 * Creates the simulated risk system over the app's store.
 *
 * @example
 * ```ts
 * const risk = createRiskSystem({ store, faults: createFaults() });
 * await risk.check('8f6c…', { clientId: 'acme', amount: 1250 }); // { status: 'ok', riskId: 'risk_…', score: 30 }
 * ```
 */
export function createRiskSystem(options: RiskSystemOptions): RiskSystem {
  const { store, faults } = options;
  const find = (systemKey: string): Promise<RiskRow | undefined> =>
    store.transaction((tx) => tx.get<RiskRow>('SELECT risk_id, score FROM risk_checks WHERE system_key = $1', [systemKey]));
  const reply = (row: RiskRow): RiskReply => ({ status: 'ok', riskId: row.risk_id, score: Number(row.score) });
  return {
    async check(systemKey, request) {
      if (faults.fires('unavailable', 'ext1')) return { status: 'unavailable' };
      if (faults.fires('lost', 'ext1')) return { status: 'timeout' };
      const delay = faults.delayMs('ext1');
      if (delay > 0) await sleep(delay);
      const row = await store.transaction(async (tx) => {
        await insertOnce(
          tx,
          'INSERT INTO risk_checks (system_key, client_id, risk_id, amount, score, created_at) VALUES ($1, $2, $3, $4, $5, $6)',
          'system_key',
          [systemKey, request.clientId, `risk_${crypto.randomUUID()}`, request.amount, score(request.amount), Date.now()],
        );
        return tx.get<RiskRow>('SELECT risk_id, score FROM risk_checks WHERE system_key = $1', [systemKey]);
      });
      // The check is recorded; a timeout now loses only the reply.
      if (faults.fires('timeout', 'ext1') || row === undefined) return { status: 'timeout' };
      return reply(row);
    },
    async probe(systemKey) {
      if (faults.fires('probe-timeout', 'ext1')) return { status: 'timeout' };
      const row = await find(systemKey);
      return row === undefined ? { status: 'absent' } : reply(row);
    },
  };
}
