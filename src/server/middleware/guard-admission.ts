/**
 * The framework guard's admission of a request that passed the pre-admission checks: the store's
 * admission (plain), or the whole request's open transaction (`transaction: true`), through the
 * shared driver (`../admission.ts`), and the {@link Execution} the route's handler then runs in.
 * Every function takes the guard's {@link GuardRun}, built once by `createGuard`.
 *
 * ```
 * plain:        store.admit ─► owned / taken over ─► PlainExecution (the handler runs, then finish)
 * transaction:  beginRequest ─► owned ─► TransactionExecution over the open transaction
 *                              taken over ─► TransactionExecution.open under the new lease
 * either:       answer (replay, 409, 422) ─► sent as the guard's decision
 * ```
 *
 * @module
 * @internal
 */
import { admitRequest, type AdmissionPolicy, type AdmitAttempt } from '../admission.js';
import type { InFlight } from '../in-flight.js';
import type { LetGo } from '../let-go.js';
import type { Keyed } from '../pre-admission.js';
import type { AdmitInput, Lease } from '../store/types.js';
import type { GuardConfig } from './guard-config.js';
import { LeasedRun } from './leased-run.js';
import { PlainExecution } from './plain-execution.js';
import { TransactionExecution } from './transaction-execution.js';
import type { Decision, GuardedRequest } from './types.js';

/** What every request of one guard shares, built once. */
export interface GuardRun {
  readonly config: GuardConfig;
  readonly keys: InFlight;
  readonly letGo: LetGo;
  readonly policy: AdmissionPolicy;
}

/** An answer as the guard's decision. */
export const answerDecision = (response: Extract<Decision, { kind: 'answer' }>['response']): Decision => ({ kind: 'answer', response });

/** The handler runs under `lease`: the framework edge calls it, then `complete` with its response. */
function execution(run: GuardRun, lease: Lease): Promise<Decision> | Decision {
  const { config } = run;
  const leased = new LeasedRun(config.store, run.letGo, lease, run.keys.begin(lease.clientId, lease.key), config.report);
  if (config.transaction) return TransactionExecution.open(leased, config.leaseMs, config.maxResponseBytes);
  return { kind: 'run', execution: new PlainExecution(leased, config.maxResponseBytes) };
}

/**
 * `transaction: true`: one admission attempt with the whole request (admission, handler and
 * response in one transaction), the key marked in flight here from before its INSERT so that a
 * duplicate in this process waits here, not in the database.
 */
async function admitWhole(run: GuardRun, input: AdmitInput): Promise<AdmitAttempt<{ readonly owned: true; readonly decision: Decision }>> {
  const { config } = run;
  const lease = { clientId: input.clientId, key: input.key, token: '' };
  const leased = new LeasedRun(config.store, run.letGo, lease, run.keys.begin(input.clientId, input.key), config.report);
  const begun = await TransactionExecution.admit(leased, input, config.leaseMs, config.maxResponseBytes);
  if (!('found' in begun)) return { owned: true, decision: begun };
  leased.end();
  return begun.found;
}

/**
 * Admits `request` (waiting for an owner in flight, taking a dead owner's row over) and gives the
 * guard's decision: run the handler, or an answer. Store errors propagate (answered `503`).
 *
 * @example
 * ```ts
 * const decision = await admitGuarded(run, request, keyed, requestHash);
 * ```
 */
export async function admitGuarded(run: GuardRun, request: GuardedRequest, keyed: Keyed, requestHash: string): Promise<Decision> {
  const { config } = run;
  const { clientId, key, echo } = keyed;
  const endpoint = `${request.method.toUpperCase()} ${request.route}`;
  const input = { clientId, key, requestHash, endpoint, requestBody: '', leaseMs: config.leaseMs, ttlMs: config.ttlMs };
  // Empty identity: the guard compares fingerprints, never request text.
  const asking = { clientId, key, requestHash, identity: '', prefer: request.prefer, echo };
  if (config.transaction) {
    const decided = await admitRequest(run.policy, asking, (waitMs) => admitWhole(run, { ...input, waitMs }));
    if (decided.kind === 'owned') return decided.admitted.decision;
    return decided.kind === 'answer' ? answerDecision(decided.answer) : execution(run, decided.lease);
  }
  const decided = await admitRequest(run.policy, asking, () => config.store.admit(input));
  switch (decided.kind) {
    case 'answer':
      return answerDecision(decided.answer);
    case 'owned':
      return execution(run, decided.admitted.lease);
    case 'taken-over':
      return execution(run, decided.lease);
  }
}
