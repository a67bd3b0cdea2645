/**
 * How the phase runner hands its commits to a store: the commit layer the runner owns.
 *
 * The runner often knows two or three commits ahead: a first local step right after admission,
 * an external call's `EXTn_SENT` right after the local step before it, an outcome mark
 * (`EXTn_DONE`) right before the next step. It hands them over together through {@link Commits}:
 *
 * - `admit(input, first)`: admission, then the first local phase;
 * - `commitPhase(lease, { …, prior, next }, work)`: the mark before, the phase, the point after;
 * - `finish(lease, response, work, prior)`: the mark before, the final response.
 *
 * Each call means exactly the primitives of `KeyStore` run one after another, stopping at the
 * first that fails, and that is what {@link plainCommits} does for any store. A built-in store
 * may register a folded implementation ({@link withFoldedCommits}) that commits the same
 * transactions in fewer round trips or statements; its contract suite
 * (`test/contract/keystore-chained.contract.ts`) holds it to the same results. What a folded
 * implementation may do beyond the primitives is only this: put the admission and a first phase,
 * or a phase and the point after it, in one transaction (nothing runs between them, and a crash
 * then leaves neither, as if the attempt had stopped earlier).
 *
 * A store wrapped by the application (a Proxy, a logging decorator) is a different object: it
 * gets {@link plainCommits} over its own primitives, so whatever it adds is never bypassed. A
 * wrapper that wants to keep the inner store's folding registers its own {@link Commits} over
 * `commitsOf(inner)`, as the reference server's lease tracker does.
 *
 * @module
 */
import { phasePatch } from './store/fold.js';
import { LOST } from './store/lease-lost.js';
import type { AdmitInput, AdmitResult, Fenced, FinalResponse, KeyStore, Lease, PhaseCommit, Tx } from './store/types.js';

/** A recovery point committed with no work of its own: `EXTn_SENT`, or an outcome `EXTn_DONE`. */
export type PointCommit = Omit<PhaseCommit, 'dataFrom'>;

/** An outcome mark (`EXTn_DONE`) committed before the commit it is handed with, and kept when that one fails. */
export interface PriorCommit extends PointCommit {
  /**
   * Runs once the mark has committed and before anything after it commits (the crash-fault hook;
   * it may use the store). A mark with a hook is committed on its own, before the phase starts.
   */
  readonly committed?: () => void | Promise<void>;
}

/** A phase with the commits around it. */
export interface FoldedPhase<T = unknown> extends PhaseCommit<T> {
  /** The previous step's outcome mark, committed first; it stays committed when the phase fails. */
  readonly prior?: PriorCommit | undefined;
  /**
   * A point to commit right after this phase (`EXTn_SENT` when an external call follows). The
   * result's `next` says whether it committed; when it is absent the runner commits it alone.
   */
  readonly next?: PointCommit | undefined;
}

/** An operation's first local step, handed over with its admission. */
export interface FirstPhase<T = unknown> {
  readonly commit: Omit<FoldedPhase<T>, 'prior'>;
  readonly work: (tx: Tx) => Promise<T>;
}

/**
 * What {@link Commits.admit} found. An owner whose first phase committed gets `first` (the work's
 * result; `next`: whether its point after committed too) and a `row` at that phase's point.
 * Without `first`, nothing but the admission committed.
 */
export type FoldedAdmitResult<T = unknown> =
  | (Extract<AdmitResult, { owned: true }> & { readonly first?: { readonly value: T | undefined; readonly next?: boolean } })
  | Extract<AdmitResult, { owned: false }>;

/** A phase's result: `next` is true when {@link FoldedPhase.next} committed with it. */
export type FoldedFenced<T> = ({ readonly ok: true; readonly value: T; readonly next?: boolean }) | { readonly ok: false };

/** The runner's view of a store; see the module notes. */
export interface Commits {
  /**
   * Admission, then `first` when this caller owns the key. If the first phase's work throws,
   * nothing is kept (not even the key) and `admit` rejects with the work's error.
   */
  admit<T = unknown>(input: AdmitInput, first?: FirstPhase<T>): Promise<FoldedAdmitResult<T>>;
  commitPhase<T>(lease: Lease, phase: FoldedPhase<T>, work?: (tx: Tx) => Promise<T>): Promise<FoldedFenced<T | undefined>>;
  finish<T>(lease: Lease, response: FinalResponse<T>, work?: (tx: Tx) => Promise<T>, prior?: PriorCommit): Promise<Fenced<T | undefined>>;
}

