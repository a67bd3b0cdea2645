/**
 * A phase's data and its recovery point folded with the points around it, for stores that write
 * them in one statement (SQLite always; PostgreSQL for `EXTn_SENT` after a phase, and for an outcome
 * mark before a final response with no statements of its own).
 *
 * @module
 */
import type { PointCommit } from '../commits.js';
import type { PhaseCommit } from './types.js';

/**
 * What a phase merges into the row's data: its given data, then what its work produced.
 *
 * @example
 * ```ts
 * phasePatch({ recoveryPoint: 'H1_DONE', leaseMs: 1000, dataFrom: (id) => ({ id }) }, 'pay_1'); // { id: 'pay_1' }
 * ```
 */
export function phasePatch<T>(phase: PhaseCommit<T> | PointCommit, result: T | undefined): Readonly<Record<string, unknown>> {
  const produced = 'dataFrom' in phase ? phase.dataFrom?.(result) : undefined;
  return phase.data && produced ? { ...phase.data, ...produced } : (produced ?? phase.data ?? {});
}

/**
 * A phase's point, folded with the mark before it and the point after it into one point: the
 * last point, the lease it asks for, every data patch in order, and durable when any of them is
 * (one commit now stands for all three).
 *
 * @example
 * ```ts
 * folded(undefined, { recoveryPoint: 'H1_DONE', leaseMs: 1000, durable: false }, { id: 1 }, { recoveryPoint: 'EXT1_SENT', leaseMs: 1000 });
 * // { recoveryPoint: 'EXT1_SENT', leaseMs: 1000, durable: true, data: { id: 1 } }
 * ```
 */
export function folded(
  mark: PointCommit | undefined,
  phase: Pick<PointCommit, 'recoveryPoint' | 'leaseMs' | 'durable'>,
  patch: Readonly<Record<string, unknown>>,
  next: PointCommit | undefined,
): PointCommit & { readonly data: Readonly<Record<string, unknown>> } {
  // Keys holding `undefined` are dropped first, as JSON drops them from each separate write.
  const data = mark?.data || next?.data ? { ...defined(mark?.data), ...defined(patch), ...defined(next?.data) } : patch;
  const durable = phase.durable !== false || (mark !== undefined && mark.durable !== false) || (next !== undefined && next.durable !== false);
  const last = next ?? phase;
  return { recoveryPoint: last.recoveryPoint, leaseMs: last.leaseMs, durable, data };
}

function defined(patch: Readonly<Record<string, unknown>> | undefined): Record<string, unknown> {
  const kept: Record<string, unknown> = {};
  if (patch) for (const [key, value] of Object.entries(patch)) if (value !== undefined) kept[key] = value;
  return kept;
}

/**
 * Whether merging `patch` into a row's data changes it (JSON drops keys holding `undefined`).
 *
 * @example
 * ```ts
 * hasData({ risk: undefined }); // false
 * ```
 */
export function hasData(patch: Readonly<Record<string, unknown>> | undefined): boolean {
  if (patch) for (const key of Object.keys(patch)) if (patch[key] !== undefined) return true;
  return false;
}
