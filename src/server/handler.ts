/**
 * The idempotency handler: `(Request) => Promise<Response>` for every operation it wraps,
 * implementing PROTOCOL.md's response matrix over a {@link KeyStore}.
 *
 * ```
 * POST ─► auth (401) ─► key (400) ─► body cap (413) ─► parse (400, key not consumed) ─► fingerprint ─► admit
 *   admit: row returned (a first local step commits with it) ────────► run steps (201 / 402 / 202 / 503)
 *          conflict ─► fingerprint differs ─────────────────────────► 422 (original untouched)
 *                    ─► finished ───────────────────────────────────► stored response + Idempotency-Replay
 *                    ─► started, lease live ─► wait for its end (≤ inFlightWaitMs), then decide again, or 409
 *                    ─► started, lease expired/released ─► takeOver ─► resume from recovery point (lost race: 409)
 * any store error ──► 503 + Retry-After (fail closed: nothing runs that was not recorded)
 * ```
 *
 * @module
 */
import { validate as validateUuid } from 'uuid';
import { type FingerprintDigest, defaultDigest, fingerprintInputParsed } from '../fingerprint.js';
import { DEFAULT_NAMESPACE, parseKeyHeader } from '../keys.js';
import { createInFlight, waitBudget } from './in-flight.js';
import { parseInput, type Admission } from './parse-input.js';
import { inFlight, mismatch, replayFromCache, replayHeaders, respond, stored } from './answers.js';
import { createServerMetrics, type RequestOutcome, type ServerMetrics } from './metrics.js';
import { firstLocalPhase } from './first-phase.js';
import { reportError, runSteps, type PhaseHooks, type StepsOutcome } from './phases.js';
import { ProblemType, problem } from './problems.js';
import { readCappedBody } from './read-body.js';
import { createReplayCache, type CachedKey, type ReplayCache, type ReplayCacheOptions } from './replay-cache.js';
import { commitsOf, type FoldedAdmitResult } from './commits.js';
import type { KeyRow, KeyStore, Lease, StoredResponse } from './store/types.js';
import type { IdempotentOperation } from './types.js';
import { serverTelemetry, tracedPhase, type RequestTrace, type StepsTrace } from './telemetry.js';
import type { TelemetryOptions } from '../telemetry/types.js';

