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
 * The steps, each a function of its own file: the checks before admission (401, 400, 413, the
 * replay cache, 503), shared with the framework middleware, in `pre-admission.ts`; this handler's
 * body, parse and fingerprint in `handler-front.ts`; admission and the run of the steps in
 * `handler-run.ts`. This file builds what they share once, and answers.
 *
 * @module
 */
import type { AdmissionPolicy } from './admission.js';
import { createInFlight } from './in-flight.js';
import { resolveHandlerConfig } from './handler-config.js';
import { handlerFrontEnd, type HandlerRequest } from './handler-front.js';
import { executeSteps, type HandlerRun } from './handler-run.js';
import { createLetGo } from './let-go.js';
import { parseInput } from './parse-input.js';
import { problemAnswer, toResponse, type Answer } from './answers.js';
import { checkThenAdmit } from './pre-admission.js';
import { ProblemType } from './problems.js';
import { createReplayCache } from './replay-cache.js';
import type { IdempotencyHandler, IdempotencyHandlerOptions } from './handler-types.js';
import { serverTelemetry } from './telemetry.js';

export type { IdempotencyHandler, IdempotencyHandlerOptions, RecoveryOutcome } from './handler-types.js';

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
  const cache = config.replayCache === false ? undefined : createReplayCache(config.replayCache);
  // The owner commits at each phase: a lease not refreshed lately says it stopped working.
  const policy: AdmissionPolicy = {
    store,
    keys,
    letGo,
    cache,
    leaseMs: config.leaseMs,
    inFlightWaitMs: config.inFlightWaitMs,
    retryAfterMs: (row) => keys.retryAfterMs(row),
  };
  const run: HandlerRun = { config, keys, letGo, cache, policy };
  const front = handlerFrontEnd(run);

  /** The answer to a request for `operation`: `authenticate` first, then the pre-admission checks and admission. */
  async function answer(request: Request, url: URL, operation: HandlerRequest['operation'], trace: HandlerRequest['trace']): Promise<Answer> {
    try {
      const clientId = await config.authenticate(request);
      return await checkThenAdmit(front, { request, url, operation, clientId, trace });
    } catch {
      // `authenticate` threw or the body stream broke: nothing was admitted, a retry is safe.
      return problemAnswer('transient', ProblemType.UpstreamUnavailable, 'the request could not be processed; retry with the same key', { 'retry-after': '1' });
    }
  }

  return {
    metrics,
    async handle(request) {
      const url = new URL(request.url);
      const endpoint = `${request.method.toUpperCase()} ${url.pathname}`;
      const operation = operations.get(endpoint);
      if (!operation) return undefined;
      const trace = telemetry?.request(endpoint);
      const answered = await answer(request, url, operation, trace);
      metrics.request(answered.outcome);
      trace?.end(answered.outcome, answered.status);
      return toResponse(answered);
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
      const outcome = await executeSteps(run, operation, lease, current, parsed.input, { onTransient: 'park' }, recovery);
      recovery?.end(outcome.kind);
      return outcome.kind;
    },
  };
}
