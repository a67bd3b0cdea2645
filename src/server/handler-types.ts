/**
 * The types of the idempotency handler (`handler.ts`): its options, the handler itself and what
 * a recovery did with a row.
 *
 * @module
 */
import type { ServerMetrics } from './metrics.js';
import type { ServerOptions } from './options.js';
import type { PhaseHooks } from './phases.js';
import type { KeyRow, KeyStore } from './store/types.js';
import type { IdempotentOperation } from './types.js';

/** Options of {@link createIdempotencyHandler}; the lease, TTL, wait, body cap, cache and digest are the server options every front end shares (`ServerOptions`). */
export interface IdempotencyHandlerOptions extends ServerOptions {
  /** Where keys, leases and recovery points live (and the app's own tables). */
  readonly store: KeyStore;
  /** The operations made idempotent, matched by exact method and path. */
  readonly operations: ReadonlyArray<IdempotentOperation<unknown>>;
  /** Maps a request to its caller's client id, or `null` (answered `401`). Any string: identifiers built from it are length-prefixed. */
  readonly authenticate: (request: Request) => string | null | Promise<string | null>;
  /**
   * UUID namespace of the derived keys `Kn` sent to external systems.
   * @default DEFAULT_NAMESPACE
   */
  readonly namespace?: string | undefined;
  /** Hooks called as phases commit (fault injection). */
  readonly hooks?: PhaseHooks | undefined;
  /** Counters to update; a fresh set when omitted. */
  readonly metrics?: ServerMetrics | undefined;
  /**
   * Backoff of a parked row (outcome unknown): `min(maxMs, baseMs · 2^attempts)`.
   * @default { baseMs: 1000, maxMs: 60000 }
   */
  readonly parkBackoff?: { readonly baseMs: number; readonly maxMs: number } | undefined;
}

/** What {@link IdempotencyHandler.resume} did with a row. */
export type RecoveryOutcome = 'finished' | 'pending' | 'transient' | 'lost' | 'busy' | 'unresumable';

/**
 * The handler built by {@link createIdempotencyHandler}.
 *
 * @example
 * ```ts
 * const fetch = async (request: Request) => (await handler.handle(request)) ?? new Response(null, { status: 404 });
 * ```
 */
export interface IdempotencyHandler {
  /** Answers a request, or resolves to `undefined` when no operation matches its method and path. */
  handle(request: Request): Promise<Response | undefined>;
  /** Takes over a started row whose lease is gone and runs it from its recovery point (the recovery worker's entry). */
  resume(row: KeyRow): Promise<RecoveryOutcome>;
  readonly metrics: ServerMetrics;
}
