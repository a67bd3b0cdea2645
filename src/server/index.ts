/**
 * The server library (`oncely/server`): the idempotency state machine of PROTOCOL.md over a
 * pluggable {@link KeyStore}. Runtime-neutral (web `Request`/`Response`, no Node built-ins): the
 * stores are entries of their own, `oncely/server/sqlite` and `oncely/server/postgres`.
 *
 * Where things live in `src/server/`:
 * - `admission.ts`: which branch of PROTOCOL.md's matrix a keyed request takes (one pure
 *   classifier, one driver), for both front ends;
 * - `handler.ts`: the reference front end (`Request` → `Response`) running operations as steps
 *   (`phases.ts`); `middleware/`: the framework front end (`oncely/express`, `/hono`, `/fastify`);
 * - `answers.ts`: the one answer type both send; `options.ts`: their shared, validated options
 *   and defaults; `errors/`: the server's typed errors (under `OncelyError`);
 * - `store/`: the KeyStore contract (`store/types.ts`) and the SQLite and PostgreSQL stores;
 * - `in-flight.ts`, `replay-cache.ts`, `worker.ts`: waiting for an owner, the finished-key cache,
 *   the recovery worker and reaper.
 *
 * @module
 */
export { KeyState, WatchEvent } from './store/types.js';
export type { AdmitInput, AdmitResult, AppSchema, Fenced, FirstPhase, KeyRow, KeyStore, Lease, PhaseCommit, PointWrite, StoredResponse, Tx } from './store/types.js';
export type {
  ExternalOutcome,
  ExternalStep,
  FinalStep,
  IdempotentOperation,
  LocalStep,
  ParseResult,
  ProbeOutcome,
  Step,
  StepContext,
} from './types.js';
export type { FinalResponse } from './store/types.js';
export { SERVER_DEFAULTS, type ServerOptions } from './options.js';
export { InvalidOptionError } from './errors/invalid-option-error.js';
export { ResponseTooLargeError } from './errors/response-too-large-error.js';
export { LeaseExpiredError } from './errors/lease-expired-error.js';
export { MiddlewareOrderError } from './errors/middleware-order-error.js';
export { isOncelyError, OncelyError, ErrorCode } from '../errors.js';
export { createIdempotencyHandler, type IdempotencyHandler, type IdempotencyHandlerOptions, type RecoveryOutcome } from './handler.js';
export { defaultDigest, webCryptoDigest, type FingerprintDigest } from '../fingerprint.js';
export type { PhaseHooks } from './phases.js';
export { externalKey } from './derived-key.js';
export { MAX_JSON_DEPTH, jsonTextProblem, numberLiteral } from './json-text.js';
export { PROBLEM_BASE, ProblemType, problem, problemBody, type ProblemBody } from './problems.js';
export { RequestOutcome, ServerEvent, createServerMetrics, type ServerMetrics } from './metrics.js';
export { createReplayCache, type CachedKey, type ReplayCache, type ReplayCacheOptions } from './replay-cache.js';
export {
  createReaper,
  createRecoveryWorker,
  type BackgroundLoop,
  type ReaperOptions,
  type RecoveryPass,
  type RecoveryWorkerOptions,
} from './worker.js';
