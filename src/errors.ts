/**
 * The errors oncely throws: one base class, {@link OncelyError}, with a string `code`, and one
 * subclass per outcome a caller must handle differently.
 *
 * Messages name the method, URL and key, so a log line alone says which operation is affected.
 * Check errors with {@link isOncelyError}: it also recognises errors created by another copy of
 * this package (two bundles, a worker), where `instanceof` fails.
 *
 * @module
 */

/**
 * Every `code` an {@link OncelyError} may carry.
 *
 * @example
 * ```ts
 * if (isOncelyError(error) && error.code === ErrorCode.OperationPending) scheduleResume();
 * ```
 */
export const ErrorCode = {
  /** The key was already used for a different request (`422`, or caught locally). */
  KeyReused: 'KEY_REUSED',
  /** The key is not a valid idempotency key (`400`, or rejected locally). */
  InvalidKey: 'INVALID_KEY',
  /** The outcome is still unknown after the retry budget; the operation stays pending. */
  OperationPending: 'OPERATION_PENDING',
  /** The server gave a final non-2xx answer. */
  Http: 'HTTP_ERROR',
  /** A pending operation is older than the key retention and is never resent blindly. */
  ExpiredOperation: 'EXPIRED_OPERATION',
  /** The journal cannot be opened, read or written. */
  Journal: 'JOURNAL_ERROR',
  /** The caller's signal aborted the wait; the operation stays pending. */
  Aborted: 'ABORTED',
  /** The request body is over the journal's cap; nothing was journaled or sent. */
  BodyTooLarge: 'BODY_TOO_LARGE',
  /** The client was configured or called incorrectly. */
  Config: 'CONFIG',
} as const;

/** One of {@link ErrorCode}'s values. */
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

/**
 * Which operation an error is about.
 *
 * @example
 * ```ts
 * const ref: OperationRef = { method: 'POST', url: 'http://127.0.0.1:8787/v1/payments', key: 'order-7' };
 * ```
 */
export interface OperationRef {
  /** Upper-case HTTP method. */
  readonly method: string;
  /** Absolute URL. */
  readonly url: string;
  /** The idempotency key. */
  readonly key: string;
}

const describe = (ref: OperationRef): string => `${ref.method} ${ref.url} (Idempotency-Key ${ref.key})`;

/**
 * The base of every error oncely throws.
 *
 * @example
 * ```ts
 * try {
 *   await client.post('v1/payments', { json });
 * } catch (error) {
 *   if (isOncelyError(error)) console.error(error.code, error.message);
 * }
 * ```
 */
export class OncelyError extends Error {
  override name = 'OncelyError';
  /** A stable, machine-readable code: one of {@link ErrorCode}. */
  readonly code: ErrorCode;

  constructor(code: ErrorCode, message: string, options?: { readonly cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
  }
}

/**
 * The key was already used for a request with a different fingerprint (method, path or body):
 * the server answered `422`, or the client's journal caught it before anything was sent.
 *
 * @example
 * ```ts
 * await client.post('v1/payments', { key: 'order-7', json: { amount: 1 } });
 * await client.post('v1/payments', { key: 'order-7', json: { amount: 2 } }); // throws KeyReusedError, sends nothing
 * ```
 */
export class KeyReusedError extends OncelyError {
  override name = 'KeyReusedError';
  readonly method: string;
  readonly url: string;
  readonly key: string;
  /** `422` when the server refused it, `undefined` when caught locally. */
  readonly status: number | undefined;

  constructor(ref: OperationRef, status?: number, options?: { readonly cause?: unknown }) {
    const where = status === undefined ? 'the local journal holds' : `the server answered ${status}:`;
    super(ErrorCode.KeyReused, `${describe(ref)}: ${where} a different request under this key`, options);
    this.method = ref.method;
    this.url = ref.url;
    this.key = ref.key;
    this.status = status;
  }
}

/**
 * The key is not a valid idempotency key (1–255 characters from `A-Z a-z 0-9 _ . : ~ @ / + = -`):
 * rejected locally, or the server answered `400` about it.
 *
 * @example
 * ```ts
 * await client.post('v1/payments', { key: 'has spaces', json }); // throws InvalidKeyError
 * ```
 */
export class InvalidKeyError extends OncelyError {
  override name = 'InvalidKeyError';
  readonly method: string;
  readonly url: string;
  readonly key: string;
  /** `400` when the server refused it, `undefined` when rejected locally. */
  readonly status: number | undefined;

