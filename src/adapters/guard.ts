/**
 * The neutral core of the framework middleware (`oncely/hono`, `oncely/express`,
 * `oncely/fastify`): PROTOCOL.md's response matrix around an application's existing route
 * handler, over a {@link KeyStore}. Each framework edge only translates its request and response
 * to the shapes below.
 *
 * ```
 * request ─► caller (401) ─► key (400) ─► body (400/413) ─► fingerprint ─► admit
 *   owned ──────────────────────────────────────────────► the route's handler runs ─► its response:
 *        final (2xx, 3xx, 4xx but 401/408/409/429) ─► stored with the key (finish), then sent
 *        anything else (5xx, 429, …) or a throw ─────► key released (a retry runs afresh), sent as is
 *   conflict ─► other fingerprint ─► 422 · finished ─► stored response + Idempotency-Replay
 *            ─► lease live ─► wait (≤ inFlightWaitMs) then decide again, or 409 · lease gone ─► takeOver, run
 * ```
 *
 * With `transaction: true` the handler runs inside the store transaction that stores its
 * response: what it writes through `tx` commits together with the key, or not at all. Without it,
 * the effect and the stored response are two commits: a crash between them frees the key after
 * one lease, and a retry runs the handler again.
 *
 * @module
 * @internal
 */
import { defaultDigest, type FingerprintDigest } from '../fingerprint.js';
import { parseKeyHeader } from '../keys.js';
import { replayHeaders, seconds } from '../server/answers.js';
import { createInFlight, waitBudget } from '../server/in-flight.js';
import { ProblemType, problemBody } from '../server/problems.js';
import { createReplayCache, type CachedKey, type ReplayCacheOptions } from '../server/replay-cache.js';
import type { KeyRow, KeyStore, Lease, Tx } from '../server/store/types.js';
import { fingerprintOf } from './body-fingerprint.js';
import { plainAttempt, transactionAttempt, type Attempt } from './attempt.js';
import type { WireResponse } from './wire.js';
import { traceGuard } from '../server/telemetry-guard.js';
import { tracingOf } from '../telemetry/spans.js';
import type { TelemetryOptions } from '../telemetry/types.js';

export { isFinalStatus, type WireResponse } from './wire.js';

