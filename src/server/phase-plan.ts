/**
 * What the phase runner (`phases.ts`) plans before it commits: where a run resumes from a row's
 * recovery point, the operation's first local step as the admission's own phase (or, with no
 * external call, the whole operation as the admission's own work), and the
 * `EXTn_SENT` a local phase writes as its point after.
 *
 * @module
 */
import { externalKey } from './derived-key.js';
import type { FirstPhase, PointWrite, StoredResponse, Tx, WholeRequest } from './store/types.js';
import type { IdempotentOperation, Step, StepContext } from './types.js';

/**
 * Index of the first step still to run, and whether that step is an external call found at `sent`.
 *
 * @example
 * ```ts
 * resumePosition(operation, 'EXT1_SENT'); // { index: 1, atSent: true }
 * ```
 */
export function resumePosition<Input>(operation: IdempotentOperation<Input>, point: string | null): { index: number; atSent: boolean } {
  if (point === null) return { index: 0, atSent: false };
  for (const [index, step] of operation.steps.entries()) {
    if (step.kind === 'local' && step.point === point) return { index: index + 1, atSent: false };
    if (step.kind === 'external' && step.done === point) return { index: index + 1, atSent: false };
    if (step.kind === 'external' && step.sent === point) return { index, atSent: true };
  }
  throw new Error(`recovery point ${JSON.stringify(point)} is not a step of ${operation.method} ${operation.path}`);
}

/** The first local step of an operation as the admission's own phase, and whether an error came from its work. */
export interface FirstLocalPhase extends FirstPhase<Readonly<Record<string, unknown>> | void> {
  /** The points the admission commits with it, in order (`RunStepsInput.admitted` in `phases.ts`). */
  readonly points: readonly string[];
  /** True when `error` was thrown by the step's own work (not by the store around it). */
  threw(error: unknown): boolean;
}

/**
 * The operation's first step as the admission's own phase, when that step is local; `undefined`
 * otherwise. Its context is that of a fresh row: no data yet. With `handOver`, the next step's
 * `EXTn_SENT` is its `after` (false when an `afterCommit` hook must see each point alone).
 *
 * @example
 * ```ts
 * const first = firstLocalPhase(operation, { clientId, key, input, namespace, leaseMs, handOver: true });
 * const admitted = await store.admit(admission, first);
 * ```
 */
export function firstLocalPhase<Input>(
  operation: IdempotentOperation<Input>,
  at: {
    readonly clientId: string;
    readonly key: string;
    readonly input: Input;
    readonly namespace: string;
    readonly leaseMs: number;
    readonly handOver: boolean;
  },
): FirstLocalPhase | undefined {
  const step = operation.steps[0];
  if (step?.kind !== 'local') return undefined;
  const after = at.handOver ? sentOf(operation.steps[1]) : undefined;
  let thrown: { error: unknown } | undefined;
  const ctx: StepContext<Input> = {
    clientId: at.clientId,
    key: at.key,
    input: at.input,
    data: {},
    derivedKey: (n) => externalKey(at.namespace, at.clientId, at.key, n),
  };
  return {
    phase: { recoveryPoint: step.point, leaseMs: at.leaseMs, dataFrom: (produced) => produced ?? undefined, after },
    points: after ? [step.point, after.recoveryPoint] : [step.point],
    async work(tx: Tx) {
      try {
        return await step.run(ctx, tx);
      } catch (error) {
        thrown = { error };
        throw error;
      }
    },
    threw: (error) => thrown !== undefined && thrown.error === error,
  };
}

/** An operation with no external call, run whole in the admission's transaction, and whether an error came from its steps. */
export interface WholeLocalRequest extends WholeRequest<StoredResponse> {
  /** True when `error` was thrown by one of the operation's own steps (not by the store around them). */
  threw(error: unknown): boolean;
}

/**
 * The whole operation as the admission's own work, when none of its steps calls an external
 * system (and no `afterCommit` hook must see each point alone): its local steps in order, then its
 * final step, in one transaction with the key and the stored response — one commit, as the same
 * work unguarded. `undefined` otherwise.
 *
 * @example
 * ```ts
 * const whole = wholeLocalRequest(operation, { clientId, key, input, namespace, handOver: true });
 * if (whole) await runWholeRequest(store, admission, whole);
 * ```
 */
export function wholeLocalRequest<Input>(
  operation: IdempotentOperation<Input>,
  at: { readonly clientId: string; readonly key: string; readonly input: Input; readonly namespace: string; readonly handOver: boolean },
): WholeLocalRequest | undefined {
  if (!at.handOver || operation.steps.some((step) => step.kind !== 'local')) return undefined;
  let thrown: { error: unknown } | undefined;
  const ctx = (data: Readonly<Record<string, unknown>>): StepContext<Input> => ({
    clientId: at.clientId,
    key: at.key,
    input: at.input,
    data,
    derivedKey: (n) => externalKey(at.namespace, at.clientId, at.key, n),
  });
  return {
    async work(tx: Tx) {
      try {
        let data: Readonly<Record<string, unknown>> = {};
        for (const step of operation.steps) {
          if (step.kind !== 'local') continue;
          const produced = await step.run(ctx(data), tx);
          if (produced) data = { ...data, ...produced };
        }
        return await operation.final.run(ctx(data), tx);
      } catch (error) {
        thrown = { error };
        throw error;
      }
    },
    response: (stored) => stored,
    threw: (error) => thrown !== undefined && thrown.error === error,
  };
}

/**
 * `EXTn_SENT` of `step` when it is an external call: written with the local phase before it,
 * since nothing runs in between.
 */
export const sentOf = <Input>(step: Step<Input> | undefined): PointWrite | undefined => (step?.kind === 'external' ? { recoveryPoint: step.sent } : undefined);
