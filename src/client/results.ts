/**
 * What the client hands back: results, hook events, pending and resume reports, and the
 * mapping from a final response to its typed error.
 *
 * @module
 */
import { journaledResponseHeaders } from '../credentials.js';
import { HttpError, InvalidKeyError, KeyReusedError, RequestRefusedError, type OncelyError, type OperationRef } from '../errors.js';
import { parseProblem } from '../errors/message-text.js';
import type { StoredResult } from '../journal/types.js';

/**
 * A settled, successful (`2xx`) operation.
 *
 * Count executions with `source === 'server'` (or `!replayed`): each operation has at most one
 * such answer, whichever process or call got it.
 *
 * @example
 * ```ts
 * const r: OperationResult<{ id: string }> = await client.post('v1/payments', { json });
 * console.log(r.status, r.data.id, r.key, r.source, r.attempts);
 * if (r.source === 'server') executed += 1; // the one answer that ran it
 * ```
 */
export interface OperationResult<T = unknown> {
  readonly status: number;
  /** The body parsed as JSON when the response is JSON, else its text; `null` when empty. */
  readonly data: T;
  /** Response headers, lower-case names. */
  readonly headers: Readonly<Record<string, string>>;
  /** The idempotency key the operation was sent with. */
  readonly key: string;
  /**
   * Where this answer came from:
   * - `'server'`: the server executed the request for this call's attempt;
   * - `'replay'`: the server answered from its stored result (`Idempotency-Replay` /
   *   `Idempotent-Replayed`): an earlier attempt had executed it;
   * - `'journal'`: the operation was already settled in the local journal (an earlier `send()`,
   *   `post()` or `resume()`), so nothing was sent and the stored answer was returned.
   */
  readonly source: 'server' | 'replay' | 'journal';
  /** `true` unless this call's request executed the operation: `source` is `'replay'` or `'journal'`. */
  readonly replayed: boolean;
  /** Attempts made, across processes. */
  readonly attempts: number;
}

/**
 * Passed to `onAttempt` before each attempt.
 *
 * @example
 * ```ts
 * createClient({ baseUrl, journal, onAttempt: (e) => console.log(e.method, e.url, e.key, e.attempt) });
 * ```
 */
export interface AttemptEvent extends OperationRef {
  /** 1-based attempt number within this send. */
  readonly attempt: number;
}

/**
 * Passed to `onRetry` before waiting for the next attempt.
 *
 * @example
 * ```ts
 * createClient({ baseUrl, journal, onRetry: (e) => metrics.count('retry', { status: String(e.status) }) });
 * ```
 */
export interface RetryEvent extends OperationRef {
  /** The attempt that will be retried (1-based within this send). */
  readonly attempt: number;
  /** How long the client waits before the next attempt. */
  readonly delayMs: number;
  /** The status that caused the retry, or `undefined` after a network error or timeout. */
  readonly status: number | undefined;
  /** The network error or timeout, when there was no response. */
  readonly error: unknown;
}

/**
 * Passed to `onUnanswered` after an attempt that got no answer.
 *
 * @example
 * ```ts
 * createClient({ baseUrl, onUnanswered: (e) => console.warn(`${e.key}: no answer to attempt ${e.attempt}`, e.error) });
 * ```
 */
export interface UnansweredEvent extends OperationRef {
  /** The attempt that got no answer (1-based within this send). */
  readonly attempt: number;
  /** The network error or timeout. */
  readonly error: unknown;
}

/**
 * Passed to `onSettled` once the operation has a final answer.
 *
 * @example
 * ```ts
 * createClient({ baseUrl, journal, onSettled: (e) => console.log(e.key, e.state, e.status, e.attempts) });
 * ```
 */
export interface SettledEvent extends OperationRef {
  readonly state: 'succeeded' | 'failed';
  readonly status: number;
  readonly replayed: boolean;
  readonly attempts: number;
}

/**
 * An entry of `client.pending()`: an operation without a final outcome, or a journal row of
 * this scope that cannot be read (`state: 'damaged'`).
 *
 * @example
 * ```ts
 * for (const op of await client.pending()) {
 *   if (op.state === 'damaged') console.error(op.key, op.reason);
 *   else console.log(op.key, op.state, op.submittedAt === null ? 'not paid' : 'paid', op.attempts);
 * }
 * ```
 */
export type PendingOperation = UnsettledOperation | DamagedOperation;

/**
 * A journal row of this client's scope that cannot be read. It is never deleted or resent;
 * every other operation keeps working. Inspect or remove it by hand.
 *
 * @example
 * ```ts
 * const damaged = (await client.pending()).filter((op): op is DamagedOperation => op.state === 'damaged');
 * ```
 */
export interface DamagedOperation {
  readonly key: string;
  readonly state: 'damaged';
  /** What is wrong with the row. */
  readonly reason: string;
}

/**
 * An unsettled operation in the journal. `expired` is derived: the operation is older than
 * `keyTtlMs` and will not be resent.
 *
 * @example
 * ```ts
 * const op: UnsettledOperation = { method: 'POST', url, key, state: 'pending', createdAt: Date.now(), submittedAt: null, attempts: 0, lastStatus: null };
 * ```
 */
