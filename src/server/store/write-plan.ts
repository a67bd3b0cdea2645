/**
 * The semantics of a fenced write, written once for every store: what a {@link WriteChange} (and
 * the result of the work committed with it) does to the key row, as column values. A store
 * applies a {@link RowChange} with ONE fenced statement (an UPDATE, or for a forgotten row a
 * DELETE), and {@link admitFirst} runs a first phase or a whole request inside an admission.
 *
 * The row under a lease, and what each change leaves (every write is fenced by
 * `state = 'started' AND lease_token = $token`; no row matched: the lease is lost):
 *
 * ```
 * change    recovery_point  data          state / response   lease_token, lease_until     attempts, next_attempt_at
 * phase     last point      merged        —                  kept, now + leaseMs          —
 * finish    before's, if any merged       finished, set      NULL, NULL                   —      (expires_at restarts)
 * release   —               —             —                  NULL, NULL                   —      (forget: DELETE if no point)
 * park      —               —             —                  NULL, NULL                   +1, now + retryAfterMs
 * ```
 *
 * @module
 */
import { finalOf, pointOf } from './core.js';
import type { AdmitResult, FirstPhase, KeyRow, StoredResponse, Tx, WholeRequest, WriteChange } from './records.js';

/**
 * A fenced write as the row's new column values (see the table in this module's comment). Fields
 * left `undefined` leave their column as it is.
 */
export interface RowChange {
  /** `release` with `forget`: DELETE the row when it has no recovery point yet; when it has one, apply the rest (a release). */
  readonly deleteIfNoPoint: boolean;
  /** The row's new recovery point. */
  readonly recoveryPoint: string | undefined;
  /** Merged into the row's data (`{ ...data, ...patch }`, keys holding `undefined` dropped); empty: no change. */
  readonly data: Readonly<Record<string, unknown>>;
  /** A number: the lease refreshed to expire that many ms from now (store clock). `null`: the lease cleared (token and expiry). */
  readonly leaseMs: number | null;
  /** `state = 'finished'` with this response (already size-checked), and the row's retention counted again from now. */
  readonly response: StoredResponse | undefined;
  /** A park: `attempts + 1`, and the row is not swept again for this many ms. */
  readonly retryAfterMs: number | undefined;
}

const UNCHANGED = { deleteIfNoPoint: false, recoveryPoint: undefined, response: undefined, retryAfterMs: undefined } as const;

/**
 * The row's new column values for `change`, given the result of the work committed with it: the
 * points folded into the last one with their data merged in order, the final response computed
 * and size-checked against `limits.maxResponseBytes` UTF-8 bytes (throws `ResponseTooLargeError`,
 * naming `limits.store` and `limits.key`, over it: the store then commits nothing),
 * the lease refreshed or cleared. Call it inside the write's transaction, after the work.
 *
 * @example
 * ```ts
 * const row = planWrite({ kind: 'phase', recoveryPoint: 'H1_DONE', data: { risk: 'low' }, leaseMs: 10_000 }, undefined, { store: 'myStore', key, maxResponseBytes: 65_536 });
 * // { recoveryPoint: 'H1_DONE', data: { risk: 'low' }, leaseMs: 10000, deleteIfNoPoint: false, response: undefined, retryAfterMs: undefined }
 * ```
 */
export function planWrite<T>(
  change: WriteChange<T>,
  result: T | undefined,
  limits: { readonly store: string; readonly key: string; readonly maxResponseBytes: number },
): RowChange {
  switch (change.kind) {
    case 'phase': {
      const point = pointOf(change, result);
      return { ...UNCHANGED, recoveryPoint: point.recoveryPoint, data: point.data, leaseMs: point.leaseMs };
    }
    case 'finish': {
      const response = finalOf(limits.store, limits.key, limits.maxResponseBytes, change.response, result);
      const mark = change.before ? pointOf({ ...change.before, leaseMs: 0 }, undefined) : undefined;
      return { ...UNCHANGED, recoveryPoint: mark?.recoveryPoint, data: mark?.data ?? {}, leaseMs: null, response };
    }
    case 'release':
      return { ...UNCHANGED, deleteIfNoPoint: change.forget, data: {}, leaseMs: null };
    case 'park':
      return { ...UNCHANGED, data: {}, leaseMs: null, retryAfterMs: change.retryAfterMs };
  }
}

/**
 * Throws when `work` is given with a change that takes none (`release`, `park`): a store calls it
 * before it opens the write's transaction.
 *
 * @example
 * ```ts
 * refuseIdleWork('myStore', change, work);
 * ```
 */
export function refuseIdleWork<T>(store: string, change: WriteChange<T>, work: ((tx: Tx) => Promise<T>) | undefined): void {
  if (work && (change.kind === 'release' || change.kind === 'park')) throw new TypeError(`${store}: a '${change.kind}' write takes no work`);
}

/** An owner's admission, as {@link admitFirst} is given it. */
export type Owned = Extract<AdmitResult<never>, { owned: true }>;

/**
 * The work handed to an admission (`KeyStore.admit`'s `first`), inside the admission's own
 * transaction after the row was inserted (nobody else can see it, so no fence is needed): the work
 * on `tx`, then `apply` of the {@link RowChange} it leads to (a first phase's point, or a whole
 * request's response, finished: the same change a `write` applies, to a row whose data is still
 * `{}`). Answers the owner's result with the row as written; a throw leaves the store to roll the
 * whole transaction back (the key included).
 *
 * @example
 * ```ts
 * if (first) return admitFirst(owned, first, tx, (row) => applyRow(tx, owned.lease, row), { store: 'myStore', key: input.key, maxResponseBytes: 65_536 });
 * ```
 */
export async function admitFirst<T>(
  owned: Owned,
  first: FirstPhase<T> | WholeRequest<T>,
  tx: Tx,
  apply: (change: RowChange) => Promise<void> | void,
  limits: { readonly store: string; readonly key: string; readonly maxResponseBytes: number },
): Promise<AdmitResult<T>> {
  if ('response' in first) {
    const value = await first.work(tx, owned.row);
    const change = planWrite({ kind: 'finish', response: first.response(value) }, undefined, limits);
    const applied = apply(change);
    if (applied) await applied;
    const row: KeyRow = { ...owned.row, state: 'finished', response: change.response!, leaseRemainingMs: null };
    return { owned: true, lease: owned.lease, row, first: { value } };
  }
  const value = await first.work(tx);
  const change = planWrite({ kind: 'phase', ...first.phase }, value, limits);
  const applied = apply(change);
  if (applied) await applied;
  const row: KeyRow = { ...owned.row, recoveryPoint: change.recoveryPoint!, data: change.data, leaseRemainingMs: change.leaseMs };
  return { owned: true, lease: owned.lease, row, first: { value } };
}