  constructor(ref: OperationRef, status?: number, options?: { readonly cause?: unknown }) {
    const why = status === undefined ? 'is not a valid idempotency key' : `was refused by the server (${status})`;
    super(ErrorCode.InvalidKey, `${ref.method} ${ref.url}: the Idempotency-Key ${JSON.stringify(ref.key)} ${why}`, options);
    this.method = ref.method;
    this.url = ref.url;
    this.key = ref.key;
    this.status = status;
  }
}

/**
 * The retry budget ran out while the outcome was still unknown (network errors, `409`, `202`,
 * `503`, `5xx`). The operation stays `pending` in the journal: `client.resume()` completes it
 * later with the same key and bytes. Unknown is never reported as failed.
 *
 * @example
 * ```ts
 * try { await op.send(); } catch (error) {
 *   if (isOncelyError(error, 'OPERATION_PENDING')) showBanner('Payment still processing');
 * }
 * ```
 */
export class OperationPendingError extends OncelyError {
  override name = 'OperationPendingError';
  readonly method: string;
  readonly url: string;
  readonly key: string;
  /** Attempts made so far, across processes. */
  readonly attempts: number;
  /** The last status seen, or `undefined` when no response arrived. */
  readonly lastStatus: number | undefined;

  constructor(ref: OperationRef, attempts: number, lastStatus?: number, options?: { readonly cause?: unknown }) {
    const last = lastStatus === undefined ? 'no response' : `last status ${lastStatus}`;
    super(
      ErrorCode.OperationPending,
      `${describe(ref)}: outcome still unknown after ${attempts} attempt(s), ${last}; the operation stays pending and resume() can complete it`,
      options,
    );
    this.method = ref.method;
    this.url = ref.url;
    this.key = ref.key;
    this.attempts = attempts;
    this.lastStatus = lastStatus;
  }
}

/**
 * The response part of an {@link HttpError}.
 *
 * @example
 * ```ts
 * new HttpError(ref, { status: 402, headers: {}, body: '{"type":"…/declined"}', replayed: false });
 * ```
 */
export interface HttpErrorResponse {
  readonly status: number;
  /** Lower-case header names. */
  readonly headers: Readonly<Record<string, string>>;
  /** The body text. */
  readonly body: string;
  /** Whether the server marked the response as a replay. */
  readonly replayed: boolean;
}

/**
 * A final non-2xx answer, such as `402` (declined), `401` or `404`. The operation is settled as
 * `failed` and never retried; a `402` is also what the server replays for this key.
 *
 * @example
 * ```ts
 * try { await client.post('v1/payments', { json: { amount: 5_000_000, currency: 'EUR' } }); } catch (error) {
 *   if (isOncelyError(error, 'HTTP_ERROR') && error.status === 402) console.log('declined', error.body);
 * }
 * ```
 */
export class HttpError extends OncelyError {
  override name = 'HttpError';
  readonly method: string;
  readonly url: string;
  readonly key: string;
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  /** The response body text (a problem+json document from the oncely server). */
  readonly body: string;
  readonly replayed: boolean;

  constructor(ref: OperationRef, response: HttpErrorResponse, options?: { readonly cause?: unknown }) {
    const replay = response.replayed ? ' (replayed)' : '';
    super(ErrorCode.Http, `${describe(ref)}: the server answered ${response.status}${replay}`, options);
    this.method = ref.method;
    this.url = ref.url;
    this.key = ref.key;
    this.status = response.status;
    this.headers = response.headers;
    this.body = response.body;
    this.replayed = response.replayed;
  }
}

/**
 * A pending operation is older than the key retention (`keyTtlMs`): the server may have forgotten
 * its key, so resending it could apply it twice. It is never resent; reconcile it by hand.
 *
 * @example
 * ```ts
 * const results = await client.resume();
 * for (const r of results) if (r.error instanceof ExpiredOperationError) reconcile(r.key);
 * ```
 */
export class ExpiredOperationError extends OncelyError {
  override name = 'ExpiredOperationError';
  readonly method: string;
  readonly url: string;
  readonly key: string;
  /** Epoch milliseconds when the operation was journaled. */
  readonly createdAt: number;

