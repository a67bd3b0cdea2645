/**
 * An operation's first local step as the admission's own phase (see `FirstPhase` in
 * `commits.ts`), and the `EXTn_SENT` a local phase hands the store when a call follows.
 *
 * @module
 */
import { externalKey } from './derived-key.js';
import type { FirstPhase, PointCommit } from './commits.js';
import type { Tx } from './store/types.js';
import type { IdempotentOperation, Step, StepContext } from './types.js';

/** A {@link FirstPhase} built from an operation's first step, and whether an error came from its work. */
export interface FirstLocalPhase extends FirstPhase<Readonly<Record<string, unknown>> | void> {
  /** True when `error` was thrown by the step's own work (not by the store around it). */
  threw(error: unknown): boolean;
}

/**
 * The operation's first step as the admission's own phase (see {@link FirstPhase}), when that
 * step is local; `undefined` otherwise. Its context is that of a fresh row: no data yet.
 *
 * @example
 * ```ts
 * const first = firstLocalPhase(operation, { clientId, key, input, namespace, leaseMs, handOver: true });
 * const admitted = await commitsOf(store).admit({ clientId, key, requestHash, endpoint, requestBody, leaseMs, ttlMs }, first);
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
    /** Hand the store the next step's `EXTn_SENT` to commit with the phase (false when an `afterCommit` hook must see each point alone). */
    readonly handOver: boolean;
  },
): FirstLocalPhase | undefined {
  const step = operation.steps[0];
  if (step?.kind !== 'local') return undefined;
  const following = operation.steps[1];
  let thrown: { error: unknown } | undefined;
  const ctx: StepContext<Input> = {
    clientId: at.clientId,
    key: at.key,
    input: at.input,
    data: {},
    derivedKey: (n) => externalKey(at.namespace, at.clientId, at.key, n),
  };
  return {
    // Not durable yet: the next commit (EXTn_SENT or the final response) is, before anything leaves.
    commit: {
      recoveryPoint: step.point,
      leaseMs: at.leaseMs,
      dataFrom: (produced) => produced ?? undefined,
      durable: false,
      next: at.handOver ? sentOf(following, at.leaseMs) : undefined,
    },
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

/**
 * `EXTn_SENT` of `step` when it is an external call: committed, durably, right after the local
 * phase before it (in the same round trip where the store can), since nothing runs in between.
 */
export function sentOf<Input>(step: Step<Input> | undefined, leaseMs: number): PointCommit | undefined {
  return step?.kind === 'external' ? { recoveryPoint: step.sent, leaseMs, durable: true } : undefined;
}
