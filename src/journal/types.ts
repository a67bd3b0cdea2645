/**
 * The journal contract: where the client keeps each logical operation, durably, from before
 * its first attempt until it is settled.
 *
 * Every backend (memory, SQLite, IndexedDB) implements {@link Journal} and passes the one
 * contract suite in the repository's
 * [`test/contract/journal.contract.ts`](https://github.com/oncely/oncely/blob/main/test/contract/journal.contract.ts).
 *
 * Lifecycle of a record (`expired` is derived from `createdAt`, never stored):
 *
 * ```
 *   put() ──► pending ──(2xx)──────────► succeeded
 *                │  └──(final non-2xx)─► failed
 *                └── older than keyTtl ─► "expired": surfaced, never resent blindly
 * ```
 *
 * Every record belongs to one **scope**: the origin of the client's `baseUrl`, plus the client's
 * optional `scope` name (see {@link scopeOf}). The identity of a record is `(scope, key)`: two
 * clients of different scopes sharing a file never see, send or collide with each other's
 * operations.
 *
 * A pending record is also either submitted (`submittedAt` set: the caller asked for it to be
 * sent, so `resume()` may finish it) or only prepared (`submittedAt: null`: a key minted ahead,
 * e.g. when a checkout page renders; nobody asked to send it, so `resume()` leaves it alone).
 *
 * @module
 */

/** Stored states of an operation. `expired` is derived, see {@link isExpired}. */
export const OperationState = {
  Pending: 'pending',
  Succeeded: 'succeeded',
  Failed: 'failed',
} as const;

/** One of {@link OperationState}'s values. */
export type OperationState = (typeof OperationState)[keyof typeof OperationState];

/** A settled response, kept so that `resume()` after a crash can still report it. */
export interface StoredResult {
  readonly status: number;
  /** Response headers, lower-case names. */
  readonly headers: Readonly<Record<string, string>>;
  /** The response body as text (capped by the client before it is stored). */
  readonly body: string;
  /** Whether the server marked the response as a replay. */
  readonly replayed: boolean;
}

/**
 * One logical operation. Everything needed to send it again, byte for byte, lives here —
 * except headers outside the allow-list ({@link JOURNALED_HEADERS} plus the client's
 * `journalHeaders`): credentials and anything else are sent from memory and supplied again by
 * the resuming client.
 */
export interface OperationRecord {
  /** The scope the operation belongs to (see {@link scopeOf}); with `key`, the record's identity. */
  readonly scope: string;
  /** The idempotency key; unique within its scope. */
  readonly key: string;
  /** Upper-case HTTP method. */
  readonly method: string;
  /** The absolute URL the operation is sent to. */
  readonly url: string;
  /** Allow-listed request headers, lower-case names (e.g. `content-type`). */
  readonly headers: Readonly<Record<string, string>>;
  /** The exact body text sent on every attempt, or `null` for none. */
  readonly body: string | null;
  /** `fingerprint(method, path, body)` of this operation. */
  readonly fingerprint: string;
  readonly state: OperationState;
  /** Epoch milliseconds when the operation was journaled (before its first attempt). */
  readonly createdAt: number;
  /** Epoch milliseconds of the last change. */
  readonly updatedAt: number;
  /**
   * Epoch milliseconds when the caller first asked for the operation to be sent, or `null` when
   * it was only prepared. Only submitted operations are resent by `resume()`.
   */
  readonly submittedAt: number | null;
  /** Attempts made so far, across processes. */
  readonly attempts: number;
  /** The last HTTP status seen, or `null` when no response arrived yet. */
  readonly lastStatus: number | null;
  /** Set once the operation is settled (`succeeded` or `failed`). */
  readonly result: StoredResult | null;
}

/** A new operation as handed to {@link Journal.put}. */
export type NewOperation = Pick<OperationRecord, 'scope' | 'key' | 'method' | 'url' | 'headers' | 'body' | 'fingerprint'> & {
  /** Defaults to `Date.now()`. */
  readonly createdAt?: number;
  /** `true` stores the record with `submittedAt` = now; otherwise it is only prepared (`null`). */
  readonly submitted?: boolean;
  /**
   * Stores a record it creates already claimed by `owner` for `ttlMs`, **atomically with the
   * write**, as {@link Journal.claim} would: no other owner can claim the record between its
   * creation and its first attempt. Every journal must honour it (the contract suite checks it):
   * `post()` relies on it to know that no other process can have sent the operation before its
   * first attempt, so that a request refused before it leaves (`RequestRefusedError`) may be
   * settled as failed. A record that already existed is left as it is, claim included
   * ({@link PutOutcome.claimed} unset). It also saves `post()` a journal transaction.
   */
  readonly claim?: { readonly owner: string; readonly ttlMs: number };
};

