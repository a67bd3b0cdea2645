/**
 * The neutral core of the framework middleware (`oncely/hono`, `oncely/express`,
 * `oncely/fastify`): PROTOCOL.md's response matrix around an application's existing route
 * handler, over a {@link KeyStore}. Each framework edge only translates its request and response
 * to the shapes of `types.ts`. The checks before admission (401, 400, 413, the replay cache, 503)
 * are `../pre-admission.ts`'s and which branch a request takes is decided by `../admission.ts`:
 * the same code as the reference handler's.
 *
 * This folder (`src/server/middleware/`), the server library's framework front end:
 * - `express.ts`, `hono.ts`, `fastify.ts`: the public entries (`oncely/express`, …), each a thin edge;
 * - `guard.ts` (this file): the neutral core every edge wraps, built from `guard-config.ts` (its
 *   options, checked once) and `guard-admission.ts` (admission and the execution it hands over);
 *   `types.ts`: its types;
 * - `plain-execution.ts` / `transaction-execution.ts`: how an admitted request runs (plain, or
 *   `transaction: true`), sharing `leased-run.ts`;
 * - `wire.ts`: which responses are final and what of them is stored; `body-fingerprint.ts`: the
 *   fingerprint of a body as the framework has it.
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
import { createInFlight } from '../in-flight.js';
import { createLetGo } from '../let-go.js';
import { checkThenAdmit, type KeyedFrontEnd } from '../pre-admission.js';
import { createReplayCache } from '../replay-cache.js';
import { fingerprintOf } from './body-fingerprint.js';
import { admitGuarded, answerDecision, type GuardRun } from './guard-admission.js';
import { resolveGuardConfig } from './guard-config.js';
import { traceGuard } from './telemetry-guard.js';
import { tracingOf } from '../../telemetry/spans.js';
import type { Decision, Guard, GuardOptions, GuardedBody, GuardedRequest } from './types.js';

export { isFinalStatus } from './wire.js';
export type { WireResponse } from '../answers.js';
export type { Decision, Execution, Guard, GuardContext, GuardOptions, GuardedBody, GuardedRequest } from './types.js';

const PASS: Decision = { kind: 'pass' };

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
  const config = resolveGuardConfig(options);
  const { store, leaseMs, maxBodyBytes, methods } = config;
  const keys = createInFlight(store, leaseMs);
  const cache = config.replayCache === false ? undefined : createReplayCache(config.replayCache);
  // A key given up while the store fails is let go again until the store records it (`../let-go.ts`).
  const letGo = createLetGo({ store, leaseMs, report: config.report });
  const policy = {
    store,
    keys,
    letGo,
    // `transaction: true` admits with the whole request: the owner's key is invisible until it commits.
    invisibleOwners: config.transaction,
    cache,
    leaseMs,
    inFlightWaitMs: config.inFlightWaitMs,
    // A handler commits nothing until it answers, so a live lease says nothing about how far it
    // got: retry soon (each retry waits again, up to inFlightWaitMs).
    retryAfterMs: () => 1000,
  };
  const run: GuardRun = { config, keys, letGo, policy };

  /** The guard as the pre-admission checks (`../pre-admission.ts`) see it. */
  const front: KeyedFrontEnd<GuardedRequest, GuardedBody, undefined, Decision> = {
    maxBodyBytes,
    cache,
    digest: config.digest,
    noCaller: 'this request has no caller',
    caller: (request) => (request.clientId === '' ? null : request.clientId),
    keyHeader: (request) => request.keyHeader,
    body: (request) => (typeof request.body === 'function' ? request.body() : request.body),
    fingerprint: fingerprintOf,
    admit: (request, keyed, requestHash) => admitGuarded(run, request, keyed, requestHash),
    answer: answerDecision,
    report: config.report,
  };

  const guard: Guard = {
    guards: (method) => methods.has(method.toUpperCase()),
    maxBodyBytes,
    decide(request) {
      if (!methods.has(request.method.toUpperCase())) return Promise.resolve(PASS);
      if (request.keyHeader === null && config.keyMissing === 'pass') return Promise.resolve(PASS);
      return checkThenAdmit(front, request);
    },
  };
  return traceGuard(guard, tracingOf(options.telemetry));
}
