/**
 * Admission: the one place a keyed request's branch of PROTOCOL.md's response matrix is decided,
 * for both front ends (the reference handler, `handler.ts`, and the framework middleware,
 * `middleware/guard.ts`).
 *
 * {@link classify} is pure: what the key already holds (a row the store returned, or a finished
 * key from the replay cache) and this request's fingerprint give one branch. "Now" enters only
 * as the row's `leaseRemainingMs`, measured by the store's own clock (never an app clock against
 * a database clock), and as the cache's expiry check when the cached key was read.
 *
 * | what the key holds                               | branch      | answer                               |
 * |--------------------------------------------------|-------------|--------------------------------------|
 * | any row or cached key, other fingerprint         | `mismatch`  | `422` (checked first: a reused key never sees the original's state) |
 * | finished with a response (row or cache)          | `replay`    | the stored response + `Idempotency-Replay` |
 * | started, lease live, a wait worth waiting        | `wait`      | wait, then decide again (once)       |
 * | started, lease live, no wait left                | `in-flight` | `409` + `Retry-After`                |
 * | started, lease expired or released               | `take-over` | take the row over and run it         |
 * | nothing visible: an owner's whole request still open in its transaction for the whole wait | — | `409` + `Retry-After` (the driver) |
 *
 * Before any of it, a let-go of the key that this instance could not record (`let-go.ts`) is tried
 * again: the `503` it answered promised a free key. While that still fails the store error
 * propagates (`503` again), never a `409` for a lease nobody works under.
 *
 * {@link admitRequest} drives it: admit, classify, wait and decide again, take over, or `409` when
 * the takeover was lost. What runs after a request owns its key is the front end's business.
 *
 * @module
 * @internal
 */
import { inFlight, mismatch, replay, replayHeaders, type Answer } from './answers.js';
import { waitBudget, type InFlight } from './in-flight.js';
import type { LetGo } from './let-go.js';
import type { CachedKey, ReplayCache } from './replay-cache.js';
import type { AdmitResult, KeyRow, KeyStore, Lease, StoredResponse } from './store/types.js';

/** The branches of {@link classify}. */
export const Branch = {
  Mismatch: 'mismatch',
  Replay: 'replay',
  Wait: 'wait',
  InFlight: 'in-flight',
  TakeOver: 'take-over',
} as const;

/** One of {@link Branch}'s values. */
export type Branch = (typeof Branch)[keyof typeof Branch];

/** A branch with what it needs. */
export type Classified =
  | { readonly branch: typeof Branch.Mismatch; readonly endpoint: string }
  | { readonly branch: typeof Branch.Replay; readonly response: StoredResponse }
  | { readonly branch: typeof Branch.Wait; readonly ms: number }
  | { readonly branch: typeof Branch.InFlight }
  | { readonly branch: typeof Branch.TakeOver };

/** What the key already holds: its row as the store returned it, or a finished key from the replay cache. */
export type Found = Pick<KeyRow, 'requestHash' | 'endpoint' | 'state' | 'response' | 'leaseRemainingMs'> | CachedKey;

/** The request asking: its fingerprint and how long it may still wait for an owner in flight. */
export interface Asking {
  readonly requestHash: string;
  /** The front end's `inFlightWaitMs`; `0` once this request has waited (a request waits once). */
  readonly inFlightWaitMs: number;
  /** The request's `Prefer` header (`wait=N` caps the wait). */
  readonly prefer: string | null;
}

const IN_FLIGHT: Classified = { branch: Branch.InFlight };
/** How far past the owner's lease a wait bound by it ends (see the wait branch of {@link admitRequest}). */
const LEASE_END_SLOP_MS = 5;
const TAKE_OVER: Classified = { branch: Branch.TakeOver };

/**
 * The branch `asking` takes on a key that holds `found`; see the table in the module comment.
 *
 * @example
 * ```ts
 * classify(row, { requestHash, inFlightWaitMs: 5000, prefer: null }); // { branch: 'wait', ms: 5000 }
 * ```
 */
