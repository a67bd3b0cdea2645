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
import { ErrorCode, OncelyError } from './errors/oncely-error.js';
import type { ExpiredOperationError } from './errors/expired-operation-error.js';
import type { HttpError } from './errors/http-error.js';
import type { InvalidKeyError } from './errors/invalid-key-error.js';
import type { JournalError } from './errors/journal-error.js';
import type { KeyReusedError } from './errors/key-reused-error.js';
import type { OperationAbortedError } from './errors/operation-aborted-error.js';
import type { OperationPendingError } from './errors/operation-pending-error.js';
import type { RequestRefusedError } from './errors/request-refused-error.js';

export { ErrorCode, OncelyError, type OperationRef } from './errors/oncely-error.js';
export { KeyReusedError } from './errors/key-reused-error.js';
export { InvalidKeyError } from './errors/invalid-key-error.js';
export { OperationPendingError } from './errors/operation-pending-error.js';
export { HttpError, type HttpErrorResponse } from './errors/http-error.js';
export { ExpiredOperationError } from './errors/expired-operation-error.js';
export { JournalError } from './errors/journal-error.js';
export { OperationAbortedError } from './errors/operation-aborted-error.js';
export { RequestRefusedError } from './errors/request-refused-error.js';

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
  REQUEST_REFUSED: RequestRefusedError;
  CONFIG: OncelyError;
  RESPONSE_TOO_LARGE: OncelyError;
  LEASE_EXPIRED: OncelyError;
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
  'RequestRefusedError',
  // The server library's (src/server/errors/), under the same base.
  'InvalidOptionError',
  'ResponseTooLargeError',
  'LeaseExpiredError',
  'MiddlewareOrderError',
  'DatabaseSetupError',
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
    value instanceof OncelyError || (value instanceof Error && NAMES.has(value.name) && typeof foreignCode === 'string' && CODES.has(foreignCode));
  return looksLike && (code === undefined || (value as OncelyError).code === code);
}
