/**
 * The reference handler's admitted request: admission with the operation's first local step (or
 * its whole work), then what admission decided — run the steps on a fresh row, run them from a
 * dead owner's recovery point after a takeover, or the answer admission gave (replay, `409`,
 * `422`). Every function takes the handler's {@link HandlerRun}, built once by
 * `createIdempotencyHandler`, and returns its result: nothing passes through a captured variable.
 *
 * ```
 * admitOnce ─► owned (with the points its first step committed) ─► finished in the admission? ─► stored response
 *                                                                └► runSteps from the row ─► answer
 *          ─► taken over ─► reload under our lease ─► runSteps from its recovery point ─► answer
 *          ─► answer (replay, 409, 422; or 503 when the first step itself failed)
 * ```
 *
 * @module
 * @internal
 */
import { admitRequest, rememberFinished, type AdmissionPolicy } from './admission.js';
import { problemAnswer, respond, type Answer } from './answers.js';
import type { HandlerConfig } from './handler-config.js';
import type { InFlight } from './in-flight.js';
import type { LetGo } from './let-go.js';
import type { Admission } from './parse-input.js';
import { firstLocalPhase, wholeLocalRequest } from './phase-plan.js';
import { reportError, runSteps, type StepsOutcome } from './phases.js';
import { ProblemType } from './problems.js';
import type { ReplayCache } from './replay-cache.js';
import { runWholeRequest } from './store/request-transaction.js';
import type { AdmitInput, AdmitResult, KeyRow, Lease } from './store/types.js';
import { tracedPhase, type RequestTrace, type StepsTrace } from './telemetry.js';
import type { IdempotentOperation } from './types.js';

/** What every request of one handler shares, built once. */
export interface HandlerRun {
  readonly config: HandlerConfig;
  readonly keys: InFlight;
  readonly letGo: LetGo;
  readonly cache: ReplayCache | undefined;
  readonly policy: AdmissionPolicy;
}

/** One keyed request past the pre-admission checks: its operation, parsed input and admission. */
export interface AdmittedRequest {
  readonly operation: IdempotentOperation<unknown>;
  readonly input: unknown;
  readonly admission: Admission;
  readonly echo: Readonly<Record<string, string>>;
  readonly prefer: string | null;
  readonly trace: RequestTrace | undefined;
}

/** A key this request owns, with the points its admission committed with the first local step (none when it ran no step, or ran the whole operation). */
interface OwnedKey {
  readonly owned: true;
  readonly lease: Lease;
  readonly row: KeyRow;
  readonly admitted: readonly string[] | undefined;
}

/** How a run of the steps treats a transient failure, and what its admission already committed. */
interface RunHow {
  readonly onTransient: 'release' | 'park';
  readonly admitted?: readonly string[] | undefined;
}

/**
 * Runs `operation`'s steps under `lease` from `row`'s recovery point (see `phases.ts`), the key
 * marked in flight in this process meanwhile.
 *
 * @example
 * ```ts
 * const outcome = await executeSteps(run, operation, lease, row, input, { onTransient: 'park' });
 * ```
 */
export function executeSteps(
  run: HandlerRun,
  operation: IdempotentOperation<unknown>,
  lease: Lease,
  row: KeyRow,
  input: unknown,
  how: RunHow,
  trace?: StepsTrace,
): Promise<StepsOutcome> {
  const { config } = run;
  const end = run.keys.begin(lease.clientId, lease.key);
  // Spelled out, not spread from `config`: this literal is built for every executed request.
  return runSteps({
    store: config.store,
    operation,
    lease,
    input,
    recoveryPoint: row.recoveryPoint,
    data: row.data,
    attempts: row.attempts,
    namespace: config.namespace,
    leaseMs: config.leaseMs,
    hooks: config.hooks,
    metrics: config.metrics,
    onTransient: how.onTransient,
    letGo: run.letGo,
    backoff: config.backoff,
    admitted: how.admitted,
    trace,
  }).finally(end);
}

/**
 * One admission attempt: the store's admission of the request, carrying the operation's first
 * local step, or its whole work when it calls nothing external (one transaction, one commit).
 * `waitMs`: how long a whole request's INSERT may wait for another admission of the key.
 */
async function admitOnce(run: HandlerRun, request: AdmittedRequest, waitMs: number) {
  const { config } = run;
  const { operation, admission } = request;
  const { clientId, key, requestHash, endpoint, requestBody } = admission;
  const at = { clientId, key, input: request.input, namespace: config.namespace, handOver: config.hooks.afterCommit === undefined };
  const whole = wholeLocalRequest(operation, at);
  const phase = whole ? undefined : firstLocalPhase(operation, { ...at, leaseMs: config.leaseMs });
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
  try {
    const result = await tracedPhase(request.trace, 'admit', (): Promise<AdmitResult> =>
      whole ? runWholeRequest(config.store, input, whole) : config.store.admit(input, phase),
    );
    if (!result.owned) return result;
    const owned: OwnedKey = { owned: true, lease: result.lease, row: result.row, admitted: result.first && phase ? phase.points : undefined };
    return owned;
  } catch (error) {
    if (!(whole ?? phase)?.threw(error)) throw error;
    // The step failed, so nothing was stored, not even the key: as when a step fails after its
    // own admission (the row is forgotten), a retry with the same key starts afresh.
    reportError(config.hooks, error, { clientId, key });
    return respond({ kind: 'transient', retryAfterMs: 1000, cause: error }, request.echo);
  }
}

/** The answer to an executed run; a finished one is kept in the replay cache. */
function executed(run: HandlerRun, outcome: StepsOutcome, row: KeyRow, request: AdmittedRequest): Answer {
  if (outcome.kind === 'finished' && run.cache) rememberFinished(run.cache, row, request.admission, outcome.response);
  return respond(outcome, request.echo);
}

/**
 * Admits `request` (waiting for an owner in flight, taking a dead owner's row over) and runs its
 * steps when it owns the key; store errors propagate (the caller answers `503`).
 *
 * @example
 * ```ts
 * const answer = await admitAndRun(run, { operation, input, admission, echo, prefer: null, trace: undefined });
 * ```
 */
export async function admitAndRun(run: HandlerRun, request: AdmittedRequest): Promise<Answer> {
  const { admission, echo, trace } = request;
  const asking = {
    clientId: admission.clientId,
    key: admission.key,
    requestHash: admission.requestHash,
    identity: admission.identity,
    prefer: request.prefer,
    echo,
    waited: trace ? () => trace.waited() : undefined,
  };
  const decided = await admitRequest<OwnedKey>(run.policy, asking, (waitMs) => admitOnce(run, request, waitMs));
  switch (decided.kind) {
    case 'answer':
      return decided.answer;
    case 'owned': {
      const { row, lease, admitted } = decided.admitted;
      // The whole operation ran and finished in the admission's transaction.
      if (row.state === 'finished' && row.response) return executed(run, { kind: 'finished', response: row.response }, row, request);
      return executed(run, await executeSteps(run, request.operation, lease, row, request.input, { onTransient: 'release', admitted }, trace), row, request);
    }
    case 'taken-over': {
      run.config.metrics.add('lease_takeovers');
      trace?.tookOver();
      // Reload under our lease: the previous owner may have committed more phases since `admit` read it.
      const current = await run.letGo.reload(decided.lease);
      if (!current) return problemAnswer('transient', ProblemType.UpstreamUnavailable, 'the key vanished during takeover', { ...echo, 'retry-after': '1' });
      return executed(
        run,
        await executeSteps(run, request.operation, decided.lease, current, request.input, { onTransient: 'release' }, trace),
        current,
        request,
      );
    }
  }
}
