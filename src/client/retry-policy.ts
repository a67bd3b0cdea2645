/**
 * The retry policy: one pure function from an attempt's outcome to a decision.
 *
 * | outcome                                   | decision                                    |
 * |-------------------------------------------|---------------------------------------------|
 * | `2xx`                                     | settle (succeeded)                          |
 * | network error, timeout                    | retry after backoff with full jitter        |
 * | `409`, `429`, `503`, `202`                | retry after `Retry-After` (capped, no jitter); backoff when absent |
 * | `500`, `502`, `504`, `408`, other `5xx`   | retry after backoff with full jitter        |
 * | `401`, `403`                              | reject: throw, never retried, the operation stays pending |
 * | `501`, `505`, other `4xx`, `3xx`          | settle (failed): final, never retried       |
 * | claimed by another process (not sent)     | poll after the initial backoff, until the budget runs out |
 * | retry limit or time budget exhausted      | fail: {@link OperationPendingError} (`cause`: the last network error), the operation stays pending |
 *
 * Everything that varies (clock, randomness, elapsed time) comes in as an argument, so the
 * policy is tested without timers.
 *
 * @module
 */
import { OperationPendingError, type OperationRef } from '../errors.js';
import type { ResolvedRetryOptions } from './options.js';

/**
 * What one attempt produced, as the policy sees it.
 *
 * @example
 * ```ts
 * const outcome: AttemptOutcome = { kind: 'response', status: 503, retryAfter: '2' };
 * ```
 */
export type AttemptOutcome =
  /** The server answered. `retryAfter` is the raw `Retry-After` header, or `null`. */
  | { readonly kind: 'response'; readonly status: number; readonly retryAfter: string | null }
  /** No answer: a network error or a timeout. The request may or may not have been applied. */
  | { readonly kind: 'network'; readonly error: unknown }
  /** Not sent: another process or tab holds the operation's claim in a shared journal. */
  | { readonly kind: 'claimed-elsewhere' };

/**
 * What to do after an attempt.
 *
 * @example
 * ```ts
 * const d: RetryDecision = decide(outcome, 1, options);
 * if (d.action === 'retry') await new Promise((resolve) => setTimeout(resolve, d.delayMs));
 * ```
 */
export type RetryDecision =
  | { readonly action: 'retry'; readonly delayMs: number }
  | { readonly action: 'settle' }
  /**
   * Throw the response's typed error without settling: the server executed nothing and the
   * answer is about this process's credentials, so a later `resume()` with valid ones may
   * still complete the operation (PROTOCOL.md: a `401` is not stored as final; a `403` is a
   * refusal of these credentials just the same).
   */
  | { readonly action: 'reject' }
  | { readonly action: 'fail'; readonly error: OperationPendingError };

/**
 * The context {@link decide} needs besides the outcome.
 *
 * @example
 * ```ts
 * const options: DecideOptions = { retry: DEFAULT_RETRY, ref, elapsedMs: 0, now: Date.now(), random: Math.random };
 * ```
 */
export interface DecideOptions {
  readonly retry: ResolvedRetryOptions;
  /** The operation, for the error message. */
  readonly ref: OperationRef;
  /** Milliseconds since this `send()` started. */
  readonly elapsedMs: number;
  /** Attempts made so far across processes (for the error); defaults to `attempt`. */
  readonly totalAttempts?: number;
  /** The current epoch milliseconds, for HTTP-date `Retry-After`. */
  readonly now: number;
  /** A uniform random number in `[0, 1)`, for jitter. */
  readonly random: () => number;
}

/** Statuses whose server-given `Retry-After` is honoured: the key is busy or the server is. */
const WAIT_STATUSES: ReadonlySet<number> = new Set([202, 409, 429, 503]);
/** 5xx answers that are final: the server will never handle this request. */
const FINAL_5XX: ReadonlySet<number> = new Set([501, 505]);
/**
 * Final for this attempt's credentials only: the server did nothing with the request (an
 * authentication or permission check runs before any work), so another token may still
 * complete it.
 */