/** Changes {@link Journal.update} may apply. */
export interface OperationPatch {
  readonly state?: OperationState;
  /** Marks a prepared operation as submitted (see {@link OperationRecord.submittedAt}). */
  readonly submittedAt?: number;
  readonly attempts?: number;
  readonly lastStatus?: number | null;
  readonly result?: StoredResult | null;
}

/** Filter for {@link Journal.list}. */
export interface ListFilter {
  /** Only this scope's records; every scope's when absent (tools such as `oncely pending`). */
  readonly scope?: string;
  readonly state?: OperationState;
  /** At most this many records, oldest first. */
  readonly limit?: number;
}

/**
 * A stored row that cannot be read as an {@link OperationRecord} (damaged by hand, by a disk,
 * by another program), whose key, scope, state, outcome or timestamps no longer match its seal
 * (see `seal.ts`), or that the client refuses to send because it no longer matches its
 * fingerprint or its scope's origin (see `integrity.ts`). It is reported, never deleted, never
 * sent, and never stops the other rows from working.
 */
export interface DamagedRecord {
  /** The row's scope, when that much could be read. */
  readonly scope: string | null;
  /** The row's idempotency key (or the store's key for it). */
  readonly key: string;
  /** What is wrong with it. */
  readonly reason: string;
}

/** What {@link Journal.put} did. */
export interface PutOutcome {
  /**
   * `true` when the record was written now (new, or replacing a request the server refused, as
   * {@link Journal.put} says); `false` when one with this key already existed.
   */
  readonly created: boolean;
  /** The record as stored: the new one, or the existing one untouched. */
  readonly record: OperationRecord;
  /**
   * `true` when the record was created holding the claim asked for with `claim` (see
   * {@link NewOperation}); unset when no claim was asked for or the record existed. A client
   * treats anything but `true` as "another owner may hold it".
   */
  readonly claimed?: boolean;
}

/**
 * A durable store of operations. Implementations must make `put` durable before it resolves
 * (for the backend's stated durability) — the client sends nothing until it has.
 */
export interface Journal {
  /** A short name for messages and docs: `memory`, `sqlite`, `indexeddb`. */
  readonly kind: string;
  /**
   * Inserts the operation if no record has its scope and key. An existing record is never
   * overwritten, with one exception: a different request under the key of a failed record whose
   * key the server did not consume (never sent, or refused with `400` or `413`) replaces it, as a
   * new pending record.
   */
  put(operation: NewOperation): Promise<PutOutcome>;
  /** Inserts many operations in one transaction (for uploaders); same rule as `put`. */
  putMany(operations: readonly NewOperation[]): Promise<PutOutcome[]>;
  /** The record with this scope and key, or `undefined`; rejects with a `JournalError` when the row is damaged. */
  get(scope: string, key: string): Promise<OperationRecord | undefined>;
  /** Applies the patch and bumps `updatedAt`; resolves to the new record, or `undefined` when absent. */
  update(scope: string, key: string, patch: OperationPatch): Promise<OperationRecord | undefined>;
  /**
   * Optional: applies the patch as {@link Journal.update} does, as a write-behind. The call orders
   * the write before every later call on this journal object (each of them sees it, in this
   * process), but the write may commit later, at the latest before `close()` resolves; the promise
   * settles once it has committed, or rejects when it could not (the record then stays as it was).
   * The client writes a settled operation's outcome this way, so `post()` resolves without waiting
   * for that commit: a crash before it leaves the operation pending and claimed by a dead process,
   * and `resume()` sends it again under its key, which the server answers from its stored response
   * (PROTOCOL.md: a replay). A journal without it gets `update()`, awaited.
   */
  updateLater?(scope: string, key: string, patch: OperationPatch): Promise<void>;
  /** Readable records, oldest `createdAt` first; damaged rows are left out (see {@link Journal.damaged}). */
  list(filter?: ListFilter): Promise<OperationRecord[]>;
  /** The rows that cannot be read (of one scope, or of all), for reports; never deleted by the journal. */
  damaged(filter?: Pick<ListFilter, 'scope'>): Promise<DamagedRecord[]>;
  /**
   * Claims a pending operation for `owner` until `Date.now() + ttlMs`, so that two processes
   * (or tabs) sharing the journal never resume the same operation at once. Succeeds when the
   * record is pending and unclaimed, its claim has run out, `owner` already holds it, or the
   * backend can prove the holder dead (the SQLite journal: a process of this host that no
   * longer runs; IndexedDB: a Web Lock, released with its tab).
   */
  claim(scope: string, key: string, owner: string, ttlMs: number): Promise<boolean>;
  /** Gives a claim back (no-op unless `owner` holds it). */
  release(scope: string, key: string, owner: string): Promise<void>;
  /** Deletes settled records whose `updatedAt` is older than `olderThanMs` ago; resolves to the count. */
  prune(olderThanMs: number): Promise<number>;
  /** Closes the underlying store; later calls reject. */
  close(): Promise<void>;
}