export function classify(found: Found, asking: Asking): Classified {
  if (found.requestHash !== asking.requestHash) return { branch: Branch.Mismatch, endpoint: found.endpoint };
  // A cached key is a finished one (only finished keys are cached).
  if (!('state' in found)) return { branch: Branch.Replay, response: found.response };
  if (found.state === 'finished' && found.response !== null) return { branch: Branch.Replay, response: found.response };
  if (found.leaseRemainingMs !== null && found.leaseRemainingMs > 0) {
    const ms = waitBudget(asking.inFlightWaitMs, asking.prefer, found.leaseRemainingMs);
    return ms === 0 ? IN_FLIGHT : { branch: Branch.Wait, ms };
  }
  // No live lease: a crashed, released or parked owner's row (a finished row without a response
  // cannot be taken over either: `takeOver` refuses it and the answer is `409`).
  return TAKE_OVER;
}

/** What a front end gives the driver, built once. */
export interface AdmissionPolicy {
  readonly store: Pick<KeyStore, 'takeOver'>;
  readonly keys: Pick<InFlight, 'wait' | 'running'>;
  /** The front end's let-go of the keys it gave up, tried again first for the key asked for. */
  readonly letGo: Pick<LetGo, 'before'>;
  /**
   * Whether an owner's admission is invisible until its work commits (a whole request in one
   * transaction): a duplicate of a key this process runs then waits for it here, holding no
   * database connection, instead of in the store.
   */
  readonly invisibleOwners?: boolean | undefined;
  readonly cache: ReplayCache | undefined;
  readonly leaseMs: number;
  readonly inFlightWaitMs: number;
  /** `Retry-After` of a `409` for a live lease on `row`. */
  retryAfterMs(row: KeyRow): number;
}

/** The keyed request being admitted. */
export interface KeyedRequest {
  readonly clientId: string;
  readonly key: string;
  readonly requestHash: string;
  /** See `CachedKey.request`: `''` when the front end compares fingerprints only. */
  readonly identity: string;
  readonly prefer: string | null;
  /** The headers every answer echoes (`idempotency-key`). */
  readonly echo: Readonly<Record<string, string>>;
  /** Told when the request starts waiting for its key's owner (a trace marks it). */
  readonly waited?: (() => void) | undefined;
}

/** A key this request owns, as the front end's admission gives it (the store's owned result, or the front end's own). */
export type Owned = { readonly owned: true };

/** What the store found instead of an owned key. */
export type NotOwned = Extract<AdmitResult, { owned: false }>;

/**
 * The result of one admission attempt: the key owned, what the store found instead, or an answer
 * the front end already has (its first step failed).
 */
export type AdmitAttempt<O extends Owned> = O | NotOwned | Answer;

/** Admits once; `waitMs`: how long the store may wait for another admission of the key still open. */
export type AdmitOnce<O extends Owned> = (waitMs: number) => Promise<AdmitAttempt<O>>;

/** What admission decided: run (a fresh row, or one taken over), or answer now. */
export type Admitted<O extends Owned> =
  | { readonly kind: 'owned'; readonly admitted: O }
  | { readonly kind: 'taken-over'; readonly lease: Lease; readonly row: KeyRow }
  | { readonly kind: 'answer'; readonly answer: Answer };

const isAnswer = <O extends Owned>(result: AdmitAttempt<O>): result is Answer => 'outcome' in result;

/**
 * Admits `request` with `admitOnce` (the store's admission, as the front end calls it), then
 * follows {@link classify}: wait for an owner in flight and decide again (once), take a dead
 * owner's row over, or answer. Store errors propagate: the front end answers them `503`.
 *
 * @example
 * ```ts
 * const admitted = await admitRequest(policy, request, () => store.admit(input));
 * if (admitted.kind === 'answer') return admitted.answer;
 * ```
 */