/** Options shared by every framework's `idempotent()`. */
export interface GuardOptions {
  /** Where keys, leases and stored responses live: `sqliteKeyStore` or `postgresKeyStore` (migrated). */
  readonly store: KeyStore;
  /**
   * Run the handler inside the transaction that stores its response, and give it that
   * transaction as `tx`: its writes and the key commit together (exactly once). Without it, a
   * crash after the handler's effect and before its response is stored lets a retry run it again.
   * @default false
   */
  readonly transaction?: boolean;
  /**
   * How long a handler may run before another request with the same key may take it over: longer
   * than the slowest run of the handler. A crashed process's key is free again after one lease.
   * @default 30000
   */
  readonly leaseMs?: number;
  /** How long a key and its stored response are kept. @default 86400000 (24 h) */
  readonly ttlMs?: number;
  /** How long a duplicate waits for the original's answer before `409`; `0` answers `409` at once. @default 5000 */
  readonly inFlightWaitMs?: number;
  /** Largest request body read when no body parser ran, in bytes (`413` above). @default 65536 */
  readonly maxBodyBytes?: number;
  /**
   * Largest response body stored for replay, in bytes; a larger one is delivered once and its replay
   * says so (see the README). At most the store's own `maxResponseBytes` (64 KiB by default).
   * @default 65536
   */
  readonly maxResponseBytes?: number;
  /** HTTP methods guarded; others pass through untouched. @default ['POST', 'PUT', 'PATCH', 'DELETE'] */
  readonly methods?: readonly string[];
  /** A request without `Idempotency-Key`: `'reject'` answers `400`; `'pass'` runs the handler unguarded. @default 'reject' */
  readonly keyMissing?: 'reject' | 'pass';
  /**
   * The in-process cache of finished keys that answers replays (and `422`s for a finished key)
   * without a store round trip; `false` turns it off. A finished key never changes until it
   * expires, so the cache cannot answer differently from the store (see `replay-cache.ts`); a
   * key is cached at its first replay from the store.
   * @default { maxBytes: 8 MiB, maxAgeMs: 60000 }
   */
  readonly replayCache?: ReplayCacheOptions | false;
  /** Called with a store error (answered `503`) or a lease lost after the handler ran. */
  readonly onError?: (error: unknown, ref: { readonly clientId: string; readonly key: string }) => void;
  /** SHA-256 for the request fingerprint. @default defaultDigest() */
  readonly digest?: FingerprintDigest;
  /** OpenTelemetry spans per guarded request (see docs/observability.md); none when omitted. */
  readonly telemetry?: TelemetryOptions;
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
  | { readonly kind: 'pass' }
  | { readonly kind: 'answer'; readonly response: WireResponse }
  | { readonly kind: 'run'; readonly execution: Execution };

/** The guard built by {@link createGuard}. */
export interface Guard {
  /** Whether requests with this method are guarded. */
  guards(method: string): boolean;
  /** The largest request body an edge reads itself. */
  readonly maxBodyBytes: number;
  decide(request: GuardedRequest): Promise<Decision>;
}

function problemWire(type: ProblemType, detail: string, headers: Readonly<Record<string, string>> = {}): WireResponse {
  return { status: type.status, headers: { ...headers, 'content-type': 'application/problem+json' }, body: JSON.stringify(problemBody(type, detail)) };
}

const answer = (response: WireResponse): Decision => ({ kind: 'answer', response });


/**
 * Builds the guard one framework edge wraps.
 *
 * @example
 * ```ts
 * const guard = createGuard({ store });
 * const decision = await guard.decide(request); // 'pass' | 'answer' | 'run'
 * ```
 */
export function createGuard(options: GuardOptions): Guard {
  const store = options.store;
  const leaseMs = options.leaseMs ?? 30_000;
  const ttlMs = options.ttlMs ?? 86_400_000;
  const waitMs = options.inFlightWaitMs ?? 5000;
  const maxResponseBytes = options.maxResponseBytes ?? 65_536;
  const maxBodyBytes = options.maxBodyBytes ?? 65_536;
  const digest = options.digest ?? defaultDigest();
  const methods = new Set((options.methods ?? ['POST', 'PUT', 'PATCH', 'DELETE']).map((method) => method.toUpperCase()));
  const keys = createInFlight(store, leaseMs);
  const cache = options.replayCache === false ? undefined : createReplayCache(options.replayCache);
  const report = (error: unknown, ref: { clientId: string; key: string }): void => {
    try {
      options.onError?.(error, ref);
    } catch {
      // A logging hook must not change the answer.
    }
  };

  const inFlight = (echo: Record<string, string>, retryAfterMs: number): WireResponse =>
    problemWire(ProblemType.KeyInFlight, 'a request with this key is being processed', { ...echo, 'retry-after': seconds(retryAfterMs) });
  const keyReused = (endpoint: string, echo: Record<string, string>): Decision =>
    answer(problemWire(ProblemType.KeyReused, `this Idempotency-Key was used for a different request (${endpoint})`, echo));
  const replayOf = ({ response, replayHeaders }: Pick<CachedKey, 'response' | 'replayHeaders'>): Decision =>
    answer({ status: response.status, headers: replayHeaders, body: response.status === 204 || response.status === 304 ? null : response.body });
  const unavailable = (echo: Record<string, string>): WireResponse =>
    problemWire(ProblemType.UpstreamUnavailable, 'the key store is unavailable', { ...echo, 'retry-after': '1' });

  /** The handler runs under `lease`: the framework edge calls it, then `complete` with its response. */
  async function execution(lease: Lease, echo: Record<string, string>): Promise<Decision> {
    const ref = { clientId: lease.clientId, key: lease.key };
    const end = keys.begin(lease.clientId, lease.key);
    const echoed = (response: WireResponse): WireResponse => ({ ...response, headers: { ...response.headers, ...echo } });
    const release = (): Promise<unknown> => store.release(lease, { forget: true }).catch((error: unknown) => report(error, ref));
    const lost = (): WireResponse => {
      report(new Error('oncely: the lease ran out before the handler answered and another request took the key over; raise leaseMs'), ref);
      return inFlight(echo, 1000);
    };
    const context = (tx: Tx | undefined): GuardContext => ({ clientId: lease.clientId, key: lease.key, tx });

    const attempt: Attempt = {
      store,
      lease,
      leaseMs,
      maxResponseBytes,
      end,
      echoed,
      release,
      lost,
      report: (error) => report(error, ref),
      unavailable: () => unavailable(echo),
      context,
    };
    return options.transaction ? transactionAttempt(attempt) : plainAttempt(attempt);
  }

  async function decideAdmitted(request: GuardedRequest, clientId: string, key: string, requestHash: string, waited: boolean): Promise<Decision> {
    const echo = { 'idempotency-key': key };
    const endpoint = `${request.method.toUpperCase()} ${request.route}`;
    const admitted = await store.admit({ clientId, key, requestHash, endpoint, requestBody: '', leaseMs, ttlMs });
    if (admitted.owned) return execution(admitted.lease, echo);
    const row: KeyRow = admitted.row;
    if (row.requestHash !== requestHash) return keyReused(row.endpoint, echo);
    if (row.state === 'finished' && row.response) {
      const known: CachedKey = {
        requestHash,
        // Empty: the guard compares fingerprints, never request text.
        request: '',
        endpoint: row.endpoint,
        response: row.response,
        // Shared by every replay of the entry, so frozen: nothing may change one answer for all.
        replayHeaders: Object.freeze(replayHeaders(row.response, { ...echo, 'idempotency-replay': 'true' })),
        expiresAt: row.expiresAt,
      };
      cache?.set(clientId, key, known, Date.now());
      return replayOf(known);
    }
    if (row.leaseRemainingMs !== null && row.leaseRemainingMs > 0) {
      const budget = waited ? 0 : waitBudget(waitMs, request.prefer, row.leaseRemainingMs);
      // A handler commits nothing until it answers, so a live lease says nothing about how far it
      // got: retry soon (each retry waits again, up to inFlightWaitMs).
      if (budget === 0) return answer(inFlight(echo, 1000));
      await keys.wait(clientId, key, budget);
      return decideAdmitted(request, clientId, key, requestHash, true);
    }
    const lease = await store.takeOver(clientId, key, leaseMs);
    // Lost the race to another taker, who has just begun.
    if (!lease) return answer(inFlight(echo, 1000));
    return execution(lease, echo);
  }

  return traceGuard({
    guards: (method) => methods.has(method.toUpperCase()),
    maxBodyBytes,
    async decide(request) {
      if (!methods.has(request.method.toUpperCase())) return { kind: 'pass' };
      if (request.keyHeader === null && options.keyMissing === 'pass') return { kind: 'pass' };
      const parsedKey = parseKeyHeader(request.keyHeader);
      const echo: Record<string, string> = parsedKey.ok ? { 'idempotency-key': parsedKey.key } : {};
      const clientId = request.clientId;
      if (clientId === null || clientId === '') return answer(problemWire(ProblemType.Unauthorized, 'this request has no caller', { ...echo, 'www-authenticate': 'Bearer' }));
      if (!parsedKey.ok) return answer(problemWire(ProblemType.InvalidKey, parsedKey.reason));
      const body = typeof request.body === 'function' ? await request.body() : request.body;
      if (body === 'too-large') return answer(problemWire(ProblemType.TooLarge, `the body is larger than ${maxBodyBytes} bytes`, echo));
      const fingerprint = fingerprintOf(request, body);
      if (!fingerprint.ok) return answer(problemWire(ProblemType.InvalidRequest, fingerprint.detail, echo));
      const requestHash = await digest(fingerprint.bytes);
      // A finished key answers from the cache exactly as from its row: fingerprint first.
      const known = cache?.get(clientId, parsedKey.key, Date.now());
      if (known) return known.requestHash === requestHash ? replayOf(known) : keyReused(known.endpoint, echo);
      try {
        return await decideAdmitted(request, clientId, parsedKey.key, requestHash, false);
      } catch (error) {
        report(error, { clientId, key: parsedKey.key });
        return answer(unavailable(echo));
      }
    },
  }, tracingOf(options.telemetry));
}
