/**
 * The types of the framework middleware's neutral core (`guard.ts`): its options, the request
 * as an edge hands it over, what the handler sees, and the guard's decision. Kept apart so the
 * guard, its executions and the body fingerprint import them without importing one another.
 *
 * @module
 * @internal
 */
import type { Answer, WireResponse } from '../answers.js';
import type { LeaseExpiredError } from '../errors/lease-expired-error.js';
import type { ServerOptions } from '../options.js';
import type { KeyStore, Tx } from '../store/types.js';

/** Options shared by every framework's `idempotent()`; the lease, TTL, wait, body cap, cache and digest are the server options every front end shares (`ServerOptions`), with the same defaults as the reference handler's. */
export interface GuardOptions extends ServerOptions {
  /** Where keys, leases and stored responses live: `sqliteKeyStore` or `postgresKeyStore` (migrated). */
  readonly store: KeyStore;
  /**
   * Run the handler inside the transaction that stores its response, and give it that
   * transaction as `tx`: its writes and the key commit together (exactly once). Without it, a
   * crash after the handler's effect and before its response is stored lets a retry run it again.
   * @default false
   */
  readonly transaction?: boolean | undefined;
  /**
   * Largest response body stored for replay, in bytes; a larger one is delivered once and its replay
   * says so (see the README). At most the store's own `maxResponseBytes`: a larger value is an
   * `InvalidOptionError` when the middleware is built. An integer ≥ 0.
   * @default the store's `maxResponseBytes` (65536 for a built-in store left at its default)
   */
  readonly maxResponseBytes?: number | undefined;
  /** HTTP methods guarded; others pass through untouched. @default ['POST', 'PUT', 'PATCH', 'DELETE'] */
  readonly methods?: readonly string[] | undefined;
  /** A request without `Idempotency-Key`: `'reject'` answers `400`; `'pass'` runs the handler unguarded. @default 'reject' */
  readonly keyMissing?: 'reject' | 'pass' | undefined;
  /** Called with a store error (answered `503`) or a lease lost after the handler ran ({@link LeaseExpiredError}). */
  readonly onError?: ((error: unknown, ref: { readonly clientId: string; readonly key: string }) => void) | undefined;
}

/** A request's body as the framework has it. */
export type GuardedBody =
  /** The body as received (no parser ran): fingerprinted as PROTOCOL.md says. */
  | { readonly raw: string | Uint8Array }
  /** What a JSON body parser produced: fingerprinted as its canonical JSON, which equals the raw text's. */
  | { readonly parsed: unknown }
  /** No body. */
  | { readonly none: true };

/** The parts of a request the guard decides on. */
export interface GuardedRequest {
  /** The caller, from the framework (`req.user.id`); `null` or `''` answers `401`. Keys are kept apart per caller. */
  readonly clientId: string | null;
  readonly keyHeader: string | null;
  readonly method: string;
  /** The matched route pattern with its mount prefix, e.g. `/v1/orders/:id`. */
  readonly route: string;
  /** The path as requested, with its query: part of the fingerprint. */
  readonly path: string;
  readonly contentType: string | null;
  readonly body: GuardedBody | (() => Promise<GuardedBody | 'too-large'>);
  readonly prefer: string | null;
}

/** What the handler sees as `oncely` (`c.get('oncely')`, `req.oncely`, `request.oncely`). */
export interface GuardContext {
  readonly clientId: string;
  readonly key: string;
  /** The transaction the response is stored in (`transaction: true` only). */
  readonly tx: Tx | undefined;
  /**
   * The `Idempotency-Key` to send to a downstream API for the call `name` (`'charge'`,
   * `'email:receipt'`): a UUID derived, length-prefixed, from the caller, this request's key and
   * `name`, as the steps API derives its external keys. A retry of this request derives the same
   * one, so a downstream API that deduplicates by it applies the call once, even when a crash
   * after its effect and before the stored response makes the handler run again (the plain
   * mode's window). One name per distinct downstream call.
   */
  deriveKey(name: string): string;
}

/** A request the guard admitted: the handler runs, then {@link Execution.complete} with its response. */
export interface Execution {
  readonly context: GuardContext;
  /** Stores the handler's response (when final) and resolves to what to send. Call once. */
  complete(response: WireResponse): Promise<WireResponse>;
  /** The handler failed without a response: the key is released. */
  abort(error: unknown): Promise<void>;
}

/** The guard's decision for a request. */
export type Decision =
  { readonly kind: 'pass' } | { readonly kind: 'answer'; readonly response: Answer } | { readonly kind: 'run'; readonly execution: Execution };

/** The guard built by {@link createGuard}. */
export interface Guard {
  /** Whether requests with this method are guarded. */
  guards(method: string): boolean;
  /** The largest request body an edge reads itself. */
  readonly maxBodyBytes: number;
  decide(request: GuardedRequest): Promise<Decision>;
}
