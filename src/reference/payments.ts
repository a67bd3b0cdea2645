/**
 * `POST /v1/payments` as an {@link IdempotentOperation}: five steps, six recovery points.
 *
 * ```
 * step               commits (one transaction each)                        recovery point
 * ─────────────────  ────────────────────────────────────────────────────  ──────────────
 * H1 create          payments row (status created) + step log              H1_DONE
 * ext1 risk check    — (EXT1_SENT before the call, K1)                     EXT1_SENT
 *                    risk id + score into the key row's data               EXT1_DONE
 * H2 authorise       payments row → authorised + step log                  H2_DONE
 * ext2 rail charge   — (EXT2_SENT before the call, K2)                     EXT2_SENT
 *                    charge id + applied/declined into the key row's data  EXT2_DONE
 * H3 post            applied: payment succeeded + ledger entry → 201       finished
 *                    declined: payment declined, no ledger entry → 402
 * ```
 *
 * A decline is the rail's answer to the charge, not a failure of the call, so it comes back as a
 * `done` outcome and H3 turns it into the stored `402`: the payment row then records the decline
 * in the same transaction that stores the response, which a bare `refused` outcome could not do.
 *
 * @module
 */
import { v7 as uuidv7 } from 'uuid';
import { numberLiteral } from '../server/json-text.js';
import { ProblemType, problemBody } from '../server/problems.js';
import type { StoredResponse, Tx } from '../server/store/types.js';
import type { ExternalOutcome, IdempotentOperation, ParseResult, ProbeOutcome, StepContext } from '../server/types.js';
import { RecoveryPoint } from './faults.js';
import type { Rail, RailReply } from './rails.js';
import type { RiskReply, RiskSystem } from './risk.js';

/** A validated payment request. */
export interface PaymentInput {
  /** Minor units, ≥ 1. */
  readonly amount: number;
  /** ISO 4217-shaped: three upper-case letters. */
  readonly currency: string;
  /** The caller's end-to-end reference, at most 140 characters. */
  readonly reference: string;
}

/** The `201` body of a payment (and of `GET /v1/payments/:id` for a succeeded one). */
export interface PaymentBody {
  readonly id: string;
  readonly status: string;
  readonly amount: number;
  readonly currency: string;
  readonly reference: string;
  readonly created_at: string;
}

/** Options of {@link createPaymentOperation}. */
export interface PaymentOperationOptions {
  readonly risk: RiskSystem;
  readonly rail: Rail;
}

/** How long a caller should wait after an external system answered 503. */
const UNAVAILABLE_RETRY_MS = 1000;
const FIELDS = new Set(['amount', 'currency', 'reference']);

/**
 * Validates a payment body: exactly `amount` (integer ≥ 1), `currency` (`/^[A-Z]{3}$/`) and
 * `reference` (string of at most 140 characters).
 *
 * @example
 * ```ts
 * parsePayment({ amount: 1250, currency: 'EUR', reference: 'inv-7' }); // { ok: true, input: {...} }
 * parsePayment({ amount: 0, currency: 'EUR', reference: '' });         // { ok: false, detail: 'amount must be ...' }
 * ```
 */
export function parsePayment(body: unknown, text?: string): ParseResult<PaymentInput> {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    return { ok: false, detail: 'the body must be a JSON object {"amount", "currency", "reference"}' };
  }
  const fields = body as Record<string, unknown>;
  const unknown = Object.keys(fields).filter((name) => !FIELDS.has(name));
  if (unknown.length > 0) return { ok: false, detail: `unknown field(s): ${unknown.join(', ')}` };
  const { amount, currency, reference } = fields;
  if (typeof amount !== 'number' || !Number.isSafeInteger(amount) || amount < 1) {
    return { ok: false, detail: 'amount must be an integer number of minor units, at least 1' };
  }
  // As the client wrote it: 12.9999999999999999 parses to 13, and 1e3 to 1000; neither is an integer literal.
  const literal = text === undefined ? undefined : numberLiteral(text, 'amount');
  if (literal !== undefined && !/^\d+$/.test(literal)) {
    return { ok: false, detail: `amount must be written as an integer number of minor units, got ${literal}` };
  }
  if (typeof currency !== 'string' || !/^[A-Z]{3}$/.test(currency)) {
    return { ok: false, detail: 'currency must be three upper-case letters, e.g. "EUR"' };
  }
  if (typeof reference !== 'string' || [...reference].length > 140) {
    return { ok: false, detail: 'reference must be a string of at most 140 characters' };
  }
  return { ok: true, input: { amount, currency, reference } };
}

function json(status: number, body: unknown, headers: Readonly<Record<string, string>> = {}): StoredResponse {
  return { status, headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) };
}

function logStep(tx: Tx, clientId: string, paymentId: string, step: string): Promise<number> {
  return tx.run('INSERT INTO payment_steps (client_id, payment_id, step, at) VALUES ($1, $2, $3, $4)', [clientId, paymentId, step, Date.now()]);
}

