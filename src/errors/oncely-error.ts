/**
 * The base of every oncely error, its codes, and the operation reference errors carry.
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
  /** `fetch` refused the request locally before anything was sent; never an unknown outcome. */
  RequestRefused: 'REQUEST_REFUSED',
  /** The client or the server library was configured or called incorrectly (an invalid option). */
  Config: 'CONFIG',
  /** Server: a response larger than the key store's `maxResponseBytes` was given to store. */
  ResponseTooLarge: 'RESPONSE_TOO_LARGE',
  /** Server: a guarded handler answered after its lease ran out and another request took its key over. */
  LeaseExpired: 'LEASE_EXPIRED',
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

/**
 * `METHOD url (Idempotency-Key key)`, the prefix of operation error messages.
 *
 * @internal
 */
export const describeOperation = (ref: OperationRef): string => `${ref.method} ${ref.url} (Idempotency-Key ${ref.key})`;

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
