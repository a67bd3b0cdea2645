/**
 * The server library (`oncely/server`): the idempotency state machine of PROTOCOL.md over a
 * pluggable key store. Runtime-neutral (web `Request`/`Response`, no Node built-ins): the
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
 * This entry exports what a server author calls: the handler, the steps (and `Tx`, which local
 * steps run statements on), the recovery worker and reaper, the counters, and the errors a server
 * author catches by type: `InvalidOptionError` (thrown by `createIdempotencyHandler`) and
 * `ResponseTooLargeError` (a final response the store refuses, reported to `hooks.onError`). Two
 * names are not here, to keep this entry within 25: the options' shared base (`ServerOptions`:
 * `IdempotencyHandlerOptions` carries its members) and the step union (`Step`: write
 * `LocalStep<I> | ExternalStep<I>`, as `IdempotentOperation.steps` does). The
 * KeyStore contract, for a store of your own, is `oncely/server/store`; each middleware entry
 * exports the errors its `idempotent()` throws or reports. Other names stay importable from their
 * module inside the repository only.
 *
 * @module
 */
export { createIdempotencyHandler, type IdempotencyHandler, type IdempotencyHandlerOptions, type RecoveryOutcome } from './handler.js';
export type { ReplayCacheOptions } from './replay-cache.js';
export type { PhaseHooks } from './phases.js';
export type { ExternalOutcome, ExternalStep, FinalStep, IdempotentOperation, LocalStep, ParseResult, ProbeOutcome, StepContext } from './types.js';
export type { Tx } from './store/types.js';
export { numberLiteral } from './json-text.js';
export { createReaper, createRecoveryWorker, type BackgroundLoop, type ReaperOptions, type RecoveryWorkerOptions } from './worker.js';
export { createServerMetrics, type ServerMetrics } from './metrics.js';
export { InvalidOptionError } from './errors/invalid-option-error.js';
export { ResponseTooLargeError } from './errors/response-too-large-error.js';
