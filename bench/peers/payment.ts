/**
 * The one payment handler every peer guards, so that the only thing that differs between the
 * peers' figures is the idempotency layer in front of it.
 *
 * A payment is: validate the body → record the charge (the effect; one row in the app's
 * database, the "executions" every scenario counts) → the rest of the work (a receipt; a
 * configurable delay, or a long hold for requests whose reference starts with `hold`, which is
 * where the crash scenario kills the server) → a `201` with the payment.
 *
 * Peers keep the app database (SQLite, WAL) separate from their key store (memory or Redis),
 * as an application using them would. oncely commits the same row through its store's
 * transaction, in the same commit as the recovery point (see `oncely-app.ts`).
 *
 * @module
 */
import Database from 'better-sqlite3';

/** The payment body, the same shape as the reference server's. */
export interface PaymentInput {
  readonly amount: number;
  readonly currency: string;
  readonly reference: string;
}

/** The `201` body. */
export interface PaymentResult {
  readonly id: string;
  readonly status: 'succeeded';
  readonly amount: number;
  readonly currency: string;
  readonly reference: string;
  readonly created_at: string;
}

/** The table every peer's effect lands in; identical DDL in both dialects. */
export const EXECUTIONS_DDL = `CREATE TABLE IF NOT EXISTS bench_executions (
  id TEXT PRIMARY KEY, reference TEXT NOT NULL, amount INTEGER NOT NULL, created_at TEXT NOT NULL)`;

/** Records a charge; `$n` placeholders, as oncely's `Tx` and `pg` take them ({@link chargeParams}). */
export const CHARGE_SQL = 'INSERT INTO bench_executions (id, reference, amount, created_at) VALUES ($1, $2, $3, $4)';

/** The values of {@link CHARGE_SQL}, in order. */
export const chargeParams = (payment: PaymentResult): unknown[] => [payment.id, payment.reference, payment.amount, payment.created_at];

/** Counts charges; its row becomes an {@link ExecutionCount} through {@link toCount}. */
export const COUNT_SQL = 'SELECT count(*) AS executions, count(DISTINCT reference) AS distinct_refs FROM bench_executions';

/** A {@link COUNT_SQL} row (PostgreSQL answers counts as strings). */
export const toCount = (row: { executions: number | string; distinct_refs: number | string } | undefined): ExecutionCount => ({
  executions: Number(row?.executions ?? 0),
  distinct: Number(row?.distinct_refs ?? 0),
});

/** How long the work after the effect takes (milliseconds). */
export interface WorkOptions {
  /** Every payment. */
  readonly workMs: number;
  /** Payments whose reference starts with `hold`: long enough to kill the server in the middle. */
  readonly holdMs: number;
}

/**
 * Validates a payment body; a string is the reason it is invalid.
 *
 * @example
 * ```ts
 * parsePayment({ amount: 1250, currency: 'EUR', reference: 'inv-7' }); // the input
 * ```
 */
export function parsePayment(body: unknown): PaymentInput | string {
  if (typeof body !== 'object' || body === null) return 'body must be a JSON object';
  const { amount, currency, reference } = body as Record<string, unknown>;
  if (typeof amount !== 'number' || !Number.isInteger(amount) || amount < 1) return 'amount must be an integer ≥ 1';
  if (typeof currency !== 'string' || !/^[A-Z]{3}$/.test(currency)) return 'currency must be 3 upper-case letters';
  if (typeof reference !== 'string' || reference.length > 140) return 'reference must be a string of at most 140 characters';
  return { amount, currency, reference };
}

let sequence = 0;

/**
 * The payment's identity and response body, minted when the charge is recorded.
 *
 * @example
 * ```ts
 * const payment = newPayment({ amount: 1, currency: 'EUR', reference: 'r' });
 * ```
 */
export function newPayment(input: PaymentInput): PaymentResult {
  sequence += 1;
  return {
    id: `pay_${process.pid.toString(36)}_${Date.now().toString(36)}_${sequence.toString(36)}`,
    status: 'succeeded',
    amount: input.amount,
    currency: input.currency,
    reference: input.reference,
    created_at: new Date().toISOString(),
  };
}

/**
 * The work after the effect: `workMs`, or `holdMs` for a `hold…` reference.
 *
 * @example
 * ```ts
 * await receiptWork(input, { workMs: 0, holdMs: 60_000 });
 * ```
 */
export async function receiptWork(input: PaymentInput, options: WorkOptions): Promise<void> {
  const ms = input.reference.startsWith('hold') ? options.holdMs : options.workMs;
  if (ms > 0) await new Promise((resolve) => setTimeout(resolve, ms));
}

/** Counts of recorded charges. */
export interface ExecutionCount {
  readonly executions: number;
  /** Distinct references charged: `executions - distinct` are duplicates. */
  readonly distinct: number;
}

/** The peers' application database. */
export interface AppDb {
  record(payment: PaymentResult): void;
  count(): ExecutionCount;
  close(): void;
}

/**
 * Opens (creating) the app database the peers record their charges in.
 *
 * @example
 * ```ts
 * const db = openAppDb('/tmp/app.db');
 * db.record(newPayment(input));
 * db.count(); // { executions: 1, distinct: 1 }
 * ```
 */
export function openAppDb(path: string): AppDb {
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.exec(EXECUTIONS_DDL);
  const insert = db.prepare(CHARGE_SQL.replace(/\$\d/g, '?'));
  const count = db.prepare(COUNT_SQL);
  return {
    record(p) {
      insert.run(...chargeParams(p));
    },
    count: () => toCount(count.get() as { executions: number; distinct_refs: number }),
    close() {
      db.close();
    },
  };
}

/**
 * The whole handler as the peers run it: charge, then the receipt work.
 *
 * @example
 * ```ts
 * const payment = await runPayment(input, db, { workMs: 0, holdMs: 0 });
 * ```
 */
export async function runPayment(input: PaymentInput, db: AppDb, options: WorkOptions): Promise<PaymentResult> {
  const payment = newPayment(input);
  db.record(payment);
  await receiptWork(input, options);
  return payment;
}
