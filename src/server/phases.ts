/**
 * Runs an operation's steps from a row's recovery point, under a fenced lease.
 *
 * ```
 * point on the row   what runs next
 * ─────────────────  ───────────────────────────────────────────────────────────────
 * null               step 0
 * <local>.point      the step after it (its work committed with the point)
 * <ext>.sent         probe by Kn: done → commit <ext>.done · absent → call again with Kn
 *                    · unknown → park (202) · refused → finish with the refusal
 * <ext>.done         the step after it
 * (all steps done)   final step: its work + state=finished + response, one transaction
 * ```
 *
 * The lease is refreshed at each commit, never during an external call (PROTOCOL.md): a hung
 * call must not hold its key forever. Give every external call a timeout well inside the lease;
 * a slower one is taken over, and the late owner is fenced out when it tries to commit. That is
 * safe because the new owner probes by `Kn` before calling again.
 *
 * Fewer commits, through the KeyStore contract itself (`store/types.ts`): an operation's first
 * local step is handed to `admit` (`firstLocalPhase` in `phase-plan.ts`); an outcome mark (`EXTn_DONE`) goes
 * with the commit that follows it as its `before`, and a local phase followed by an external call
 * takes that call's `EXTn_SENT` as its `after`. When the commit carrying a mark fails, the mark is
 * committed again on its own: the outcome it records is kept (else the next attempt probes). With
 * an `afterCommit` hook, each point must be seen committed before anything after it commits: the
 * runner then commits every point alone.
 *
 * Every commit is fenced by the lease token. A fenced write that comes back `ok: false` means
 * another actor took the row over: this attempt stops at once and commits nothing more; the new
 * owner resumes from the last committed point, so no step's work is committed twice.
 *
 * @module
 */
import { externalKey } from './derived-key.js';
import type { LetGo } from './let-go.js';
import type { ServerMetrics } from './metrics.js';
import { LeaseLostError } from './store/lease-lost.js';
import { resumePosition, sentOf } from './phase-plan.js';
import type { KeyStore, Lease, PointWrite, StoredResponse } from './store/types.js';
import type { ExternalOutcome, IdempotentOperation, StepContext } from './types.js';
import { tracedCall, tracedPhase, type StepsTrace } from './telemetry.js';

/** Called after every commit; the reference app's crash faults kill the process here. */
export interface PhaseHooks {
  /**
   * Runs right after `point` (a recovery point, or `finished`) committed for the key `ref`, before
   * anything after it commits. A test and fault-injection tool: to keep that promise on
   * PostgreSQL, each point around an external call then takes a round trip of its own instead of
   * riding with the phase next to it (see the module notes).
   *
   * @example
   * ```ts
   * const hooks = { afterCommit: (point: string) => { if (point === 'EXT2_SENT') process.kill(process.pid, 'SIGKILL'); } };
   * ```
   */
  afterCommit?(point: string, ref: { readonly clientId: string; readonly key: string }): void | Promise<void>;
  /**
   * Runs when a store or step error turned an attempt into a transient `503` (or the worker's
   * backoff), so the application can log the cause it would otherwise never see.
   *
   * @example
   * ```ts
   * const hooks = { onError: (error: unknown, ref: { clientId: string; key: string }) => log.warn({ err: error, ...ref }, 'attempt failed') };
   * ```
   */
  onError?(error: unknown, ref: { readonly clientId: string; readonly key: string }): void;
}

/** How a run of the steps ended. */
export type StepsOutcome =
  /** Finished (a result or a stored refusal): the response is stored and is the answer. */
  | { readonly kind: 'finished'; readonly response: StoredResponse }
  /** Outcome unknown: the row is parked at its `sent` point. */
  | { readonly kind: 'pending'; readonly retryAfterMs: number }
  /** Transient failure (upstream unavailable, store error): nothing final stored, lease given up. */
  | { readonly kind: 'transient'; readonly retryAfterMs: number; readonly cause?: unknown }
  /** Another actor took the row over: this attempt committed nothing more. */
  | { readonly kind: 'lost' };