  constructor(ref: OperationRef, createdAt: number, keyTtlMs: number, options?: { readonly cause?: unknown }) {
    super(
      ErrorCode.ExpiredOperation,
      `${describe(ref)}: pending since ${new Date(createdAt).toISOString()}, older than the key retention of ${keyTtlMs} ms; not resent, reconcile it`,
      options,
    );
    this.method = ref.method;
    this.url = ref.url;
    this.key = ref.key;
    this.createdAt = createdAt;
  }
}

/**
 * The journal cannot be used: a damaged, locked or foreign file, a closed journal, a quota.
 *
 * @example
 * ```ts
 * throw new JournalError('the journal file is locked by another process', {
 *   path: '/var/lib/app/oncely.db',
 *   hint: 'close the other process or pass another path',
 * });
 * ```
 */
export class JournalError extends OncelyError {
  override name = 'JournalError';
  /** The journal's file or database name, when it has one. */
  readonly path: string | undefined;
  /** What the caller can do about it. */
  readonly hint: string;

  constructor(message: string, details: { readonly path?: string | undefined; readonly hint: string; readonly cause?: unknown }) {
    const where = details.path === undefined ? '' : ` (${details.path})`;
    super(ErrorCode.Journal, `${message}${where}: ${details.hint}`, { cause: details.cause });
    this.path = details.path;
    this.hint = details.hint;
  }
}

/**
 * The caller's `signal` aborted while the operation was in flight. Waiting stopped, but the
 * operation stays `pending`: an attempt may have reached the server, so `resume()` finishes it.
 *
 * @example
 * ```ts
 * const controller = new AbortController();
 * const sending = client.post('v1/payments', { json, signal: controller.signal });
 * controller.abort(); // sending rejects with OperationAbortedError; the op is still pending
 * ```
 */
export class OperationAbortedError extends OncelyError {
  override name = 'OperationAbortedError';
  readonly method: string;
  readonly url: string;
  readonly key: string;

  constructor(ref: OperationRef, options?: { readonly cause?: unknown }) {
    super(ErrorCode.Aborted, `${describe(ref)}: aborted by the caller; the operation stays pending`, options);
    this.method = ref.method;
    this.url = ref.url;
    this.key = ref.key;
  }
}

/**
 * Maps each {@link ErrorCode} to the class that carries it (what {@link isOncelyError} narrows to).
 *
 * @example
 * ```ts
 * const e: ErrorByCode['HTTP_ERROR'] = error; // an HttpError
 * ```
 */
export interface ErrorByCode {
  KEY_REUSED: KeyReusedError;
  INVALID_KEY: InvalidKeyError;
  OPERATION_PENDING: OperationPendingError;
  HTTP_ERROR: HttpError;
  EXPIRED_OPERATION: ExpiredOperationError;
  JOURNAL_ERROR: JournalError;
  ABORTED: OperationAbortedError;
  BODY_TOO_LARGE: OncelyError;
  CONFIG: OncelyError;
}

const NAMES: ReadonlySet<string> = new Set([
  'OncelyError',
  'KeyReusedError',
  'InvalidKeyError',
  'OperationPendingError',
  'HttpError',
  'ExpiredOperationError',
  'JournalError',
  'OperationAbortedError',
]);
const CODES: ReadonlySet<string> = new Set(Object.values(ErrorCode));

/**
 * Whether `value` is an {@link OncelyError} (optionally with this `code`). Checks the `name` and
 * `code` as well as `instanceof`, so errors from another copy of the package are recognised.
 *
 * @example
 * ```ts
 * if (isOncelyError(error, 'HTTP_ERROR')) console.log(error.status); // narrowed to HttpError
 * ```
 */
export function isOncelyError<C extends ErrorCode>(value: unknown, code: C): value is ErrorByCode[C];
export function isOncelyError(value: unknown): value is OncelyError;
export function isOncelyError(value: unknown, code?: ErrorCode): boolean {
  const foreignCode = value instanceof Error ? (value as Error & { code?: unknown }).code : undefined;
  const looksLike =
    value instanceof OncelyError ||
    (value instanceof Error && NAMES.has(value.name) && typeof foreignCode === 'string' && CODES.has(foreignCode));
  return looksLike && (code === undefined || (value as OncelyError).code === code);
}
