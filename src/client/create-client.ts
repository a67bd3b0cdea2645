/**
 * The client: keyed requests whose every attempt, in this process or after a restart, sends
 * the same key and bytes.
 *
 * @module
 */
import { ErrorCode, ExpiredOperationError, KeyReusedError, OncelyError, isOncelyError, type OperationRef } from '../errors.js';
import { recordDamage } from '../journal/integrity.js';
import { OperationState, isExpired, type DamagedRecord, type Journal, type OperationRecord } from '../journal/types.js';
import type { FingerprintDigest } from '../fingerprint.js';
import { newKey } from '../keys.js';
import { outcomeOf, type OperationSnapshot } from './follow.js';
import { abortAll, createOperation, type Engine, type Operation } from './operation-handle.js';
import { snapshotOf } from './operation.js';
import type { ClientOptions } from './options.js';
import { normalizeOptions } from './resolve-options.js';
import { prepareRequest, type RequestOptions } from './request.js';
import type { OperationResult, PendingOperation, ResumeOutcome } from './results.js';
import type { ResumeOptions } from './resume-options.js';
import { unwrittenError, writeBehinds } from './write-behind.js';

export type { ResumeOptions } from './resume-options.js';

/**
 * A client whose keyed requests take effect once. Create it with `createClient`.
 *
 * @example
 * ```ts
 * const client = createClient({ baseUrl: 'http://127.0.0.1:8787', journal: memoryJournal() });
 * const r = await client.post<{ id: string }>('v1/payments', { json: { amount: 1250, currency: 'EUR', reference: 'inv-7' } });
 * console.log(r.status, r.data.id, r.key);
 * ```
 */
export interface Client {
  /** The journal operations are kept in. */
  readonly journal: Journal;
  /**
   * This client's scope (origin of `baseUrl`, plus `#scope`): the only operations it sees and
   * sends. Like every call, reading it throws a `config` error where a relative `baseUrl` has no
   * page to be resolved against (a server-side render).
   */
  readonly scope: string;
  /** `prepare('POST', path, options)` then `send()`, journaled as submitted in one write. */
  post<T = unknown>(path: string, options?: RequestOptions): Promise<OperationResult<T>>;
  /** `prepare('PUT', path, options)` then `send()`. */
  put<T = unknown>(path: string, options?: RequestOptions): Promise<OperationResult<T>>;
  /** `prepare('PATCH', path, options)` then `send()`. */
  patch<T = unknown>(path: string, options?: RequestOptions): Promise<OperationResult<T>>;
  /** `prepare('DELETE', path, options)` then `send()`. */
  delete<T = unknown>(path: string, options?: RequestOptions): Promise<OperationResult<T>>;
  /**
   * Mints (or derives, or validates) the key and journals the operation, durably, before
   * anything is sent. Preparing a key already in the journal with the same request returns a
   * handle to that operation; with a different request it throws {@link KeyReusedError},
   * unless the server refused the journaled one with `400` or `413` (the key was not consumed):
   * then the corrected request replaces it.
   * The operation is only prepared: `resume()` leaves it alone until its `send()` is called.
   */
  prepare(method: string, path: string, options?: RequestOptions): Promise<Operation>;
  /**
   * This scope's unsettled operations, oldest first; `expired` ones will not be resent, and
   * those with `submittedAt: null` were only prepared (`resume()` does not send them). Rows that
   * cannot be read, or no longer match their fingerprint or their scope's origin, come last, as
   * `state: 'damaged'`.
   */
  pending(): Promise<PendingOperation[]>;
  /**
   * Sends every submitted pending operation of this scope again with its journaled key and bytes
   * and this client's current `headers`. Each one is claimed first, so processes sharing a
   * journal never send the same operation at once (a claim whose process has died is void at
   * once on the same host); expired ones are reported, not sent; damaged rows (unreadable, or
   * whose method, URL or body no longer match their fingerprint) are reported and left alone.
   * Operations that were only prepared, never sent, are not touched (nor reported).
   */
  resume(options?: ResumeOptions): Promise<ResumeOutcome[]>;
  /**
   * The operations this client follows whose state can still change — prepared, being sent,
   * waiting or pending here, or followed while another tab sends them — by key, with their state
   * now. What this process knows before the journal says it: an attempt on the wire, an outcome
   * whose write is still to commit.
   *
   * @example
   * ```ts
   * const sending = [...client.following()].filter(([, snapshot]) => snapshot.state === 'sending').length;
   * ```
   */
  following(): ReadonlyMap<string, OperationSnapshot>;
  /**
   * Hears every change of state of the operations this client follows (each one's `subscribe()`,
   * for all of them): a key followed for the first time, each attempt, and last its final state.
   * Returns the function that stops it.
   *
   * @example
   * ```ts
   * const stop = client.subscribe((key, snapshot) => console.log(key, snapshot.state));
   * ```
   */
  subscribe(listener: (key: string, snapshot: OperationSnapshot) => void): () => void;
  /**
   * Stops operations in flight (they stay pending), waits until every outcome this client handed
   * to a caller is written to the journal — whoever created the journal — and closes a journal
   * the client created. Once it resolves, nothing it reported is lost, whatever the process does
   * next (`process.exit()`, a kill). Rejects with a `JournalError` naming the operations whose
   * outcome could not be written (they read as pending: the next `resume()` sends them again
   * under their keys); the client is closed either way.
   */
  close(): Promise<void>;
}

