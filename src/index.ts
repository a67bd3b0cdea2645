/**
 * oncely — make a retried operation take effect exactly once.
 *
 * The platform-neutral part both entries share: what a caller calls. `oncely` resolves to
 * `oncely/node` in Node and to `oncely/browser` everywhere else (bundlers, workers, other
 * runtimes), each with its own types; `oncely/browser`'s default journal reports clearly where
 * IndexedDB is missing. A journal of your own, and the records it keeps, are in `oncely/journal`.
 *
 * @module
 */
export { deriveKey, isValidKey, newKey } from './keys.js';
export { memoryJournal } from './journal/memory.js';
export { createClient, type Client, type ResumeOptions } from './client/create-client.js';
export type { Operation, SendOptions } from './client/operation-handle.js';
export type { OperationSnapshot } from './client/follow.js';
export type { ClientOptions, RetryOptions } from './client/options.js';
export type { RequestOptions } from './client/request.js';
export type { OperationResult, PendingOperation, ResumeOutcome, RetryEvent } from './client/results.js';
export { ErrorCode, HttpError, KeyReusedError, OncelyError, isOncelyError, type ErrorByCode } from './errors.js';
