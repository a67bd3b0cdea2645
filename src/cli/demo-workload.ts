/**
 * The demo's chaos workload: concurrent "checkout" workers paying through the oncely client
 * while the server is being crashed, timed out and made unavailable underneath them.
 *
 * Each payment is prepared once (its key journaled before the first attempt), then:
 * - sometimes a second client sends the same key at the same moment (a double click in
 *   another tab): the server answers one of them `409` and the loser retries into a replay;
 * - sometimes a third client sends it again after it succeeded (a reload): a replay.
 *
 * Every HTTP attempt goes through a counting `fetch`, so the statuses the table reports are
 * the ones the clients really saw.
 *
 * @module
 */
import { createClient } from '../client/create-client.js';
import type { ClientOptions } from '../client/options.js';
import { isOncelyError } from '../errors.js';
import { memoryJournal } from '../journal/memory.js';
import type { Journal } from '../journal/types.js';
import type { Random } from './demo-random.js';

/** One payment the demo makes. */
export interface PaymentPlan {
  readonly index: number;
  readonly amount: number;
  readonly reference: string;
  /** A second client sends the same key concurrently. */
  readonly duplicate: boolean;
  /** A third client sends the same key again after it succeeded. */
  readonly resend: boolean;
}

/** What the clients saw, attempt by attempt. */
export interface AttemptStats {
  attempts: number;
  replays: number;
  conflicts: number;
  unknown: number;
  unavailable: number;
  networkErrors: number;
}

/**
 * Plans `count` payments from a seeded generator: amounts a rail accepts (≤ 1 000 000), about
 * one in five sent twice at once and one in ten resent after success.
 *
 * @example
 * ```ts
 * const plans = planPayments(createRandom('42'), 0, 500);
 * ```
 */
export function planPayments(random: Random, from: number, count: number): PaymentPlan[] {
  return Array.from({ length: count }, (_, n) => ({
    index: from + n,
    amount: random.int(100, 250_000),
    reference: `demo-${from + n}`,
    duplicate: random.chance(0.2),
    resend: random.chance(0.1),
  }));
}

/**
 * A fresh {@link AttemptStats} with every counter at zero.
 *
 * @example
 * ```ts
 * const stats = emptyStats();
 * ```
 */
export function emptyStats(): AttemptStats {
  return { attempts: 0, replays: 0, conflicts: 0, unknown: 0, unavailable: 0, networkErrors: 0 };
}

/**
 * A `fetch` that counts every attempt and the statuses the demo cares about.
 *
 * @example
 * ```ts
 * createClient({ baseUrl, journal, fetch: countingFetch(stats) });
 * ```
 */
export function countingFetch(stats: AttemptStats): (request: Request) => Promise<Response> {
  return async (request) => {
    stats.attempts += 1;
    let response: Response;
    try {
      response = await fetch(request);
    } catch (error) {
      stats.networkErrors += 1;
      throw error;
    }
    if (response.status === 409) stats.conflicts += 1;
    else if (response.status === 202) stats.unknown += 1;
    else if (response.status === 503) stats.unavailable += 1;
    if (response.headers.get('idempotency-replay') === 'true') stats.replays += 1;
    return response;
  };
}

/**
 * Client options shared by every demo client: short delays, so chaos resolves in seconds.
 *
 * @example
 * ```ts
 * const client = createClient(demoClientOptions(url, 'test_acme', memoryJournal(), emptyStats()));
 * ```
 */
export function demoClientOptions(url: string, token: string, journal: Journal, stats: AttemptStats): ClientOptions {
  return {
    baseUrl: url,
    headers: { authorization: `Bearer ${token}` },
    journal,
    fetch: countingFetch(stats),
    timeoutMs: 5_000,
    retry: { limit: 40, backoffMs: 50, factor: 2, maxBackoffMs: 400, maxRetryAfterMs: 1_000, budgetMs: 20_000 },
  };
}

/** Options of {@link runWorkload}. */
export interface WorkloadOptions {
  readonly url: string;
  readonly token: string;
  readonly plans: readonly PaymentPlan[];
  readonly concurrency: number;
  readonly stats: AttemptStats;
  /** The main client's journal (the twins use memory journals of their own). */
  readonly journal: Journal;
  /** Called after each payment has an outcome. */
  readonly onSettled?: (succeeded: number) => void;
}

/** What the workload ended with. */
export interface WorkloadResult {
  /** The key of every payment, by plan index. */
  readonly keys: ReadonlyMap<number, string>;
  /** Payments whose main send settled with a 2xx. */
  readonly succeeded: number;
  /** Payments still without a final outcome after the settle phase. */
  readonly unsettled: number;
  /** Payments that got a final non-2xx (never expected in the demo). */
  readonly failed: number;
}

/**
 * Runs the workload, then resumes whatever is still pending until it settles (or 60 s pass).
 *
 * @example
 * ```ts
 * const result = await runWorkload({ url, token: 'test_acme', plans, concurrency: 8, stats, journal: memoryJournal() });
 * ```
 */
export async function runWorkload(options: WorkloadOptions): Promise<WorkloadResult> {
  const client = createClient(demoClientOptions(options.url, options.token, options.journal, options.stats));
  const twin = createClient(demoClientOptions(options.url, options.token, memoryJournal(), options.stats));
  const late = createClient(demoClientOptions(options.url, options.token, memoryJournal(), options.stats));
  const keys = new Map<number, string>();
  let succeeded = 0;
  let failed = 0;
  let next = 0;

  const payOne = async (plan: PaymentPlan): Promise<void> => {
    const json = { amount: plan.amount, currency: 'EUR', reference: plan.reference };
    const op = await client.prepare('POST', 'v1/payments', { json });
    keys.set(plan.index, op.key);
    const sends: Array<Promise<unknown>> = [op.send()];
    if (plan.duplicate) sends.push(twin.post('v1/payments', { json, key: op.key }));
    const [main] = await Promise.allSettled(sends);
    if (main?.status === 'fulfilled') {
      succeeded += 1;
      options.onSettled?.(succeeded);
      if (plan.resend) await late.post('v1/payments', { json, key: op.key }).catch(() => undefined);
    } else if (isOncelyError(main?.reason) && main.reason.code !== 'OPERATION_PENDING' && main.reason.code !== 'ABORTED') {
      failed += 1;
    }
    // Otherwise the outcome is unknown: it stays pending in the journal for the settle phase.
  };

  const worker = async (): Promise<void> => {
    while (next < options.plans.length) {
      const plan = options.plans[next] as PaymentPlan;
      next += 1;
      await payOne(plan);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, options.concurrency) }, worker));

  // Settle: an unknown outcome is never a failure; keep resuming until the server decides.
  const deadline = Date.now() + 60_000;
  let unsettled = (await client.pending()).length;
  while (unsettled > 0 && Date.now() < deadline) {
    for (const outcome of await client.resume()) {
      if (outcome.state === 'succeeded') {
        succeeded += 1;
        options.onSettled?.(succeeded);
      } else if (outcome.state === 'failed') {
        failed += 1;
      }
    }
    unsettled = (await client.pending()).length;
    if (unsettled > 0) await new Promise((resolve) => setTimeout(resolve, 250));
  }
  await Promise.all([client.close(), twin.close(), late.close()]);
  return { keys, succeeded, unsettled, failed };
}
