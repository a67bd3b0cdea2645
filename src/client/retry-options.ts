/**
 * The client's retry options and their defaults, normalised once (ky's
 * `normalizeRetryOptions` habit) into the shape the retry policy works with.
 *
 * @module
 */
import { ErrorCode, OncelyError } from '../errors/oncely-error.js';

/**
 * How attempts are retried. Every field is optional; see each `@default`. All durations are
 * milliseconds.
 *
 * @example
 * ```ts
 * createClient({ baseUrl, journal, retry: { limit: 8, backoffMs: 200, maxRetryAfterMs: 10_000, budgetMs: 120_000 } });
 * ```
 */
export interface RetryOptions {
  /**
   * Retries after the first attempt (so `limit: 5` means at most 6 attempts). Final answers
   * (`2xx`, `4xx` other than `409`/`429`) are never retried whatever the limit. By default
   * only `budgetMs` bounds the retries: a count runs out during a crash's connection errors,
   * before the restarted server's lease on the key has ended.
   * @default Infinity
   */
  readonly limit?: number;
  /**
   * Delay before the first computed retry, in milliseconds; later ones grow by `factor`.
   * @default 300
   */
  readonly backoffMs?: number;
  /**
   * Growth factor of the computed backoff.
   * @default 2
   */
  readonly factor?: number;
  /**
   * Upper bound of one computed backoff, in milliseconds.
   * @default 10_000
   */
  readonly maxBackoffMs?: number;
  /**
   * Full jitter on computed backoff (a uniform delay in `[0, backoff]`), so that many clients
   * failing together do not retry together. Never applied to a server-given `Retry-After`.
   * @default true
   */
  readonly jitter?: boolean;
  /**
   * Longest `Retry-After` honoured, in milliseconds; a longer one is waited for this long.
   * @default 30_000
   */
  readonly maxRetryAfterMs?: number;
  /**
   * Total time budget of one `send()`, in milliseconds: no retry is scheduled that would
   * start after it. When it runs out on an unknown outcome, the operation stays pending.
   * The default outlasts a server that crashed holding the key and restarted: its lease (10 s
   * for `createIdempotencyHandler` and `oncely serve`, 30 s for the middleware) plus the
   * in-flight wait a duplicate is held for (5 s), so the retry that follows takes the key over.
   * @default 60_000
   */
  readonly budgetMs?: number;
}

/**
 * {@link RetryOptions} with every default applied: what the retry policy works with.
 *
 * @example
 * ```ts
 * const retry: ResolvedRetryOptions = { ...DEFAULT_RETRY, jitter: false };
 * ```
 */
export type ResolvedRetryOptions = { readonly [K in keyof RetryOptions]-?: Exclude<RetryOptions[K], undefined> };

/**
 * The retry defaults (see {@link RetryOptions}).
 *
 * @example
 * ```ts
 * DEFAULT_RETRY.budgetMs; // 60_000: retries until a minute is spent (DEFAULT_RETRY.limit is Infinity)
 * ```
 */
export const DEFAULT_RETRY: ResolvedRetryOptions = {
  limit: Number.POSITIVE_INFINITY,
  backoffMs: 300,
  factor: 2,
  maxBackoffMs: 10_000,
  jitter: true,
  maxRetryAfterMs: 30_000,
  budgetMs: 60_000,
};

/**
 * `value` when it is a finite number ≥ 0; a configuration error naming the option otherwise.
 *
 * @internal
 */
export const nonNegative = (name: string, value: number): number => {
  if (!Number.isFinite(value) || value < 0) {
    throw new OncelyError(ErrorCode.Config, `createClient: ${name} must be a finite number ≥ 0, got ${String(value)}`);
  }
  return value;
};

/**
 * Merges `retry` over {@link DEFAULT_RETRY} and validates it.
 *
 * @internal
 */
export function normalizeRetryOptions(retry: RetryOptions = {}): ResolvedRetryOptions {
  const merged = { ...DEFAULT_RETRY, ...Object.fromEntries(Object.entries(retry).filter(([, v]) => v !== undefined)) };
  return {
    // Infinity is the default: no count, the time budget alone.
    limit: merged.limit === Number.POSITIVE_INFINITY ? merged.limit : Math.floor(nonNegative('retry.limit', merged.limit)),
    backoffMs: nonNegative('retry.backoffMs', merged.backoffMs),
    factor: Math.max(1, nonNegative('retry.factor', merged.factor)),
    maxBackoffMs: nonNegative('retry.maxBackoffMs', merged.maxBackoffMs),
    jitter: merged.jitter,
    maxRetryAfterMs: nonNegative('retry.maxRetryAfterMs', merged.maxRetryAfterMs),
    budgetMs: nonNegative('retry.budgetMs', merged.budgetMs),
  };
}
