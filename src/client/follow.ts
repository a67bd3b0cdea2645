/**
 * Following an operation: where it stands now, a subscription to its changes, and a promise of
 * its settlement that any number of callers can await, whoever does the sending.
 *
 * ```
 * state        set when                                                   next
 * prepared     prepare() journaled it, nobody asked to send it              sending
 * sending      an attempt is on the wire here, or another holder           waiting · pending · succeeded · failed
 *              (tab, worker, process) has the claim (`elsewhere: true`)
 * waiting      the server said "not yet" (429/503 Retry-After, 409, 202):  sending
 *              the next attempt is due at `retryAt`
 * pending      the outcome is unknown (no answer, budget spent, aborted,   sending (send() again, resume(), another tab)
 *              a 401/403 that settled nothing); `retryAt` when this
 *              client will try again by itself, else `null`
 * succeeded    a 2xx, journaled                                            (final)
 * failed       a final non-2xx (or refused before anything was sent)       (final)
 * expired      older than keyTtlMs: never resent                           (final)
 * ```
 *
 * One {@link Tracker} per key per client, shared by every handle of that key, so a React
 * StrictMode double effect or a second `prepare()` of the same natural key sees one state.
 *
 * @module
 */
import { ErrorCode, isOncelyError, type ExpiredOperationError, type OncelyError } from '../errors.js';
import type { OperationResult } from './results.js';

/**
 * Where an operation stands, as {@link Operation.state} and its subscribers see it.
 *
 * @example
 * ```ts
 * function label(s: OperationSnapshot): string {
 *   switch (s.state) {
 *     case 'waiting': return `busy, trying again at ${new Date(s.retryAt).toLocaleTimeString()}`;
 *     case 'pending': return s.retryAt === null ? 'outcome unknown: not charged twice, will finish later' : 'no answer yet, trying again';
 *     case 'succeeded': return `paid (${s.result.status})`;
 *     case 'failed': return `declined: ${s.error.message}`;
 *     default: return s.state;
 *   }
 * }
 * ```
 */
export type OperationSnapshot =
  | { readonly state: 'prepared' }
  | {
      readonly state: 'sending';
      /** `true` while another tab, worker or process holds the operation's claim. */
      readonly elsewhere: boolean;
    }
  | {
      readonly state: 'waiting';
      /** Epoch ms when the next attempt is due (from `Retry-After`, or the backoff). */
      readonly retryAt: number;
      /** The answer that asked to wait (`429`, `503`, `409`, `202`…). */
      readonly status: number;
    }
  | {
      readonly state: 'pending';
      /** Epoch ms of this client's next attempt, or `null` when it is not trying by itself. */
      readonly retryAt: number | null;
      /** Why it is pending: a network error, `OperationPendingError`, an `HttpError` 401/403…; `undefined` when submitted elsewhere. */
      readonly error: unknown;
    }
  | { readonly state: 'succeeded'; readonly result: OperationResult }
  | { readonly state: 'failed'; readonly error: OncelyError }
  | { readonly state: 'expired'; readonly error: ExpiredOperationError };

/**
 * Options of {@link Operation.settled}.
 *
 * @example
 * ```ts
 * await op.settled({ signal: AbortSignal.timeout(60_000) });
 * ```
 */
export interface SettledOptions {
  /** Stops waiting (rejects with the signal's reason); the operation is not affected. */
  readonly signal?: AbortSignal;
}

/**
 * The states of {@link OperationSnapshot}: a string union (the snapshot's discriminant), not a
 * const object, so a page that follows operations pays nothing for naming them.
 *
 * @example
 * ```ts
 * const busy: ReadonlySet<OperationStatus> = new Set(['sending', 'waiting']);
 * ```
 */
export type OperationStatus = OperationSnapshot['state'];

/** How often a follower re-reads the journal while another holder has the operation. */
const FOLLOW_POLL_MS = 500;

const OUTCOMES: Partial<Record<ErrorCode, 'failed' | 'pending' | 'expired'>> = {
  [ErrorCode.KeyReused]: 'failed',
  [ErrorCode.InvalidKey]: 'failed',
  [ErrorCode.OperationPending]: 'pending',
  [ErrorCode.Aborted]: 'pending',
  [ErrorCode.ExpiredOperation]: 'expired',
};

/** Whether the state can no longer change. */
export function isFinal(snapshot: OperationSnapshot): snapshot is Extract<OperationSnapshot, { state: 'succeeded' | 'failed' | 'expired' }> {
  return snapshot.state === 'succeeded' || snapshot.state === 'failed' || snapshot.state === 'expired';
}

/**
 * What an error that ended a send means for the operation: `failed` (settled for good),
 * `expired`, or `pending` (a 401/403 or a refusal after something was sent settled nothing;
 * an unknown outcome). `undefined` for errors that are not about the operation (a broken
 * journal, a closed client). One classifier for `resume()` and for followers.
 *
 * @internal
 */
export function outcomeOf(error: unknown): 'failed' | 'pending' | 'expired' | undefined {
  if (!isOncelyError(error)) return undefined;
  if (isOncelyError(error, ErrorCode.Http)) return error.status === 401 || error.status === 403 ? 'pending' : 'failed';
  if (isOncelyError(error, ErrorCode.RequestRefused)) return error.settled ? 'failed' : 'pending';
  return OUTCOMES[error.code];
}

/**
 * The followed state of one key in one client (internal).
 *
 * @internal
 */
export interface Tracker {
  readonly snapshot: OperationSnapshot;
  set(snapshot: OperationSnapshot): void;
  subscribe(listener: (snapshot: OperationSnapshot) => void): () => void;
  /**
   * Resolves with the result once the operation succeeds, rejects with its typed error once it
   * fails or expires. `poll` reads the journal, for when another holder settles it.
   */
  settled(poll: () => Promise<OperationSnapshot | undefined>, options: SettledOptions): Promise<OperationResult>;
}

/**
 * Creates a tracker starting at `initial`; `onFinal` hears when it reaches a final state.
 *
 * @internal
 */
export function createTracker(initial: OperationSnapshot, onFinal: () => void): Tracker {
  let snapshot = initial;
  const listeners = new Set<(snapshot: OperationSnapshot) => void>();
  const tracker: Tracker = {
    get snapshot() {
      return snapshot;
    },
    set(next) {
      // A final state is the journal's truth: nothing a late event says can undo it.
      if (isFinal(snapshot) || next === snapshot) return;
      snapshot = next;
      if (isFinal(next)) onFinal();
      listeners.forEach((listener) => listener(next));
    },
    subscribe(listener) {
      listeners.add(listener);
      return () => void listeners.delete(listener);
    },
    async settled(poll, { signal }) {
      // Another tab, worker or process may settle it: the journal is the only news of that, so
      // it is read again whenever nothing was heard for a while.
      while (!isFinal(snapshot)) {
        signal?.throwIfAborted();
        await new Promise<void>((resolve) => {
          const done = (): void => {
            stop();
            clearTimeout(timer);
            signal?.removeEventListener('abort', done);
            resolve();
          };
          const stop = tracker.subscribe(done);
          const timer = setTimeout(done, FOLLOW_POLL_MS);
          (timer as { unref?: () => void }).unref?.();
          signal?.addEventListener('abort', done);
        });
        if (!isFinal(snapshot) && !signal?.aborted) tracker.set((await poll().catch(() => undefined)) ?? snapshot);
      }
      if (snapshot.state === 'succeeded') return snapshot.result;
      throw snapshot.error;
    },
  };
  return tracker;
}