const UNAUTHORIZED: ReadonlySet<number> = new Set([401, 403]);

/**
 * Parses a `Retry-After` value (delay-seconds or an HTTP-date) into milliseconds from `now`.
 * Returns `null` when absent or unparsable; a date in the past is `0`.
 *
 * @example
 * ```ts
 * parseRetryAfter('2', Date.now()); // 2000
 * parseRetryAfter('Wed, 21 Oct 2026 07:28:00 GMT', Date.now());
 * ```
 */
export function parseRetryAfter(value: string | null, now: number): number | null {
  if (value === null) return null;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  // Only a date-shaped value is tried as a date: Date.parse accepts many odd strings.
  if (!/^[A-Za-z]{3},? /.test(text)) return null;
  const at = Date.parse(text);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

/**
 * The computed backoff before retry number `attempt` (1-based): exponential, capped, with full
 * jitter when enabled.
 *
 * @example
 * ```ts
 * backoffDelay(3, { ...DEFAULT_RETRY, jitter: false }, Math.random); // 1200
 * ```
 */
export function backoffDelay(attempt: number, retry: ResolvedRetryOptions, random: () => number): number {
  const ceiling = Math.min(retry.maxBackoffMs, retry.backoffMs * retry.factor ** Math.max(0, attempt - 1));
  return retry.jitter ? Math.floor(random() * ceiling) : ceiling;
}

function isRetryable(outcome: AttemptOutcome): boolean {
  if (outcome.kind !== 'response') return true;
  const { status } = outcome;
  if (WAIT_STATUSES.has(status)) return true;
  // 408: the server gave up waiting for the request, so it did nothing with it.
  if (status === 408) return true;
  return status >= 500 && !FINAL_5XX.has(status);
}

/**
 * Decides what follows an attempt. `attempt` counts the requests sent by this `send()` so far
 * (1 after the first); a `claimed-elsewhere` outcome sent nothing and is bounded by the time
 * budget alone.
 *
 * @example
 * ```ts
 * const d = decide({ kind: 'response', status: 429, retryAfter: '1' }, 1, {
 *   retry: DEFAULT_RETRY, ref, elapsedMs: 0, now: Date.now(), random: Math.random,
 * });
 * // { action: 'retry', delayMs: 1000 }
 * ```
 */
export function decide(outcome: AttemptOutcome, attempt: number, options: DecideOptions): RetryDecision {
  if (outcome.kind === 'response' && UNAUTHORIZED.has(outcome.status)) return { action: 'reject' };
  if (!isRetryable(outcome)) return { action: 'settle' };
  const { retry } = options;
  const lastStatus = outcome.kind === 'response' ? outcome.status : undefined;
  const claimed = outcome.kind === 'claimed-elsewhere';
  const fail = (reason: string): RetryDecision => ({
    action: 'fail',
    error: new OperationPendingError(options.ref, options.totalAttempts ?? attempt, lastStatus, {
      reason: claimed ? `another process holds its claim; ${reason}` : reason,
      ...(outcome.kind === 'network' ? { cause: outcome.error } : {}),
    }),
  });
  // Waiting for another process's claim sends nothing, so it spends time, not attempts: a
  // crashed process's claim runs out after claimTtlMs and this send then goes ahead.
  if (!claimed && attempt > retry.limit) return fail(`retry limit of ${retry.limit} reached`);
  const serverDelay = outcome.kind === 'response' && WAIT_STATUSES.has(outcome.status) ? parseRetryAfter(outcome.retryAfter, options.now) : null;
  const delayMs = serverDelay === null ? backoffDelay(claimed ? 1 : attempt, retry, options.random) : Math.min(serverDelay, retry.maxRetryAfterMs);
  if (options.elapsedMs + delayMs > retry.budgetMs) return fail(`time budget of ${retry.budgetMs} ms spent`);
  return { action: 'retry', delayMs };
}