export interface UnsettledOperation extends OperationRef {
  readonly state: 'pending' | 'expired';
  /** Epoch milliseconds when it was journaled. */
  readonly createdAt: number;
  /**
   * Epoch milliseconds when it was first asked to be sent, or `null` when it was only prepared
   * (a UI can show "prepared, not paid"; `resume()` does not send it).
   */
  readonly submittedAt: number | null;
  readonly attempts: number;
  readonly lastStatus: number | null;
}

/**
 * What `client.resume()` did with one submitted pending operation.
 *
 * - `succeeded`: sent (or found settled) with a `2xx`; `result` holds it.
 * - `failed`: a final non-2xx; `error` is the typed error (`HttpError`, `KeyReusedError`…).
 * - `pending`: still unknown (`OperationPendingError`), aborted, or refused with `401`
 *   (an `HttpError`: fix the credentials); it stays resumable.
 * - `expired`: older than `keyTtlMs`, not resent (`ExpiredOperationError`).
 * - `skipped`: another process or tab holds its claim, or settled it meanwhile.
 * - `damaged`: its journal row cannot be read; it was not sent (`reason` says why).
 *
 * @example
 * ```ts
 * for (const outcome of await client.resume()) {
 *   if (outcome.state === 'succeeded') console.log(outcome.key, outcome.result.status);
 *   else if (outcome.state === 'damaged') console.warn(outcome.key, outcome.reason);
 *   else if (outcome.state !== 'skipped') console.warn(outcome.key, outcome.error.message);
 * }
 * ```
 */
export type ResumeOutcome =
  | { readonly key: string; readonly state: 'succeeded'; readonly result: OperationResult }
  | { readonly key: string; readonly state: 'failed' | 'pending' | 'expired'; readonly error: OncelyError }
  | { readonly key: string; readonly state: 'skipped' }
  | { readonly key: string; readonly state: 'damaged'; readonly reason: string };

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * Copies response headers into a plain record with lower-case names.
 *
 * @internal
 */
export function headersToRecord(headers: Headers): Record<string, string> {
  const record: Record<string, string> = {};
  headers.forEach((value, name) => {
    record[name.toLowerCase()] = value;
  });
  return record;
}

/**
 * Whether the response carries either replay marker of PROTOCOL.md.
 *
 * @internal
 */
export function isReplay(headers: Readonly<Record<string, string>>): boolean {
  const marker = headers['idempotency-replay'] ?? headers['idempotent-replayed'];
  return marker?.trim().toLowerCase() === 'true';
}

/**
 * Parses a body the way results expose it: JSON when declared and parsable, text otherwise.
 *
 * @internal
 */
export function parseData(body: string, headers: Readonly<Record<string, string>>): unknown {
  if (body === '') return null;
  const type = headers['content-type']?.split(';')[0]?.trim().toLowerCase() ?? '';
  if (type === 'application/json' || type.endsWith('+json')) {
    try {
      return JSON.parse(body);
    } catch {
      // A body cut to the storage cap no longer parses; the text is still worth showing.
      return body;
    }
  }
  return body;
}

/**
 * The response as it may be journaled: only allow-listed headers kept (see
 * `JOURNALED_RESPONSE_HEADERS`), body cut to `maxBytes`.
 *
 * @internal
 */
export function toStorable(live: StoredResult, maxBytes: number): StoredResult {
  return { ...live, headers: journaledResponseHeaders(live.headers), body: capText(live.body, maxBytes) };
}

/**
 * Cuts `text` to at most `maxBytes` UTF-8 bytes.
 *
 * @internal
 */
export function capText(text: string, maxBytes: number): string {
  const bytes = encoder.encode(text);
  return bytes.length <= maxBytes ? text : decoder.decode(bytes.subarray(0, maxBytes));
}

/**
 * Builds the result of a settled `2xx` from what was just received (`'response'`) or what the
 * journal had stored from an earlier call (`'journal'`).
 *
 * @internal
 */
export function toResult<T>(key: string, stored: StoredResult, attempts: number, from: 'response' | 'journal'): OperationResult<T> {
  const source: OperationResult['source'] = from === 'journal' ? 'journal' : stored.replayed ? 'replay' : 'server';
  return {
    status: stored.status,
    data: parseData(stored.body, stored.headers) as T,
    headers: stored.headers,
    key,
    source,
    replayed: source !== 'server',
    attempts,
  };
}

/**
 * The typed error for a final non-2xx answer: `422` → {@link KeyReusedError}; `400` whose
 * problem type is `invalid-key` → {@link InvalidKeyError}; anything else → {@link HttpError}.
 * The server's problem `detail` goes into each of them.
 *
 * @internal
 */
export function finalError(ref: OperationRef, stored: StoredResult): OncelyError {
  // Status 0: settled locally, nothing was ever sent (see RequestRefusedError).
  if (stored.status === 0) return new RequestRefusedError(ref, stored.body, true);
  if (stored.status === 422) return new KeyReusedError(ref, 422, { detail: parseProblem(stored.body)?.detail });
  if (stored.status === 400) {
    // Only a problem document of the invalid-key type is about the key; any other 400 is an HttpError.
    const problem = parseProblem(stored.body);
    if (problem?.type?.endsWith('/invalid-key') === true) return new InvalidKeyError(ref, 400, { detail: problem.detail });
  }
  return new HttpError(ref, { status: stored.status, headers: stored.headers, body: stored.body, replayed: stored.replayed });
}