const registered = new WeakMap<KeyStore, Commits>();

/**
 * Registers a store's folded implementation of {@link Commits}; returns the store.
 *
 * @example
 * ```ts
 * return withFoldedCommits(store, { admit, commitPhase, finish });
 * ```
 */
export function withFoldedCommits<S extends KeyStore>(store: S, commits: Commits): S {
  registered.set(store, commits);
  return store;
}

/**
 * The store's registered {@link Commits}, or {@link plainCommits} over its primitives.
 *
 * @example
 * ```ts
 * const admitted = await commitsOf(store).admit(input, first);
 * ```
 */
export function commitsOf(store: KeyStore): Commits {
  let commits = registered.get(store);
  if (commits === undefined) registered.set(store, (commits = plainCommits(store)));
  return commits;
}

/** Only the primitive's own fields, whatever else the runner's commit carries. */
const plain = <T>(commit: PhaseCommit<T>): PhaseCommit<T> => ({
  recoveryPoint: commit.recoveryPoint,
  leaseMs: commit.leaseMs,
  ...(commit.data === undefined ? {} : { data: commit.data }),
  ...(commit.dataFrom === undefined ? {} : { dataFrom: commit.dataFrom }),
  ...(commit.durable === undefined ? {} : { durable: commit.durable }),
});

/**
 * {@link Commits} as the store's primitives called one by one: the mark, then the phase (or the
 * response), then the point after it; admission, then the first phase, then the point after it.
 *
 * @example
 * ```ts
 * const commits = plainCommits(myStore);
 * ```
 */
export function plainCommits(store: KeyStore): Commits {
  /** Commits `prior` alone, then its hook; false when the lease is gone. */
  const mark = async (lease: Lease, prior: PriorCommit | undefined): Promise<boolean> => {
    if (prior === undefined) return true;
    if (!(await store.commitPhase(lease, plain(prior))).ok) return false;
    await prior.committed?.();
    return true;
  };
  /**
   * The point after a committed phase: `{ next: true }` once it committed; nothing when there is
   * none or it failed (the runner then commits it alone, and meets the failure itself).
   */
  const after = async (lease: Lease, next: PointCommit | undefined): Promise<{ readonly next?: true }> => {
    if (next === undefined) return {};
    const committed = await store.commitPhase(lease, plain(next)).catch(() => ({ ok: false }));
    return committed.ok ? { next: true } : {};
  };
  return {
    async admit<T>(input: AdmitInput, first?: FirstPhase<T>): Promise<FoldedAdmitResult<T>> {
      const admitted = await store.admit(input);
      if (!admitted.owned || first === undefined) return admitted;
      let phase: Fenced<T | undefined>;
      try {
        phase = await store.commitPhase(admitted.lease, plain(first.commit), first.work);
      } catch (error) {
        // Nothing was done: the key goes too, as a folded admission would never have kept it.
        await store.release(admitted.lease, { forget: true }).catch(() => undefined);
        throw error;
      }
      if (!phase.ok) return admitted;
      const row = { ...admitted.row, recoveryPoint: first.commit.recoveryPoint, data: phasePatch(first.commit, phase.value) };
      return { ...admitted, row, first: { value: phase.value, ...(await after(admitted.lease, first.commit.next)) } };
    },
    async commitPhase<T>(lease: Lease, phase: FoldedPhase<T>, work?: (tx: Tx) => Promise<T>) {
      if (!(await mark(lease, phase.prior))) return LOST;
      const committed = await store.commitPhase(lease, plain(phase), work);
      return committed.ok ? { ...committed, ...(await after(lease, phase.next)) } : committed;
    },
    async finish<T>(lease: Lease, response: FinalResponse<T>, work?: (tx: Tx) => Promise<T>, prior?: PriorCommit) {
      if (!(await mark(lease, prior))) return LOST;
      return store.finish(lease, response, work);
    },
  };
}
