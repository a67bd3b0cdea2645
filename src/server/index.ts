/**
 * The server library (`oncely/server`): the idempotency state machine of PROTOCOL.md over a
 * pluggable {@link KeyStore}. Runtime-neutral (web `Request`/`Response`, no Node built-ins): the
 * stores are entries of their own, `oncely/server/sqlite` and `oncely/server/postgres`.
 *
 * @module
 */
export { KeyState, WatchEvent } from './store/types.js';
export type { AdmitInput, AdmitResult, AppSchema, Fenced, KeyRow, KeyStore, Lease, PhaseCommit, StoredResponse, Tx } from './store/types.js';
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
export { createIdempotencyHandler, type IdempotencyHandler, type IdempotencyHandlerOptions, type RecoveryOutcome } from './handler.js';
export { defaultDigest, webCryptoDigest, type FingerprintDigest } from '../fingerprint.js';
export type { PhaseHooks } from './phases.js';
export type { SpanAttributeValue, SpanAttributes, TelemetryApi, TelemetryContext, TelemetryOptions, TelemetrySpan, TelemetryTracer } from '../telemetry/types.js';
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