/** What {@link runSteps} needs. */
export interface RunStepsInput<Input> {
  readonly store: KeyStore;
  readonly operation: IdempotentOperation<Input>;
  readonly lease: Lease;
  readonly input: Input;
  /** The row's committed recovery point and data, read while holding `lease`. */
  readonly recoveryPoint: string | null;
  readonly data: Readonly<Record<string, unknown>>;
  /** Park attempts so far, for the backoff. */
  readonly attempts: number;
  readonly namespace: string;
  readonly leaseMs: number;
  readonly hooks: PhaseHooks;
  readonly metrics: ServerMetrics;
  /** What a transient failure does with the lease: a request releases it, the recovery worker parks (backs off). */
  readonly onTransient: 'release' | 'park';
  /** How the lease is let go after a transient failure: retried when the store cannot record it (`let-go.ts`). */
  readonly letGo: Pick<LetGo, 'release' | 'park'>;
  /** Park backoff: `min(maxMs, baseMs · 2^attempts)`. */
  readonly backoff: { readonly baseMs: number; readonly maxMs: number };
  /**
   * The points the admission itself just committed with its first phase (`FirstLocalPhase.points`, `phase-plan.ts`),
   * in order: their `afterCommit` hooks run before anything else, and an `EXTn_SENT` among them
   * is this attempt's own, so that call is made with no probe first.
   */
  readonly admitted?: readonly string[] | undefined;
  /** Spans for each commit and external call, when the handler traces. */
  readonly trace?: StepsTrace | undefined;
}

/**
 * Runs the steps of `operation` from the row's recovery point to the end (or to the first
 * unknown outcome, transient failure or lost lease). Never throws: a store or step error is a
 * transient outcome after the lease was given up.
 *
 * @example
 * ```ts
 * const outcome = await runSteps({ store, operation, lease, input, recoveryPoint: null, data: {}, attempts: 0, namespace, leaseMs: 10_000,
 *   hooks: {}, metrics, onTransient: 'release', letGo: createLetGo({ store, leaseMs: 10_000 }), backoff: { baseMs: 1000, maxMs: 60_000 } });
 * ```
 */
