/**
 * External system 2, simulated: the payment rail that moves the money — the irreversible effect.
 *
 * Like {@link createRiskSystem}'s system it keeps its own table (`rail_charges`), written in its
 * own transaction and never inside a phase of the caller; honours its idempotency key (a second
 * charge with the same key is a no-op that returns the first result, a decline included); can be
 * probed by key; and obeys the `ext2` faults. Amounts above {@link RAIL_LIMIT} are declined: the
 * decline is remembered under its key but is not a charge.
 *
 * @module
 */
import type { KeyStore } from '../server/store/types.js';
import type { Faults } from './faults.js';
import { insertOnce } from './insert-once.js';

/** The largest amount (minor units) the rail accepts; anything above is declined. */
export const RAIL_LIMIT = 1_000_000;

/** What the rail recorded under a key. */
export const ChargeStatus = {
  Applied: 'applied',
  Declined: 'declined',
} as const;

/** One of {@link ChargeStatus}'s values. */
export type ChargeStatus = (typeof ChargeStatus)[keyof typeof ChargeStatus];

/** The answer of a charge or a probe. */
export type RailReply =
  | { readonly status: ChargeStatus; readonly chargeId: string }
  /** Nothing came back: the charge may or may not have been applied. */
  | { readonly status: 'timeout' }
  /** The rail refused to work (503): certainly nothing applied. */
  | { readonly status: 'unavailable' }
  /** A probe found nothing under that key. */
  | { readonly status: 'absent' };

/** A charge as the rail reports it (`GET /v1/rail/charges`). */
export interface RailCharge {
  readonly charge_id: string;
  readonly amount: number;
  readonly currency: string;
  readonly reference: string;
  readonly created_at: string;
}

/** What a charge instruction carries. */
export interface ChargeRequest {
  readonly clientId: string;
  readonly amount: number;
  readonly currency: string;
  readonly reference: string;
}

/** Options of {@link createRail}. */
export interface RailOptions {
  /** The database the rail keeps its table in (the reference app shares its own). */
  readonly store: KeyStore;
  readonly faults: Faults;
}

/** The simulated rail. */
export interface Rail {
  /** Applies (or declines) a charge under the rail's idempotency key. */
  charge(systemKey: string, request: ChargeRequest): Promise<RailReply>;
  /** Looks a charge up by its idempotency key. */
  probe(systemKey: string): Promise<RailReply>;
  /** The charges the rail applied for a caller, oldest first (declines are not charges). */
  charges(clientId: string): Promise<RailCharge[]>;
}

interface ChargeRow {
  readonly charge_id: string;
  readonly status: string;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function reply(row: ChargeRow): RailReply {
  return { status: row.status === ChargeStatus.Declined ? ChargeStatus.Declined : ChargeStatus.Applied, chargeId: row.charge_id };
}

/**
 * Creates the simulated rail over the app's store.
 *
 * @example
 * ```ts
 * const rail = createRail({ store, faults: createFaults() });
 * await rail.charge('5d1e…', { clientId: 'acme', amount: 1250, currency: 'EUR', reference: 'inv-7' });
 * // { status: 'applied', chargeId: 'ch_…' }
 * ```
 */
export function createRail(options: RailOptions): Rail {
  const { store, faults } = options;
  const select = 'SELECT charge_id, status FROM rail_charges WHERE system_key = $1';
  return {
    async charge(systemKey, request) {
      if (faults.fires('unavailable', 'ext2')) return { status: 'unavailable' };
      if (faults.fires('lost', 'ext2')) return { status: 'timeout' };
      const delay = faults.delayMs('ext2');
      if (delay > 0) await sleep(delay);
      const status = request.amount > RAIL_LIMIT ? ChargeStatus.Declined : ChargeStatus.Applied;
      const row = await store.transaction(async (tx) => {
        await insertOnce(
          tx,
          `INSERT INTO rail_charges (system_key, client_id, charge_id, amount, currency, reference, status, created_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
          'system_key',
          [systemKey, request.clientId, `ch_${crypto.randomUUID()}`, request.amount, request.currency, request.reference, status, Date.now()],
        );
        return tx.get<ChargeRow>(select, [systemKey]);
      });
      // The charge is applied; a timeout now loses only the reply — the case that must never be retried blindly.
      if (faults.fires('timeout', 'ext2') || row === undefined) return { status: 'timeout' };
      return reply(row);
    },
    async probe(systemKey) {
      if (faults.fires('probe-timeout', 'ext2')) return { status: 'timeout' };
      const row = await store.transaction((tx) => tx.get<ChargeRow>(select, [systemKey]));
      return row === undefined ? { status: 'absent' } : reply(row);
    },
    async charges(clientId) {
      const rows = await store.transaction((tx) =>
        tx.all<{ charge_id: string; amount: number | string; currency: string; reference: string; created_at: number | string }>(
          `SELECT charge_id, amount, currency, reference, created_at FROM rail_charges
           WHERE client_id = $1 AND status = $2 ORDER BY created_at, charge_id`,
          [clientId, ChargeStatus.Applied],
        ),
      );
      return rows.map((row) => ({
        charge_id: row.charge_id,
        amount: Number(row.amount),
        currency: row.currency,
        reference: row.reference,
        created_at: new Date(Number(row.created_at)).toISOString(),
      }));
    },
  };
}
