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
 * - `guard.ts` (this file): the neutral core every edge wraps; `types.ts`: its types;
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
import { admitRequest, type AdmissionPolicy, type AdmitAttempt } from '../admission.js';
import type { Answer } from '../answers.js';
import { InvalidOptionError } from '../errors/invalid-option-error.js';
import { createInFlight } from '../in-flight.js';
import { createLetGo } from '../let-go.js';
import { resolveResponseCap, resolveServerOptions } from '../options.js';
import { checkThenAdmit, type KeyedFrontEnd } from '../pre-admission.js';
import { createReplayCache } from '../replay-cache.js';
import { fingerprintOf } from './body-fingerprint.js';
import { LeasedRun } from './leased-run.js';
import { PlainExecution } from './plain-execution.js';
import { TransactionExecution } from './transaction-execution.js';
import { traceGuard } from './telemetry-guard.js';
import { tracingOf } from '../../telemetry/spans.js';
import type { AdmitInput, Lease } from '../store/types.js';
import type { Decision, Guard, GuardOptions, GuardedBody, GuardedRequest } from './types.js';

export { isFinalStatus } from './wire.js';
export type { WireResponse } from '../answers.js';
export type { Decision, Execution, Guard, GuardContext, GuardOptions, GuardedBody, GuardedRequest } from './types.js';

const answer = (response: Answer): Decision => ({ kind: 'answer', response });
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
  const where = 'idempotent';
  const { leaseMs, ttlMs, inFlightWaitMs: waitMs, maxBodyBytes, digest, replayCache } = resolveServerOptions(where, options);
  const store = options.store;
  const maxResponseBytes = resolveResponseCap(where, options.maxResponseBytes, store.maxResponseBytes);
  if (options.keyMissing !== undefined && options.keyMissing !== 'reject' && options.keyMissing !== 'pass') {
    throw new InvalidOptionError(where, 'keyMissing', `must be 'reject' or 'pass', got ${JSON.stringify(options.keyMissing)}`);
  }
  const listed = options.methods ?? ['POST', 'PUT', 'PATCH', 'DELETE'];
  const badMethod = listed.find((method) => typeof method !== 'string' || !/^[A-Za-z]+$/.test(method));
  if (badMethod !== undefined) throw new InvalidOptionError(where, 'methods', `must hold HTTP method names, got ${JSON.stringify(badMethod)}`);
  const methods = new Set(listed.map((method) => method.toUpperCase()));
  const keys = createInFlight(store, leaseMs);
  const cache = replayCache === false ? undefined : createReplayCache(replayCache);
  const report = (error: unknown, ref: { clientId: string; key: string }): void => {
    try {
      options.onError?.(error, ref);
    } catch {
      // A logging hook must not change the answer.
    }
  };

  // A key given up while the store fails is let go again until the store records it (`../let-go.ts`).
  const letGo = createLetGo({ store, leaseMs, report });

  const policy: AdmissionPolicy = {
    store,
    keys,
    letGo,
    // `transaction: true` admits with the whole request: the owner's key is invisible until it commits.
    invisibleOwners: options.transaction === true,
    cache,
    leaseMs,
    inFlightWaitMs: waitMs,
    // A handler commits nothing until it answers, so a live lease says nothing about how far it
    // got: retry soon (each retry waits again, up to inFlightWaitMs).
    retryAfterMs: () => 1000,
  };

  /** The handler runs under `lease`: the framework edge calls it, then `complete` with its response. */
  function execution(lease: Lease): Promise<Decision> | Decision {
    const run = new LeasedRun(store, letGo, lease, keys.begin(lease.clientId, lease.key), report);
    if (options.transaction) return TransactionExecution.open(run, leaseMs, maxResponseBytes);
    return { kind: 'run', execution: new PlainExecution(run, maxResponseBytes) };
  }

  /**
   * `transaction: true`: one admission attempt with the whole request (admission, handler and
   * response in one transaction), the key marked in flight here from before its INSERT so that a
   * duplicate in this process waits here, not in the database.
   */
  async function admitWhole(input: AdmitInput): Promise<AdmitAttempt<{ readonly owned: true; readonly decision: Decision }>> {
    const run = new LeasedRun(store, letGo, { clientId: input.clientId, key: input.key, token: '' }, keys.begin(input.clientId, input.key), report);
    const begun = await TransactionExecution.admit(run, input, leaseMs, maxResponseBytes);
    if (!('found' in begun)) return { owned: true, decision: begun };
    run.end();
    return begun.found;
  }

  async function admitted(request: GuardedRequest, clientId: string, key: string, requestHash: string, echo: Record<string, string>): Promise<Decision> {
    const input = { clientId, key, requestHash, endpoint: `${request.method.toUpperCase()} ${request.route}`, requestBody: '', leaseMs, ttlMs };
    // Empty identity: the guard compares fingerprints, never request text.
    const asking = { clientId, key, requestHash, identity: '', prefer: request.prefer, echo };
    if (options.transaction) {
      const decided = await admitRequest(policy, asking, (waitMs) => admitWhole({ ...input, waitMs }));
      if (decided.kind === 'owned') return decided.admitted.decision;
      return decided.kind === 'answer' ? answer(decided.answer) : execution(decided.lease);
    }
    const decided = await admitRequest(policy, asking, () => store.admit(input));
    switch (decided.kind) {
      case 'answer':
        return answer(decided.answer);
      case 'owned':
        return execution(decided.admitted.lease);
      case 'taken-over':
        return execution(decided.lease);
    }
  }

  /** The guard as the pre-admission checks (`../pre-admission.ts`) see it. */
  const front: KeyedFrontEnd<GuardedRequest, GuardedBody, undefined, Decision> = {
    maxBodyBytes,
    cache,
    digest,
    noCaller: 'this request has no caller',
    caller: (request) => (request.clientId === '' ? null : request.clientId),
    keyHeader: (request) => request.keyHeader,
    body: (request) => (typeof request.body === 'function' ? request.body() : request.body),
    fingerprint: fingerprintOf,
    admit: (request, keyed, requestHash) => admitted(request, keyed.clientId, keyed.key, requestHash, keyed.echo),
    answer,
    report,
  };

  const guard: Guard = {
    guards: (method) => methods.has(method.toUpperCase()),
    maxBodyBytes,
    decide(request) {
      if (!methods.has(request.method.toUpperCase())) return Promise.resolve(PASS);
      if (request.keyHeader === null && options.keyMissing === 'pass') return Promise.resolve(PASS);
      return checkThenAdmit(front, request);
    },
  };
  return traceGuard(guard, tracingOf(options.telemetry));
}
