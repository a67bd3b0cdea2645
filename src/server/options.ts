/**
 * The options every server front end shares — the library's `createIdempotencyHandler`, the
 * framework middleware's `idempotent()` and `oncely serve` (through `createReferenceApp`) — with
 * ONE set of defaults, validated once at construction into a fully resolved shape. An invalid
 * value is an {@link InvalidOptionError} naming the option; no request ever sees it.
 *
 * Why the lease defaults to 30 s for every front end: a lease is how long an owner may go without
 * committing before a duplicate may take its key over. The middleware's handler commits nothing
 * until it answers, so a lease shorter than its slowest run lets a duplicate run it a second time;
 * the reference handler commits at every step, so its lease must outlast the slowest single step
 * (an external call with its timeout). A longer lease costs only this: a crashed owner's key is
 * blocked for one lease (PROTOCOL.md: "a crashed owner blocks its key for one lease"). At 30 s that
 * is half the client's default retry budget (`budgetMs` 60 s), so a client retrying after a crash
 * still takes the key over and gets its answer within its budget, instead of leaving the
 * operation pending. 10 s (the handler's former default) bought a faster recovery at the price of
 * double runs of slow middleware handlers; 30 s was already the middleware's.
 *
 * @module
 */
import { defaultDigest, type FingerprintDigest } from '../fingerprint.js';
import { InvalidOptionError } from './errors/invalid-option-error.js';
import type { ReplayCacheOptions } from './replay-cache.js';
import type { TelemetryOptions } from '../telemetry/types.js';

/** Options shared by the handler, the middleware and the reference app. */
export interface ServerOptions {
  /**
   * How long an owner may go without committing before another request (or the recovery worker)
   * may take its key over, ms: longer than the slowest step (handler) or the slowest run of the
   * route (middleware). A crashed owner's key is free again after one lease. A positive integer,
   * below `ttlMs`.
   * @default 30000
   */
  readonly leaseMs?: number | undefined;
  /**
   * How long a key and its stored response are kept (then reaped), ms: at least the client's
   * longest retry window. An integer above `leaseMs`.
   * @default 86400000 (24 h)
   */
  readonly ttlMs?: number | undefined;
  /**
   * How long a request that finds its key in flight waits for the original's final answer (then
   * answered as a replay) before `409`, ms; `0` answers `409` at once. Never longer than the
   * client's `Prefer: wait=N` nor the owner's lease (see `in-flight.ts`). An integer ≥ 0.
   * @default 5000
   */
  readonly inFlightWaitMs?: number | undefined;
  /**
   * Largest request body accepted, in bytes; larger is `413`. A positive integer.
   * @default 65536
   */
  readonly maxBodyBytes?: number | undefined;
  /**
   * The in-process cache of finished keys that answers replays (and `422`s for a finished key)
   * without a store round trip; `false` turns it off. A finished key never changes until it
   * expires, so the cache cannot answer differently from the store (see `replay-cache.ts`).
   * @default { maxBytes: 8 MiB, maxAgeMs: 60000 }
   */
  readonly replayCache?: ReplayCacheOptions | false | undefined;
  /**
   * The SHA-256 of the request fingerprint, computed for every keyed request (replays and `409`s
   * included). The default is `node:crypto`'s synchronous hash where the platform offers it
   * (Node), else WebCrypto's. Every choice gives identical fingerprints.
   * @default defaultDigest()
   */
  readonly digest?: FingerprintDigest | undefined;
  /**
   * OpenTelemetry spans per request (and, in the handler, per phase and external call), with the
   * key's outcome, never bodies, keys or credentials: pass your `@opentelemetry/api` (see
   * docs/observability.md). None when omitted, at no cost.
   */
  readonly telemetry?: TelemetryOptions | undefined;
}

