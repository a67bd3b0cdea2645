/**
 * A Node backend calling another service exactly once per step: a settlement worker that, for
 * each business payment, makes two calls to the payments API — the principal and the fee.
 *
 * The key of each call is derived from `(payment_id, step)`, not minted: the worker keeps no
 * key table, and whatever re-runs a settlement (a crashed job restarted, a queue redelivering
 * the message, an operator re-running the batch) produces the same keys, so the server
 * replays instead of paying twice. The SQLite journal keeps the calls that were in flight when
 * the process died; `resume()` at start-up finishes them.
 *
 * Run it (README.md beside it says how, from an installed package or a clone of the repository):
 *
 * ```sh
 * npx oncely serve --port 8787 &
 * ONCELY_URL=http://127.0.0.1:8787 ONCELY_TOKEN=test_acme npx tsx settle-payment.ts pay_1001 pay_1002
 * ```
 *
 * @module
 */
import { pathToFileURL } from 'node:url';
import { createClient, sqliteJournal, type Client, type OperationResult } from 'oncely/node';

/**
 * This service's own key namespace: two services deriving keys from the same payment ids
 * never share a key.
 */
export const SETTLEMENT_NAMESPACE = '3f0c9d4e-8b1a-5c2d-9e7f-6a5b4c3d2e1f';

/** A business payment to settle (amounts in minor units). */
export interface Settlement {
  readonly paymentId: string;
  readonly amount: number;
  readonly fee: number;
  readonly currency: string;
}

/** What one step did. */
export interface StepOutcome {
  readonly paymentId: string;
  readonly step: 'principal' | 'fee';
  readonly key: string;
  readonly status: number;
  /** `true` when the server answered with the stored result of an earlier run. */
  readonly replayed: boolean;
}

/**
 * Creates the worker's client: SQLite journal, derived keys in {@link SETTLEMENT_NAMESPACE}.
 *
 * @example
 * ```ts
 * const client = settlementClient('http://127.0.0.1:8787', 'test_acme', './settlement-journal.db');
 * ```
 */
export function settlementClient(baseUrl: string, token: string, journalPath: string): Client {
  return createClient({
    baseUrl,
    headers: { authorization: `Bearer ${token}` },
    journal: sqliteJournal({ path: journalPath }),
    namespace: SETTLEMENT_NAMESPACE,
  });
}

/**
 * Settles one payment: the principal, then the fee, each keyed by `(payment_id, step)`.
 *
 * @example
 * ```ts
 * await settle(client, { paymentId: 'pay_1001', amount: 125_000, fee: 250, currency: 'EUR' });
 * await settle(client, { paymentId: 'pay_1001', amount: 125_000, fee: 250, currency: 'EUR' }); // replayed: paid once
 * ```
 */
export async function settle(client: Client, settlement: Settlement): Promise<StepOutcome[]> {
  const steps = [
    { step: 'principal', amount: settlement.amount },
    { step: 'fee', amount: settlement.fee },
  ] as const;
  const outcomes: StepOutcome[] = [];
  for (const { step, amount } of steps) {
    const result: OperationResult = await client.post('v1/payments', {
      json: { amount, currency: settlement.currency, reference: `${settlement.paymentId}/${step}` },
      naturalKey: [settlement.paymentId, step],
    });
    outcomes.push({ paymentId: settlement.paymentId, step, key: result.key, status: result.status, replayed: result.replayed });
  }
  return outcomes;
}

/**
 * The worker's entry: finish what a previous run left pending, then settle the payment ids
 * given on the command line (each for a made-up amount derived from its id).
 *
 * @example
 * ```ts
 * await main(['pay_1001', 'pay_1002']);
 * ```
 */
export async function main(paymentIds: readonly string[]): Promise<number> {
  const client = settlementClient(
    process.env['ONCELY_URL'] ?? 'http://127.0.0.1:8787',
    process.env['ONCELY_TOKEN'] ?? 'test_acme',
    process.env['ONCELY_JOURNAL'] ?? 'settlement-journal.db',
  );
  try {
    for (const outcome of await client.resume()) console.log(JSON.stringify({ resumed: outcome.key, state: outcome.state }));
    for (const paymentId of paymentIds) {
      const amount = 10_000 + ([...paymentId].reduce((sum, char) => sum + char.charCodeAt(0), 0) % 90_000);
      for (const outcome of await settle(client, { paymentId, amount, fee: Math.ceil(amount / 100), currency: 'EUR' })) {
        console.log(JSON.stringify(outcome));
      }
    }
    return 0;
  } finally {
    await client.close();
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  process.exitCode = await main(process.argv.slice(2));
}