function paymentId(ctx: StepContext<PaymentInput>): string {
  const id = ctx.data['paymentId'];
  if (typeof id !== 'string') throw new Error(`payment ${ctx.clientId}/${ctx.key}: no payment id in the committed data`);
  return id;
}

function riskOutcome(reply: RiskReply): ProbeOutcome {
  switch (reply.status) {
    case 'ok':
      return { outcome: 'done', data: { riskId: reply.riskId, riskScore: reply.score } };
    case 'timeout':
      return { outcome: 'unknown' };
    case 'unavailable':
      return { outcome: 'unavailable', retryAfterMs: UNAVAILABLE_RETRY_MS };
    case 'absent':
      return { outcome: 'absent' };
  }
}

function railOutcome(reply: RailReply): ProbeOutcome {
  switch (reply.status) {
    case 'applied':
    case 'declined':
      return { outcome: 'done', data: { chargeId: reply.chargeId, chargeStatus: reply.status } };
    case 'timeout':
      return { outcome: 'unknown' };
    case 'unavailable':
      return { outcome: 'unavailable', retryAfterMs: UNAVAILABLE_RETRY_MS };
    case 'absent':
      return { outcome: 'absent' };
  }
}

/** A call never finds "absent": that is a probe's answer only. */
function callOutcome(outcome: ProbeOutcome): ExternalOutcome {
  return outcome.outcome === 'absent' ? { outcome: 'unknown' } : outcome;
}

/**
 * Creates the payment operation over the two simulated external systems.
 *
 * @example
 * ```ts
 * const payments = createPaymentOperation({ risk: createRiskSystem({ store, faults }), rail: createRail({ store, faults }) });
 * const handler = createIdempotencyHandler({ store, operations: [payments], authenticate });
 * ```
 */
export function createPaymentOperation(options: PaymentOperationOptions): IdempotentOperation<PaymentInput> {
  const { risk, rail } = options;
  return {
    method: 'POST',
    path: '/v1/payments',
    parse: parsePayment,
    steps: [
      {
        kind: 'local',
        point: RecoveryPoint.H1Done,
        async run(ctx, tx) {
          const id = `pay_${uuidv7()}`;
          const now = Date.now();
          const { amount, currency, reference } = ctx.input;
          await tx.run(
            `INSERT INTO payments (id, client_id, idempotency_key, amount, currency, reference, status, created_at, updated_at)
             VALUES ($1, $2, $3, $4, $5, $6, 'created', $7, $7)`,
            [id, ctx.clientId, ctx.key, amount, currency, reference, now],
          );
          await logStep(tx, ctx.clientId, id, 'H1');
          return { paymentId: id, createdAt: now };
        },
      },
      {
        kind: 'external',
        system: 1,
        sent: RecoveryPoint.Ext1Sent,
        done: RecoveryPoint.Ext1Done,
        call: async (ctx, k1) => callOutcome(riskOutcome(await risk.check(k1, { clientId: ctx.clientId, amount: ctx.input.amount }))),
        probe: async (_ctx, k1) => riskOutcome(await risk.probe(k1)),
      },
      {
        kind: 'local',
        point: RecoveryPoint.H2Done,
        async run(ctx, tx) {
          const id = paymentId(ctx);
          await tx.run(`UPDATE payments SET status = 'authorised', risk_id = $1, updated_at = $2 WHERE id = $3`, [String(ctx.data['riskId']), Date.now(), id]);
          await logStep(tx, ctx.clientId, id, 'H2');
        },
      },
      {
        kind: 'external',
        system: 2,
        sent: RecoveryPoint.Ext2Sent,
        done: RecoveryPoint.Ext2Done,
        call: async (ctx, k2) => callOutcome(railOutcome(await rail.charge(k2, { clientId: ctx.clientId, ...ctx.input }))),
        probe: async (_ctx, k2) => railOutcome(await rail.probe(k2)),
      },
    ],
    final: {
      kind: 'final',
      async run(ctx, tx) {
        const id = paymentId(ctx);
        const { amount, currency, reference } = ctx.input;
        const declined = ctx.data['chargeStatus'] === 'declined';
        const status = declined ? 'declined' : 'succeeded';
        await tx.run('UPDATE payments SET status = $1, charge_id = $2, updated_at = $3 WHERE id = $4', [status, String(ctx.data['chargeId']), Date.now(), id]);
        await logStep(tx, ctx.clientId, id, 'H3');
        if (declined) {
          return json(402, problemBody(ProblemType.Declined, `the rail declined ${amount} ${currency}: above its limit`), {
            'content-type': 'application/problem+json',
          });
        }
        await tx.run(
          `INSERT INTO ledger_entries (id, client_id, payment_id, amount, currency, idempotency_key, created_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7)`,
          [`le_${uuidv7()}`, ctx.clientId, id, amount, currency, ctx.key, Date.now()],
        );
        const body: PaymentBody = {
          id,
          status,
          amount,
          currency,
          reference,
          created_at: new Date(Number(ctx.data['createdAt'])).toISOString(),
        };
        return json(201, body, { location: `/v1/payments/${id}` });
      },
    },
  };
}
