/**
 * The one way a lost lease is signalled inside a store or the phase runner: thrown to unwind a
 * write (rolling its transaction back), caught where the write's {@link Fenced} result is built.
 * PostgreSQL's functions raise the same condition with SQLSTATE `OLOST`.
 *
 * @module
 */
import type { Fenced } from './types.js';

/**
 * Another actor holds the row now: the write in progress commits nothing. A store of one's own
 * throws it (from `oncely/server/store`) to unwind a write whose lease is gone, and the front ends
 * then answer as for a lost lease.
 *
 * @example
 * ```ts
 * import { LeaseLostError } from 'oncely/server/store';
 * throw new LeaseLostError({ message: 'myStore: the lease on "k1" no longer holds the row' });
 * ```
 */
export class LeaseLostError extends Error {
  override readonly name = 'LeaseLostError';
  /** The SQLSTATE the PostgreSQL functions raise for the same condition. */
  readonly code = 'OLOST';

  constructor(options?: { readonly cause?: unknown; readonly message?: string }) {
    super(options?.message ?? 'the lease no longer holds the key row', options?.cause === undefined ? undefined : { cause: options.cause });
  }
}

/**
 * Whether `error` says the lease was lost: a {@link LeaseLostError}, or PostgreSQL's `OLOST`.
 *
 * @example
 * ```ts
 * if (isLeaseLost(error)) return { ok: false };
 * ```
 */
export function isLeaseLost(error: unknown): boolean {
  return error instanceof LeaseLostError || (error as { code?: unknown } | null | undefined)?.code === 'OLOST';
}

/** The {@link Fenced} answer of a write that lost its lease. */
export const LOST: Fenced<never> = Object.freeze({ ok: false });