/** Options of {@link createIdempotencyHandler}. */
export interface IdempotencyHandlerOptions {
  /** Where keys, leases and recovery points live (and the app's own tables). */
  readonly store: KeyStore;
  /** The operations made idempotent, matched by exact method and path. */
  readonly operations: ReadonlyArray<IdempotentOperation<unknown>>;
  /** Maps a request to its caller's client id, or `null` (answered `401`). Any string: identifiers built from it are length-prefixed. */
  readonly authenticate: (request: Request) => string | null | Promise<string | null>;
  /**
   * How long an owner may go without committing before another actor may take the row over.
   * @default 10000
   */
  readonly leaseMs?: number;
  /**
   * How long a key is kept (then reaped): at least the client's longest retry window.
   * @default 86400000 (24 h)
   */
  readonly ttlMs?: number;
  /**
   * How long a request that finds its key in flight waits for the original's final answer (then
   * answered as a replay) before `409`; `0` answers `409` at once. Never longer than the client's
   * `Prefer: wait=N` nor the owner's lease (see `in-flight.ts`).
   * @default 5000
   */
  readonly inFlightWaitMs?: number;
  /**
   * Largest request body accepted, in bytes; larger is `413`.
   * @default 65536
   */
  readonly maxBodyBytes?: number;
  /**
   * UUID namespace of the derived keys `Kn` sent to external systems.
   * @default DEFAULT_NAMESPACE
   */
  readonly namespace?: string;
  /** Hooks called as phases commit (fault injection). */
  readonly hooks?: PhaseHooks;
  /** Counters to update; a fresh set when omitted. */
  readonly metrics?: ServerMetrics;
  /**
   * Backoff of a parked row (outcome unknown): `min(maxMs, baseMs · 2^attempts)`.
   * @default { baseMs: 1000, maxMs: 60000 }
   */
  readonly parkBackoff?: { readonly baseMs: number; readonly maxMs: number };
  /**
   * The SHA-256 of the request fingerprint, computed for every keyed request (replays and `409`s
   * included). The default is `node:crypto`'s synchronous hash where the platform offers it
   * (Node), else WebCrypto's. Every choice gives identical fingerprints.
   * @default defaultDigest()
   */
  readonly digest?: FingerprintDigest;
  /**
   * The in-process cache of finished keys that answers replays (and `422`s for a finished key)
   * without a store round trip; `false` turns it off. A finished key never changes until it
   * expires, so the cache cannot answer differently from the store (see `replay-cache.ts`).
   * @default { maxBytes: 8 MiB, maxAgeMs: 60000 }
   */
  readonly replayCache?: ReplayCacheOptions | false;
  /** OpenTelemetry spans per request, phase and external call (see docs/observability.md); none when omitted. */
  readonly telemetry?: TelemetryOptions;
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

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Creates the idempotency handler for a set of operations.
 *
 * @example
 * ```ts
 * import { createIdempotencyHandler, sqliteKeyStore } from 'oncely/server';
 * const store = sqliteKeyStore({ path: 'oncely.db' });
 * await store.migrate();
 * const handler = createIdempotencyHandler({
 *   store,
 *   operations: [createPayment],
 *   authenticate: (request) => (request.headers.get('authorization') === 'Bearer test_acme' ? 'acme' : null),
 * });
 * const response = (await handler.handle(request)) ?? new Response('not found', { status: 404 });
 * ```
 */
export function createIdempotencyHandler(options: IdempotencyHandlerOptions): IdempotencyHandler {
  const config = {
    store: options.store,
    authenticate: options.authenticate,
    leaseMs: options.leaseMs ?? 10_000,
    ttlMs: options.ttlMs ?? 86_400_000,
    maxBodyBytes: options.maxBodyBytes ?? 65_536,
    namespace: options.namespace ?? DEFAULT_NAMESPACE,
    hooks: options.hooks ?? {},
    metrics: options.metrics ?? createServerMetrics(),
    backoff: options.parkBackoff ?? { baseMs: 1000, maxMs: 60_000 },
    digest: options.digest ?? defaultDigest(),
    inFlightWaitMs: options.inFlightWaitMs ?? 5000,
  };
  if (!validateUuid(config.namespace)) throw new TypeError(`createIdempotencyHandler: namespace must be a UUID, got ${config.namespace}`);
  const operations = new Map<string, IdempotentOperation<unknown>>();
  for (const operation of options.operations) {
    const endpoint = `${operation.method.toUpperCase()} ${operation.path}`;
    if (operations.has(endpoint)) throw new TypeError(`createIdempotencyHandler: two operations for ${endpoint}`);
    operations.set(endpoint, operation);
  }
  const { store, metrics } = config;
  const telemetry = serverTelemetry(options.telemetry);
  const commits = commitsOf(store);
  const keys = createInFlight(store, config.leaseMs);
  const cache: ReplayCache | undefined = options.replayCache === false ? undefined : createReplayCache(options.replayCache);
  /** Remembers a finished key (replayed now or just executed) for the next replay. */
  const remember = (row: Pick<KeyRow, 'clientId' | 'key' | 'endpoint' | 'expiresAt'>, admission: Admission, response: StoredResponse): void =>
    cache?.set(
      row.clientId,
      row.key,
      {
        requestHash: admission.requestHash,
        request: admission.identity,
        endpoint: row.endpoint,
        response,
        // Shared by every replay of the entry, so frozen: nothing may change one answer for all.
        replayHeaders: Object.freeze(replayHeaders(response, { 'idempotency-key': row.key, 'idempotency-replay': 'true' })),
        expiresAt: row.expiresAt,
      },
      Date.now(),
    );

  /** Runs the operation's steps under `lease` from `row`'s recovery point (see `phases.ts`). */
  const execute = (
    operation: IdempotentOperation<unknown>,
    lease: Lease,
    row: KeyRow,
    input: unknown,
    how: { readonly onTransient: 'release' | 'park'; readonly admittedAt?: string | undefined; readonly admittedNext?: string | undefined },
    trace?: StepsTrace,
  ): Promise<StepsOutcome> => {
    const end = keys.begin(lease.clientId, lease.key);
    // Spelled out, not spread from `config`: this literal is built for every executed request.
    return runSteps({
      store,
      operation,
      lease,
      input,
      recoveryPoint: row.recoveryPoint,
      data: row.data,
      attempts: row.attempts,
      namespace: config.namespace,
      leaseMs: config.leaseMs,
      hooks: config.hooks,
      metrics,
      onTransient: how.onTransient,
      backoff: config.backoff,
      admittedAt: how.admittedAt,
      admittedNext: how.admittedNext,
      trace,
    }).finally(end);
  };

  async function admitted(
    operation: IdempotentOperation<unknown>,
    input: unknown,
    admission: Admission,
    echo: Record<string, string>,
    /** The request's `Prefer` header; `false` once it has waited (a request waits once). */
    prefer: string | null | false,
    trace?: RequestTrace,
  ): Promise<[RequestOutcome, Response]> {
    // A first local step commits with the admission: one transaction fewer per first execution.
    const first = firstLocalPhase(operation, {
      clientId: admission.clientId,
      key: admission.key,
      input,
      namespace: config.namespace,
      leaseMs: config.leaseMs,
      handOver: config.hooks.afterCommit === undefined,
    });
    let result: FoldedAdmitResult;
    try {
      const { clientId, key, requestHash, endpoint, requestBody } = admission;
      result = await tracedPhase(trace, 'admit', () => commits.admit({ clientId, key, requestHash, endpoint, requestBody, leaseMs: config.leaseMs, ttlMs: config.ttlMs }, first));
    } catch (error) {
      if (!first?.threw(error)) throw error;
      // The step failed, so nothing was stored, not even the key: as when a step fails after its
      // own admission (the row is forgotten), a retry with the same key starts afresh.
      reportError(config.hooks, error, { clientId: admission.clientId, key: admission.key });
      return respond({ kind: 'transient', retryAfterMs: 1000, cause: error }, echo);
    }
    if (result.owned) {
      const { first: ran } = result;
      const admittedNext = ran?.next ? first?.commit.next?.recoveryPoint : undefined;
      const admittedAt = ran ? (result.row.recoveryPoint ?? undefined) : undefined;
      const outcome = await execute(operation, result.lease, result.row, input, { onTransient: 'release', admittedAt, admittedNext }, trace);
      return executed(outcome, result.row, admission, echo);
    }
    const row = result.row;
    // The fingerprint is checked before anything else: a key reused for another request must
    // never see (or wait for) the original's state.
    if (row.requestHash !== admission.requestHash) return mismatch(row.endpoint, echo);
    if (row.state === 'finished' && row.response) {
      remember(row, admission, row.response);
      return ['replayed', stored(row.response, { ...echo, 'idempotency-replay': 'true' })];
    }
    if (row.leaseRemainingMs !== null && row.leaseRemainingMs > 0) {
      const budget = prefer === false ? 0 : waitBudget(config.inFlightWaitMs, prefer, row.leaseRemainingMs);
      if (budget === 0) return inFlight(keys.retryAfterMs(row), echo);
      // Then decided afresh: a replay if it finished, a takeover if its owner died, else 409.
      trace?.waited();
      await keys.wait(row.clientId, row.key, budget);
      return admitted(operation, input, admission, echo, false, trace);
    }
    const lease = await store.takeOver(row.clientId, row.key, config.leaseMs);
    // Lost the race to another taker, who has just begun.
    if (!lease) return inFlight(1000, echo);
    metrics.add('lease_takeovers');
    trace?.tookOver();
    // Reload under our lease: the previous owner may have committed more phases since `admit` read it.
    const current = await store.load(row.clientId, row.key);
    if (!current) return ['transient', problem(ProblemType.UpstreamUnavailable, 'the key vanished during takeover', { ...echo, 'retry-after': '1' })];
    return executed(await execute(operation, lease, current, input, { onTransient: 'release' }, trace), current, admission, echo);
  }

  function executed(outcome: StepsOutcome, row: KeyRow, admission: Admission, echo: Record<string, string>): [RequestOutcome, Response] {
    if (outcome.kind === 'finished') remember(row, admission, outcome.response);
    return respond(outcome, echo);
  }

  async function handleKeyed(request: Request, url: URL, operation: IdempotentOperation<unknown>, trace?: RequestTrace): Promise<[RequestOutcome, Response]> {
    const parsedKey = parseKeyHeader(request.headers.get('idempotency-key'));
    const echo: Record<string, string> = parsedKey.ok ? { 'idempotency-key': parsedKey.key } : {};
    const clientId = await config.authenticate(request);
    if (clientId === null) {
      return ['invalid', problem(ProblemType.Unauthorized, 'send Authorization: Bearer <token>', { ...echo, 'www-authenticate': 'Bearer' })];
    }
    if (!parsedKey.ok) return ['invalid', problem(ProblemType.InvalidKey, parsedKey.reason)];
    const body = await readCappedBody(request, config.maxBodyBytes);
    if (!body.ok) return ['invalid', problem(ProblemType.TooLarge, `the body is larger than ${config.maxBodyBytes} bytes`, echo)];
    let text: string;
    try {
      text = utf8.decode(body.bytes);
    } catch {
      return ['invalid', problem(ProblemType.InvalidRequest, 'the body is not UTF-8', echo)];
    }
    const method = request.method.toUpperCase();
    const path = url.pathname + url.search;
    const contentType = request.headers.get('content-type');
    // Everything the fingerprint is computed from, as one string (content type first: it decides
    // whether the body is canonicalised, and a missing one differs from an empty one).
    const identity = cache ? `${method}\n${path}\n${contentType === null ? '-' : `+${contentType}`}\n${text}` : '';
    const known = cache?.get(clientId, parsedKey.key, Date.now());
    // A request identical to one known to match a finished key is its replay: no parsing (it
    // parsed before) and no hashing (it hashes the same).
    if (known && known.request === identity) return replayFromCache(known);
    const parsed = parseInput(operation, text, contentType);
    if (!parsed.ok) return ['invalid', problem(ProblemType.InvalidRequest, parsed.detail, echo)];
    // The decoded text, not the bytes: with no Content-Type the fingerprint then still
    // canonicalises a JSON body, exactly as the client's fingerprint() does.
    const requestHash = await config.digest(fingerprintInputParsed(method, path, text, contentType, parsed.canonical));
    const admission: Admission = { clientId, key: parsedKey.key, requestHash, endpoint: `${method} ${url.pathname}`, requestBody: text, identity };
    // Exactly what `admitted` answers for a finished row, fingerprint first.
    if (known) return known.requestHash === requestHash ? replayFromCache(known) : mismatch(known.endpoint, echo);
    try {
      return await admitted(operation, parsed.input, admission, echo, request.headers.get('prefer'), trace);
    } catch (error) {
      // Fail closed: without the store there is no record, so nothing may run. The cause is
      // reported: a 503 says "the same request may succeed later", and someone should know why.
      reportError(config.hooks, error, { clientId, key: parsedKey.key });
      return ['transient', problem(ProblemType.UpstreamUnavailable, 'the key store is unavailable', { ...echo, 'retry-after': '1' })];
    }
  }

  return {
    metrics,
    async handle(request) {
      const url = new URL(request.url);
      const operation = operations.get(`${request.method.toUpperCase()} ${url.pathname}`);
      if (!operation) return undefined;
      const trace = telemetry?.request(`${request.method.toUpperCase()} ${url.pathname}`);
      let answer: [RequestOutcome, Response];
      try {
        answer = await handleKeyed(request, url, operation, trace);
      } catch {
        // `authenticate` threw or the body stream broke: nothing was admitted, a retry is safe.
        answer = ['transient', problem(ProblemType.UpstreamUnavailable, 'the request could not be processed; retry with the same key', { 'retry-after': '1' })];
      }
      metrics.request(answer[0]);
      trace?.end(answer[0], answer[1].status);
      return answer[1];
    },
    async resume(row) {
      const operation = operations.get(row.endpoint);
      const parsed = operation ? parseInput(operation, row.requestBody) : undefined;
      const lease = await store.takeOver(row.clientId, row.key, config.leaseMs);
      if (!lease) return 'busy';
      metrics.add('lease_takeovers');
      if (!operation || !parsed?.ok) {
        // Nothing can run this row any more; hold it off the sweep for as long as possible so it
        // does not starve the rows behind it, and leave it for reconciliation.
        await store.park(lease, { retryAfterMs: config.backoff.maxMs });
        return 'unresumable';
      }
      const current = await store.load(row.clientId, row.key);
      if (!current) return 'lost';
      const recovery = telemetry?.recovery(row.endpoint);
      const outcome = await execute(operation, lease, current, parsed.input, { onTransient: 'park' }, recovery);
      recovery?.end(outcome.kind);
      return outcome.kind;
    },
  };
}