/** {@link ServerOptions} with every default filled in and every value checked. */
export interface ResolvedServerOptions {
  readonly leaseMs: number;
  readonly ttlMs: number;
  readonly inFlightWaitMs: number;
  readonly maxBodyBytes: number;
  readonly replayCache: ReplayCacheOptions | false;
  readonly digest: FingerprintDigest;
}

/**
 * The one set of defaults (see the module comment for the lease).
 *
 * @example
 * ```ts
 * SERVER_DEFAULTS.leaseMs; // 30000
 * ```
 */
export const SERVER_DEFAULTS = Object.freeze({
  leaseMs: 30_000,
  ttlMs: 86_400_000,
  inFlightWaitMs: 5000,
  maxBodyBytes: 65_536,
  /** The largest response body a built-in store keeps, and so the middleware stores (see {@link resolveResponseCap}). */
  maxResponseBytes: 65_536,
});

/** The value of a numeric option, or its default; an {@link InvalidOptionError} unless an integer of at least `min`. */
export function integerOption(where: string, option: string, value: number | undefined, fallback: number, min: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min) {
    throw new InvalidOptionError(where, option, `must be an integer ≥ ${min}, got ${typeof value === 'number' ? value : JSON.stringify(value)}`);
  }
  return value;
}

/**
 * The middleware's `maxResponseBytes`: the one asked for, else the store's own cap (else the
 * default). Above the store's cap it is refused here, at construction, with an
 * {@link InvalidOptionError} naming both numbers: every response between the two would be
 * delivered once and then lost to the store's refusal, where a cap within the store's stores the
 * "response not stored" notice its replay promises.
 *
 * @example
 * ```ts
 * resolveResponseCap('idempotent', undefined, 1000); // 1000
 * resolveResponseCap('idempotent', 2000, 1000); // throws InvalidOptionError: maxResponseBytes must be at most the store's maxResponseBytes (1000), got 2000
 * ```
 */
export function resolveResponseCap(where: string, requested: number | undefined, storeCap: number | undefined): number {
  const cap = integerOption(where, 'maxResponseBytes', requested, storeCap ?? SERVER_DEFAULTS.maxResponseBytes, 0);
  if (storeCap !== undefined && cap > storeCap) {
    throw new InvalidOptionError(where, 'maxResponseBytes', `must be at most the store's maxResponseBytes (${storeCap}), got ${cap}`);
  }
  return cap;
}

/**
 * Checks and completes the shared options of a front end; `where` names it in errors.
 *
 * @example
 * ```ts
 * resolveServerOptions('createIdempotencyHandler', { leaseMs: 10_000 }).ttlMs; // 86400000
 * resolveServerOptions('idempotent', { leaseMs: -1 }); // throws InvalidOptionError naming leaseMs
 * ```
 */
export function resolveServerOptions(where: string, options: ServerOptions): ResolvedServerOptions {
  const leaseMs = integerOption(where, 'leaseMs', options.leaseMs, SERVER_DEFAULTS.leaseMs, 1);
  const ttlMs = integerOption(where, 'ttlMs', options.ttlMs, SERVER_DEFAULTS.ttlMs, 1);
  // A key reaped while its owner may still hold it would let a retry run it afresh.
  if (leaseMs >= ttlMs) throw new InvalidOptionError(where, 'leaseMs', `must be below ttlMs (${ttlMs}), got ${leaseMs}`);
  if (options.digest !== undefined && typeof options.digest !== 'function') throw new InvalidOptionError(where, 'digest', 'must be a function');
  return {
    leaseMs,
    ttlMs,
    inFlightWaitMs: integerOption(where, 'inFlightWaitMs', options.inFlightWaitMs, SERVER_DEFAULTS.inFlightWaitMs, 0),
    maxBodyBytes: integerOption(where, 'maxBodyBytes', options.maxBodyBytes, SERVER_DEFAULTS.maxBodyBytes, 1),
    // Checked by `createReplayCache`, called at construction too.
    replayCache: options.replayCache ?? {},
    digest: options.digest ?? defaultDigest(),
  };
}