/**
 * The record a journal stores for a new operation: pending, no attempts yet, `submittedAt` set
 * when the caller asked for it to be sent. One definition, so every backend starts a record alike.
 *
 * @example
 * ```ts
 * const record = newRecord({ scope: 'https://pay.example', key, method: 'POST', url, headers: {}, body: '{}', fingerprint: await fingerprint('POST', url, '{}'), submitted: true }, Date.now());
 * record.state; // 'pending'
 * ```
 */
export function newRecord(operation: NewOperation, now: number): OperationRecord {
  return {
    scope: operation.scope,
    key: operation.key,
    method: operation.method,
    url: operation.url,
    headers: { ...operation.headers },
    body: operation.body,
    fingerprint: operation.fingerprint,
    state: OperationState.Pending,
    createdAt: operation.createdAt ?? now,
    updatedAt: now,
    submittedAt: operation.submitted === true ? now : null,
    attempts: 0,
    lastStatus: null,
    result: null,
  };
}

/**
 * Whether {@link Journal.put} replaces `existing` by `operation`: a different request (another
 * fingerprint) under the key of an operation that failed without consuming its key — it was
 * never sent (`attempts: 0`), or the server refused it before any work with `400` or `413`,
 * which PROTOCOL.md never stores. The corrected request may reuse the key, as a retry of a fixed
 * CSV row or form does. Every other record stays as it is: a key the server may have used is
 * never given to another request. One definition, so every backend decides alike.
 *
 * @example
 * ```ts
 * replacesRefused({ ...record, state: 'failed', lastStatus: 400 }, corrected); // true
 * ```
 */
export function replacesRefused(existing: OperationRecord, operation: NewOperation): boolean {
  return (
    existing.state === OperationState.Failed &&
    existing.fingerprint !== operation.fingerprint &&
    (existing.attempts === 0 || existing.lastStatus === 400 || existing.lastStatus === 413)
  );
}

/**
 * The request headers a journal keeps (with the client's `journalHeaders`): every other header,
 * credentials above all, is sent from memory and must be supplied again by the client that
 * resumes the operation.
 */
export const JOURNALED_HEADERS: ReadonlySet<string> = new Set(['content-type', 'accept']);

/**
 * Headers no journal row may hold, whatever the client's `journalHeaders`: credentials, and the
 * key (journaled on its own). `journalHeaders` may not name them, and a row read back with one
 * is damaged, never sent: it would stand in for the resuming client's own credentials.
 */
export const NEVER_JOURNALED_HEADERS: ReadonlySet<string> = new Set(['authorization', 'cookie', 'proxy-authorization', 'idempotency-key']);

export { SCOPE_NAME, scopeOf, scopeOrigin } from './scope.js';

/**
 * Whether a pending record is older than the key retention (`keyTtlMs`): such an operation is
 * never resent blindly, because the server may have forgotten its key.
 *
 * @example
 * ```ts
 * isExpired(record, 24 * 3600_000); // true for a pending record journaled over a day ago
 * ```
 */
export function isExpired(record: OperationRecord, keyTtlMs: number, now: number = Date.now()): boolean {
  return record.state === OperationState.Pending && now - record.createdAt >= keyTtlMs;
}