/**
 * Builds a client. The platform entries pass their durable default journal; the neutral
 * entry passes `undefined`, so a missing `journal` option is an error there.
 *
 * @param defaultJournal creates the journal used when `options.journal` is absent; the client then owns it and closes it in `close()`
 * @param digest SHA-256 for request fingerprints; WebCrypto when omitted (the Node entry passes `node:crypto`'s, several times faster)
 *
 * @example
 * ```ts
 * function createClient(options: ClientOptions): Client {
 *   return buildClient(options, () => sqliteJournal(), nodeDigest);
 * }
 * ```
 */
export function buildClient(options: ClientOptions, defaultJournal: (() => Journal) | undefined, digest?: FingerprintDigest): Client {
  const ownsJournal = options.journal === undefined;
  const resolved = normalizeOptions(options, defaultJournal, newKey, digest);
  const { journal } = resolved;
  let closed = false;
  const engine: Engine = {
    options: resolved,
    inflight: new Map(),
    assertOpen: () => {
      if (closed) throw new OncelyError(ErrorCode.Config, 'this oncely client is closed');
    },
    trackers: new Map(),
    behind: writeBehinds(journal),
    listeners: new Set(),
  };
  resolved.signal?.addEventListener('abort', () => void abortAll(engine, resolved.signal?.reason), { once: true });

  const journalOperation = async (method: string, path: string, requestOptions: RequestOptions, submitted: boolean): Promise<Operation> => {
    engine.assertOpen();
    const { operation, unjournaled } = await prepareRequest(resolved, method, path, requestOptions);
    // post() sends at once: the record is created already claimed, saving a claim transaction.
    const claim = submitted ? { owner: resolved.ownerId, ttlMs: resolved.claimTtlMs } : undefined;
    const { created, record, claimed } = await journal.put({ ...operation, submitted, ...(claim ? { claim } : {}) });
    const ref: OperationRef = { method: record.method, url: record.url, key: record.key };
    // The fingerprint covers method, path and body: any difference is another request.
    if (!created && record.fingerprint !== operation.fingerprint) {
      throw new KeyReusedError({ method: operation.method, url: operation.url, key: operation.key });
    }
    // post() sends at once: the record it just created is handed over instead of read back.
    const fresh = submitted && created ? { record, claimed: claimed === true } : undefined;
    return createOperation(engine, ref, unjournaled, requestOptions.signal, snapshotOf(ref, record, resolved.keyTtlMs), fresh);
  };
  const prepare = (method: string, path: string, requestOptions: RequestOptions = {}): Promise<Operation> =>
    journalOperation(method, path, requestOptions, false);

  const call =
    (method: string) =>
    async <T>(path: string, requestOptions: RequestOptions = {}): Promise<OperationResult<T>> =>
      (await journalOperation(method, path, requestOptions, true)).send<T>();

  const resumeOne = async (key: string, signal: AbortSignal | undefined, follow: boolean): Promise<ResumeOutcome> => {
    try {
      const { scope } = resolved.target('resume()');
      const record = await journal.get(scope, key);
      if (record === undefined || record.state !== OperationState.Pending) return { key, state: 'skipped' };
      const ref: OperationRef = { method: record.method, url: record.url, key };
      if (isExpired(record, resolved.keyTtlMs)) {
        return { key, state: 'expired', error: new ExpiredOperationError(ref, record.createdAt, resolved.keyTtlMs) };
      }
      // Claimed here, not only inside send(), so that an operation another process is sending
      // is skipped rather than waited for, unless the caller asked to follow it: send() then
      // waits for the claim like any other.
      if (!follow && !engine.inflight.has(key) && !(await journal.claim(scope, key, resolved.ownerId, resolved.claimTtlMs))) {
        return { key, state: 'skipped' };
      }
      const result = await createOperation(engine, ref, {}, signal, snapshotOf(ref, record, resolved.keyTtlMs)).send(signal ? { signal } : {});
      return { key, state: 'succeeded', result };
    } catch (error) {
      // A row damaged since resume() listed it: reported like the others, and the rest go on.
      if (isOncelyError(error, ErrorCode.Journal) && error.damaged !== undefined) return { key, state: 'damaged', reason: error.damaged.reason };
      // A 401 or 403 settled nothing: the operation is still resumable with other credentials; nor
      // did a refused request that had been sent before. Anything else that is not about this
      // operation (a broken journal, a closed client): stop.
      const state = outcomeOf(error);
      if (state === undefined) throw error;
      return { key, state, error: error as OncelyError };
    }
  };

  // The scope's pending records, those that fail the journal check (../journal/integrity.ts)
  // moved to the damaged rows the journal itself could not read.
  const readPending = async (doing: string): Promise<{ records: OperationRecord[]; damaged: DamagedRecord[] }> => {
    const { scope } = resolved.target(doing);
    const listed = await journal.list({ scope, state: OperationState.Pending });
    const reasons = await Promise.all(listed.map((record) => recordDamage(record, resolved.digest)));
    const records: OperationRecord[] = [];
    const damaged: DamagedRecord[] = [];
    listed.forEach((record, index) => {
      const reason = reasons[index];
      if (reason === undefined) records.push(record);
      else damaged.push({ scope: record.scope, key: record.key, reason });
    });
    damaged.push(...(await journal.damaged({ scope })));
    return { records, damaged };
  };

  return {
    journal,
    get scope() {
      return resolved.target('client.scope').scope;
    },
    post: call('POST'),
    put: call('PUT'),
    patch: call('PATCH'),
    delete: call('DELETE'),
    prepare,
    async pending() {
      engine.assertOpen();
      const now = Date.now();
      const { records, damaged } = await readPending('pending()');
      const unsettled: PendingOperation[] = records.map((record) => ({
        method: record.method,
        url: record.url,
        key: record.key,
        state: isExpired(record, resolved.keyTtlMs, now) ? 'expired' : 'pending',
        createdAt: record.createdAt,
        submittedAt: record.submittedAt,
        attempts: record.attempts,
        lastStatus: record.lastStatus,
      }));
      return [...unsettled, ...damaged.map((row) => ({ key: row.key, state: 'damaged' as const, reason: row.reason }))];
    },
    following() {
      return new Map([...engine.trackers].map(([key, tracker]) => [key, tracker.snapshot]));
    },
    subscribe(listener) {
      engine.listeners.add(listener);
      return () => void engine.listeners.delete(listener);
    },
    async resume(resumeOptions = {}) {
      engine.assertOpen();
      const { records: pendingRecords, damaged } = await readPending('resume()');
      const keys = pendingRecords.filter((record) => record.submittedAt !== null).map((record) => record.key);
      const outcomes: ResumeOutcome[] = new Array<ResumeOutcome>(keys.length);
      let next = 0;
      const worker = async (): Promise<void> => {
        while (next < keys.length) {
          const index = next++;
          outcomes[index] = await resumeOne(keys[index] as string, resumeOptions.signal, resumeOptions.follow ?? false);
        }
      };
      const width = Math.max(1, Math.min(resumeOptions.concurrency ?? 4, keys.length));
      await Promise.all(Array.from({ length: width }, worker));
      return [...outcomes, ...damaged.map((row) => ({ key: row.key, state: 'damaged' as const, reason: row.reason }))];
    },
    async close() {
      if (closed) return;
      closed = true;
      await abortAll(engine, new Error('client closed'));
      // Every outcome handed to a caller is committed before close() resolves, whoever made the
      // journal: a program may exit the moment it does.
      const unwritten = (await engine.behind?.flush()) ?? [];
      if (ownsJournal) await journal.close();
      if (unwritten.length > 0) throw unwrittenError(unwritten);
    },
  };
}

/**
 * Creates a client. In this neutral entry `journal` is required: pass `memoryJournal()` (pending
 * operations are lost on exit), or import `createClient` from `oncely/node` (SQLite) or
 * `oncely/browser` (IndexedDB), whose default journal is durable.
 *
 * @example
 * ```ts
 * const client = createClient({
 *   baseUrl: 'http://127.0.0.1:8787',
 *   headers: { authorization: 'Bearer test_acme' }, // never journaled
 *   journal: memoryJournal(),
 * });
 * const r = await client.post('v1/payments', { json: { amount: 1250, currency: 'EUR', reference: 'inv-7' } });
 * ```
 */
export function createClient(options: ClientOptions): Client {
  return buildClient(options, undefined);
}
