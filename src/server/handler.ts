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
import { fingerprintInputParsed } from '../fingerprint.js';
import { parseKeyHeader } from '../keys.js';
import { createInFlight } from './in-flight.js';
import { resolveHandlerConfig } from './handler-config.js';
import { createLetGo } from './let-go.js';
import { parseInput, type Admission } from './parse-input.js';
import { admitRequest, fromCache, rememberFinished, type AdmissionPolicy } from './admission.js';
import { problemAnswer, replay, respond, storeUnavailable, toResponse, type Answer } from './answers.js';
import { firstLocalPhase, wholeLocalRequest } from './phase-plan.js';
import { runWholeRequest } from './store/request-transaction.js';
import { reportError, runSteps, type StepsOutcome } from './phases.js';
import { ProblemType } from './problems.js';
import { readCappedBody } from './read-body.js';
import { createReplayCache, type ReplayCache } from './replay-cache.js';
import type { AdmitInput, AdmitResult, KeyRow, KeyStore, Lease } from './store/types.js';
import type { IdempotentOperation } from './types.js';
import type { IdempotencyHandler, IdempotencyHandlerOptions } from './handler-types.js';
import { serverTelemetry, tracedPhase, type RequestTrace, type StepsTrace } from './telemetry.js';

export type { IdempotencyHandler, IdempotencyHandlerOptions, RecoveryOutcome } from './handler-types.js';

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Creates the idempotency handler for a set of operations.
 *
 * @example
 * ```ts
 * import { createIdempotencyHandler } from 'oncely/server';
 * import { sqliteKeyStore } from 'oncely/server/sqlite';
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
  const { config, operations } = resolveHandlerConfig(options);
  const { store, metrics } = config;
  const telemetry = serverTelemetry(options.telemetry);
  const keys = createInFlight(store, config.leaseMs);
  const letGo = createLetGo({ store, leaseMs: config.leaseMs });
  const cache: ReplayCache | undefined = config.replayCache === false ? undefined : createReplayCache(config.replayCache);
  const policy: AdmissionPolicy = {
    store,
    keys,
    letGo,
    cache,
    leaseMs: config.leaseMs,
    inFlightWaitMs: config.inFlightWaitMs,
    // The owner commits at each phase: a lease not refreshed lately says it stopped working.
    retryAfterMs: (row) => keys.retryAfterMs(row),
  };

  /** Runs the operation's steps under `lease` from `row`'s recovery point (see `phases.ts`). */
  const execute = (
    operation: IdempotentOperation<unknown>,
    lease: Lease,
    row: KeyRow,
    input: unknown,
    how: { readonly onTransient: 'release' | 'park'; readonly admitted?: readonly string[] | undefined },
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
      letGo,
      backoff: config.backoff,
      admitted: how.admitted,
      trace,
    }).finally(end);
  };

  /** The store's admission of `admission`, with the operation's first local step when it has one. */
  async function admitWithFirstStep(
    operation: IdempotentOperation<unknown>,
    input: unknown,
    admission: Admission,
    echo: Record<string, string>,
    waitMs: number,
    trace?: RequestTrace,
  ) {
    // With no external call the whole operation commits with the admission (one transaction);
    // else a first local step does: one transaction fewer per first execution.
    const at = { clientId: admission.clientId, key: admission.key, input, namespace: config.namespace, handOver: config.hooks.afterCommit === undefined };
    const whole = wholeLocalRequest(operation, at);
    const phase = whole ? undefined : firstLocalPhase(operation, { ...at, leaseMs: config.leaseMs });
    const first = whole ?? phase;
    try {
      const { clientId, key, requestHash, endpoint, requestBody } = admission;
      // A whole request holds its key until its steps end: a duplicate's INSERT waits for it no
      // longer than this request may wait, then answers 409. (A first step's admission is short:
      // bounding it costs PostgreSQL two statements per request, measured −10 % req/s.)
      const input: AdmitInput = {
        clientId,
        key,
        requestHash,
        endpoint,
        requestBody,
        leaseMs: config.leaseMs,
        ttlMs: config.ttlMs,
        waitMs: whole ? waitMs : undefined,
      };
      const result = await tracedPhase(trace, 'admit', (): Promise<AdmitResult<unknown>> =>
        whole ? runWholeRequest(store, input, whole) : store.admit(input, phase),
      );
      return { result, first };
    } catch (error) {
      if (!first?.threw(error)) throw error;
      // The step failed, so nothing was stored, not even the key: as when a step fails after its
      // own admission (the row is forgotten), a retry with the same key starts afresh.
      reportError(config.hooks, error, { clientId: admission.clientId, key: admission.key });
      return { result: respond({ kind: 'transient', retryAfterMs: 1000, cause: error }, echo), first };
    }
  }

  async function admitted(
    operation: IdempotentOperation<unknown>,
    input: unknown,
    admission: Admission,
    echo: Record<string, string>,
    prefer: string | null,
    trace?: RequestTrace,
  ): Promise<Answer> {
    let first: ReturnType<typeof firstLocalPhase> | ReturnType<typeof wholeLocalRequest>;
    const request = {
      clientId: admission.clientId,
      key: admission.key,
      requestHash: admission.requestHash,
      identity: admission.identity,
      prefer,
      echo,
      waited: trace ? () => trace.waited() : undefined,
    };
    const decided = await admitRequest<Extract<AdmitResult, { owned: true }>>(policy, request, async (waitMs) => {
      const attempt = await admitWithFirstStep(operation, input, admission, echo, waitMs, trace);
      first = attempt.first;
      return attempt.result;
    });
    switch (decided.kind) {
      case 'answer':
        return decided.answer;
      case 'owned': {
        const { row, lease, first: ran } = decided.admitted;
        // The whole operation ran and finished in the admission's transaction.
        if (row.state === 'finished' && row.response) return executed({ kind: 'finished', response: row.response }, row, admission, echo);
        const admitted = ran && first && 'points' in first ? first.points : undefined;
        return executed(await execute(operation, lease, row, input, { onTransient: 'release', admitted }, trace), row, admission, echo);
      }
      case 'taken-over': {
        metrics.add('lease_takeovers');
        trace?.tookOver();
        // Reload under our lease: the previous owner may have committed more phases since `admit` read it.
        const current = await letGo.reload(decided.lease);
        if (!current) return problemAnswer('transient', ProblemType.UpstreamUnavailable, 'the key vanished during takeover', { ...echo, 'retry-after': '1' });
        return executed(await execute(operation, decided.lease, current, input, { onTransient: 'release' }, trace), current, admission, echo);
      }
    }
  }

  function executed(outcome: StepsOutcome, row: KeyRow, admission: Admission, echo: Record<string, string>): Answer {
    if (outcome.kind === 'finished' && cache) rememberFinished(cache, row, admission, outcome.response);
    return respond(outcome, echo);
  }

  async function handleKeyed(request: Request, url: URL, operation: IdempotentOperation<unknown>, trace?: RequestTrace): Promise<Answer> {
    const parsedKey = parseKeyHeader(request.headers.get('idempotency-key'));
    const echo: Record<string, string> = parsedKey.ok ? { 'idempotency-key': parsedKey.key } : {};
    const clientId = await config.authenticate(request);
    if (clientId === null) {
      return problemAnswer('invalid', ProblemType.Unauthorized, 'send Authorization: Bearer <token>', { ...echo, 'www-authenticate': 'Bearer' });
    }
    if (!parsedKey.ok) return problemAnswer('invalid', ProblemType.InvalidKey, parsedKey.reason);
    const body = await readCappedBody(request, config.maxBodyBytes);
    if (!body.ok) return problemAnswer('invalid', ProblemType.TooLarge, `the body is larger than ${config.maxBodyBytes} bytes`, echo);
    let text: string;
    try {
      text = utf8.decode(body.bytes);
    } catch {
      return problemAnswer('invalid', ProblemType.InvalidRequest, 'the body is not UTF-8', echo);
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
    if (known && known.request === identity) return replay(known);
    const parsed = parseInput(operation, text, contentType);
    if (!parsed.ok) return problemAnswer('invalid', ProblemType.InvalidRequest, parsed.detail, echo);
    // The decoded text, not the bytes: with no Content-Type the fingerprint then still
    // canonicalises a JSON body, exactly as the client's fingerprint() does.
    const requestHash = await config.digest(fingerprintInputParsed(method, path, text, contentType, parsed.canonical));
    const admission: Admission = { clientId, key: parsedKey.key, requestHash, endpoint: `${method} ${url.pathname}`, requestBody: text, identity };
    // Exactly what admission answers for a finished row, fingerprint first.
    if (known) return fromCache(known, requestHash, echo);
    try {
      return await admitted(operation, parsed.input, admission, echo, request.headers.get('prefer'), trace);
    } catch (error) {
      // Fail closed: without the store there is no record, so nothing may run. The cause is
      // reported: a 503 says "the same request may succeed later", and someone should know why.
      reportError(config.hooks, error, { clientId, key: parsedKey.key });
      return storeUnavailable(echo);
    }
  }

  return {
    metrics,
    async handle(request) {
      const url = new URL(request.url);
      const operation = operations.get(`${request.method.toUpperCase()} ${url.pathname}`);
      if (!operation) return undefined;
      const trace = telemetry?.request(`${request.method.toUpperCase()} ${url.pathname}`);
      let answer: Answer;
      try {
        answer = await handleKeyed(request, url, operation, trace);
      } catch {
        // `authenticate` threw or the body stream broke: nothing was admitted, a retry is safe.
        answer = problemAnswer('transient', ProblemType.UpstreamUnavailable, 'the request could not be processed; retry with the same key', {
          'retry-after': '1',
        });
      }
      metrics.request(answer.outcome);
      trace?.end(answer.outcome, answer.status);
      return toResponse(answer);
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
        await letGo.park(lease, { retryAfterMs: config.backoff.maxMs });
        return 'unresumable';
      }
      const current = await letGo.reload(lease);
      if (!current) return 'lost';
      const recovery = telemetry?.recovery(row.endpoint);
      const outcome = await execute(operation, lease, current, parsed.input, { onTransient: 'park' }, recovery);
      recovery?.end(outcome.kind);
      return outcome.kind;
    },
  };
}