export async function admitRequest<O extends Owned>(policy: AdmissionPolicy, request: KeyedRequest, admitOnce: AdmitOnce<O>): Promise<Admitted<O>> {
  let inFlightWaitMs = policy.inFlightWaitMs;
  for (;;) {
    // Each time round: an owner this request waited for may have failed to let the key go.
    const pending = policy.letGo.before(request.clientId, request.key);
    if (pending) await pending;
    if (policy.invisibleOwners && policy.keys.running(request.clientId, request.key)) {
      // The owner runs here: wait for it in process, up to one budget, and answer 409 if it still
      // runs. Waiters woken together go to the store one at a time (each marks the key while it
      // asks), so the others wait again within what is left of the same budget.
      const ms = waitBudget(inFlightWaitMs, request.prefer, Number.POSITIVE_INFINITY);
      if (ms > 0) {
        request.waited?.();
        const until = Date.now() + ms;
        for (let left = ms; left > 0 && policy.keys.running(request.clientId, request.key); left = until - Date.now()) {
          await policy.keys.wait(request.clientId, request.key, left);
        }
        inFlightWaitMs = 0;
      }
      if (policy.keys.running(request.clientId, request.key)) return { kind: 'answer', answer: inFlight(1000, request.echo) };
    }
    const result = await admitOnce(waitBudget(inFlightWaitMs, request.prefer, Number.POSITIVE_INFINITY));
    if (isAnswer(result)) return { kind: 'answer', answer: result };
    if (result.owned) return { kind: 'owned', admitted: result };
    const row = result.row;
    // Another admission of the key stayed open in its transaction for the whole wait.
    if (row === null) return { kind: 'answer', answer: inFlight(1000, request.echo) };
    const classified = classify(row, { requestHash: request.requestHash, inFlightWaitMs, prefer: request.prefer });
    switch (classified.branch) {
      case Branch.Mismatch:
        return { kind: 'answer', answer: mismatch(classified.endpoint, request.echo) };
      case Branch.Replay:
        return { kind: 'answer', answer: replay(rememberFinished(policy.cache, row, request, classified.response)) };
      case Branch.InFlight:
        return { kind: 'answer', answer: inFlight(policy.retryAfterMs(row), request.echo) };
      case Branch.Wait:
        // Then decided afresh: a replay if it finished, a takeover if its owner died, else 409.
        request.waited?.();
        // A wait cut short by the owner's lease ends just past it: a timer may fire a millisecond
        // early, and a lease with 1 ms left would be answered 409 instead of taken over.
        await policy.keys.wait(row.clientId, row.key, classified.ms === row.leaseRemainingMs ? classified.ms + LEASE_END_SLOP_MS : classified.ms);
        inFlightWaitMs = 0;
        continue;
      case Branch.TakeOver: {
        const lease = await policy.store.takeOver(row.clientId, row.key, policy.leaseMs);
        // Lost the race to another taker, who has just begun.
        if (!lease) return { kind: 'answer', answer: inFlight(1000, request.echo) };
        return { kind: 'taken-over', lease, row };
      }
    }
  }
}

/**
 * The answer for a finished key found in the replay cache: its replay, or `422` for another
 * fingerprint (exactly what the row would answer).
 *
 * @example
 * ```ts
 * const known = cache.get(clientId, key, Date.now());
 * if (known) return fromCache(known, requestHash, echo);
 * ```
 */
export function fromCache(known: CachedKey, requestHash: string, echo: Readonly<Record<string, string>>): Answer {
  const classified = classify(known, { requestHash, inFlightWaitMs: 0, prefer: null });
  return classified.branch === Branch.Mismatch ? mismatch(classified.endpoint, echo) : replay(known);
}

/**
 * The cache entry of a finished key (replayed now or just executed), kept for the next replay
 * when there is a cache.
 */
export function rememberFinished(
  cache: ReplayCache | undefined,
  row: Pick<KeyRow, 'clientId' | 'key' | 'endpoint' | 'expiresAt'>,
  request: Pick<KeyedRequest, 'requestHash' | 'identity'>,
  response: StoredResponse,
): CachedKey {
  const known: CachedKey = {
    requestHash: request.requestHash,
    request: request.identity,
    endpoint: row.endpoint,
    response,
    // Shared by every replay of the entry, so frozen: nothing may change one answer for all.
    replayHeaders: Object.freeze(replayHeaders(response, { 'idempotency-key': row.key, 'idempotency-replay': 'true' })),
    expiresAt: row.expiresAt,
  };
  cache?.set(row.clientId, row.key, known, Date.now());
  return known;
}