export async function runSteps<Input>(run: RunStepsInput<Input>): Promise<StepsOutcome> {
  const { store, operation, lease, leaseMs } = run;
  const ref = { clientId: lease.clientId, key: lease.key };
  let point = run.recoveryPoint;
  let data: Readonly<Record<string, unknown>> = run.data;
  const ctx = (): StepContext<Input> => ({
    clientId: lease.clientId,
    key: lease.key,
    input: run.input,
    data,
    derivedKey: (n) => externalKey(run.namespace, lease.clientId, lease.key, n),
  });
  const report = (error: unknown): void => reportError(run.hooks, error, ref);
  const committed = async (next: string): Promise<void> => {
    point = next;
    run.trace?.committed(next);
    await run.hooks.afterCommit?.(next, ref);
  };
  // An outcome mark (EXTn_DONE) waits to go with the next commit, as its `before`.
  let mark: PointWrite | undefined;
  // Points ride with the commits next to them unless an afterCommit hook must see each alone.
  const handOver = run.hooks.afterCommit === undefined;
  // This attempt committed the coming external step's EXTn_SENT itself: the call has not been made, so no probe.
  let sentCommitted = false;
  /** A commit carrying the pending mark; when it fails, the mark is committed alone (the outcome stays known). */
  const withMark = async <R>(commit: (before: PointWrite | undefined) => Promise<R>): Promise<R> => {
    const before = mark;
    mark = undefined;
    try {
      return await commit(before);
    } catch (error) {
      if (before) await store.write(lease, { kind: 'phase', ...before, leaseMs }).catch(() => undefined);
      throw error;
    }
  };
  const finish = async (response: StoredResponse): Promise<StepsOutcome> => {
    const done = await tracedPhase(run.trace, 'finished', () => withMark((before) => store.write(lease, { kind: 'finish', response, before })));
    if (!done.ok) throw new LeaseLostError();
    await committed('finished');
    return { kind: 'finished', response };
  };
  const giveUp = async (retryAfterMs: number, cause?: unknown): Promise<StepsOutcome> => {
    // Often the store is what failed, and this fails too: the let-go is then retried until it is
    // recorded, so the answer's promise (the key is free again) holds once the store recovers.
    if (run.onTransient === 'park') await run.letGo.park(lease, { retryAfterMs: backoffMs(run) });
    else await run.letGo.release(lease, { forget: point === null });
    return cause === undefined ? { kind: 'transient', retryAfterMs } : { kind: 'transient', retryAfterMs, cause };
  };

  try {
    for (const admitted of run.admitted ?? []) await committed(admitted);
    let { index, atSent } = resumePosition(operation, point);
    if (atSent && run.admitted?.includes(point!)) [atSent, sentCommitted] = [false, true];
    for (; index < operation.steps.length; index += 1, atSent = false) {
      const step = operation.steps[index]!;
      if (step.kind === 'local') {
        const next = handOver ? sentOf(operation.steps[index + 1]) : undefined;
        const phase = await tracedPhase(run.trace, step.point, () =>
          withMark((before) =>
            store.write<Readonly<Record<string, unknown>> | void>(
              lease,
              { kind: 'phase', recoveryPoint: step.point, leaseMs, dataFrom: (produced) => produced ?? undefined, before, after: next },
              (tx) => step.run(ctx(), tx),
            ),
          ),
        );
        if (!phase.ok) throw new LeaseLostError();
        data = merged(data, phase.value);
        await committed(step.point);
        if (next) {
          await committed(next.recoveryPoint);
          sentCommitted = true;
        }
        continue;
      }
      const kn = externalKey(run.namespace, lease.clientId, lease.key, step.system);
      if (!atSent && !sentCommitted) {
        // Durable: the call follows, and a resumed attempt must find EXTn_SENT to probe before calling again.
        const sent = await tracedPhase(run.trace, step.sent, () =>
          withMark((before) => store.write(lease, { kind: 'phase', recoveryPoint: step.sent, leaseMs, before })),
        );
        if (!sent.ok) throw new LeaseLostError();
        await committed(step.sent);
      }
      sentCommitted = false;
      // A call or probe that throws (connection reset, timeout) tells us nothing about whether the
      // instruction arrived: that is an unknown outcome, never a failure.
      let outcome: ExternalOutcome;
      try {
        if (atSent) {
          // EXTn_SENT is ambiguous by construction: the dead attempt may or may not have reached
          // the system. Ask it by Kn first; only "absent" makes a second call (with the same Kn) safe.
          const probed = await tracedCall(run.trace, step.system, true, () => step.probe(ctx(), kn));
          outcome = probed.outcome === 'absent' ? await tracedCall(run.trace, step.system, false, () => step.call(ctx(), kn)) : probed;
        } else {
          outcome = await tracedCall(run.trace, step.system, false, () => step.call(ctx(), kn));
        }
      } catch (error) {
        report(error);
        outcome = { outcome: 'unknown' };
      }
      switch (outcome.outcome) {
        case 'done': {
          const produced = outcome.data ?? {};
          const { done } = step;
          data = merged(data, produced);
          if (handOver) {
            mark = { recoveryPoint: done, data: produced };
            break;
          }
          if (!(await store.write(lease, { kind: 'phase', recoveryPoint: done, data: produced, leaseMs })).ok) throw new LeaseLostError();
          await committed(done);
          break;
        }
        case 'refused':
          return await finish(outcome.response);
        case 'unknown': {
          const retryAfterMs = backoffMs(run);
          if (!(await store.write(lease, { kind: 'park', retryAfterMs })).ok) throw new LeaseLostError();
          return { kind: 'pending', retryAfterMs };
        }
        case 'unavailable':
          return await giveUp(outcome.retryAfterMs ?? 1000);
      }
    }
    const final = await tracedPhase(run.trace, 'finished', () =>
      withMark((before) =>
        store.write<StoredResponse>(lease, { kind: 'finish', response: (response) => response!, before }, (tx) => operation.final.run(ctx(), tx)),
      ),
    );
    if (!final.ok) throw new LeaseLostError();
    await committed('finished');
    return { kind: 'finished', response: final.value! };
  } catch (error) {
    if (error instanceof LeaseLostError) {
      run.metrics.add('leases_lost');
      return { kind: 'lost' };
    }
    report(error);
    return giveUp(1000, error);
  }
}

/** `{ ...data, ...produced }`, without a copy when nothing was produced. */
function merged(data: Readonly<Record<string, unknown>>, produced: Readonly<Record<string, unknown>> | void): Readonly<Record<string, unknown>> {
  if (!produced) return data;
  for (const _ in produced) return { ...data, ...produced };
  return data;
}

/**
 * Tells `hooks.onError` about an attempt's failure; a hook that throws is ignored.
 *
 * @example
 * ```ts
 * reportError(hooks, error, { clientId: 'acme', key: 'k1' });
 * ```
 */
export function reportError(hooks: PhaseHooks, error: unknown, ref: { readonly clientId: string; readonly key: string }): void {
  try {
    hooks.onError?.(error, ref);
  } catch {
    // A failing logger must not change what happens to the request.
  }
}

function backoffMs(run: Pick<RunStepsInput<unknown>, 'attempts' | 'backoff'>): number {
  return Math.min(run.backoff.maxMs, run.backoff.baseMs * 2 ** Math.min(run.attempts, 30));
}
