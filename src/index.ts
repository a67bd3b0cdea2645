/**
 * oncely — make a retried operation take effect exactly once.
 *
 * The platform-neutral part both entries share. `oncely` resolves to `oncely/node` in Node and
 * to `oncely/browser` everywhere else (bundlers, workers, other runtimes), each with its own
 * types; `oncely/browser`'s default journal reports clearly where IndexedDB is missing.
 *
 * @module
 */
export { DEFAULT_NAMESPACE, MAX_KEY_LENGTH, deriveKey, isValidKey, newKey } from './keys.js';
export { fingerprint, type FingerprintBody, type FingerprintOptions } from './fingerprint.js';
export { memoryJournal } from './journal/memory.js';
export { createClient, type Client, type ResumeOptions } from './client/create-client.js';
export type { Operation, SendOptions } from './client/operation-handle.js';
export type { OperationSnapshot, OperationStatus, SettledOptions } from './client/follow.js';
export { DEFAULT_RETRY, type ClientHooks, type ClientOptions, type ResolvedRetryOptions, type RetryOptions } from './client/options.js';
export type { RequestOptions } from './client/request.js';
export type { SpanAttributeValue, SpanAttributes, TelemetryApi, TelemetryContext, TelemetryOptions, TelemetrySpan, TelemetryTracer } from './telemetry/types.js';
export type {
  AttemptEvent,
  OperationResult,
  DamagedOperation,
  PendingOperation,
  UnsettledOperation,
  ResumeOutcome,
  RetryEvent,
  SettledEvent,
  UnansweredEvent,
} from './client/results.js';
export {
  ErrorCode,
  ExpiredOperationError,
  HttpError,
  InvalidKeyError,
  JournalError,
  KeyReusedError,
  OncelyError,
  OperationAbortedError,
  OperationPendingError,
  RequestRefusedError,
  isOncelyError,
  type ErrorByCode,
  type HttpErrorResponse,
  type OperationRef,
} from './errors.js';
export {
  JOURNALED_HEADERS,
  OperationState,
  isExpired,
  scopeOf,
  type DamagedRecord,
  type Journal,
  type ListFilter,
  type NewOperation,
  type OperationPatch,
  type OperationRecord,
  type PutOutcome,
  type StoredResult,
} from './journal/types.js';
