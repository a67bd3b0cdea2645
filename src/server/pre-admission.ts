/**
 * The checks a keyed request passes before its key is asked for in the store, written once for
 * both front ends: the reference handler (`handler.ts`) and the framework middleware's guard
 * (`middleware/guard.ts`). Each front end says how it reads its body, what the fingerprint is
 * computed from and how it admits; the order of PROTOCOL.md's answers is here:
 *
 * ```
 * caller (401) ─► key (400) ─► body under its cap (413) ─► finished key in the replay cache? (looked up once)
 *   ─► fingerprint's bytes (400: a body refused; the handler may replay an identical request here)
 *   ─► digest ─► cached: replay, or 422 for another fingerprint
 *   ─► the front end's admission ── any error ─► 503 + Retry-After (fail closed: nothing ran that was not recorded)
 * ```
 *
 * The caller comes before the key: a `401` must not tell a stranger whether its key was well
 * formed. The key is echoed on every answer once it parsed, the `401` included.
 *
 * @module
 * @internal
 */
import type { FingerprintDigest } from '../fingerprint.js';
import { parseKeyHeader } from '../keys.js';
import { fromCache } from './admission.js';
import { problemAnswer, storeUnavailable, type Answer } from './answers.js';
import { ProblemType } from './problems.js';
import type { CachedKey, ReplayCache } from './replay-cache.js';

/** What a front end's body reader says of a body over `maxBodyBytes` (answered `413`). */
export const TOO_LARGE = 'too-large';

/** A keyed request that passed the caller and key checks. */
export interface Keyed {
  readonly clientId: string;
  readonly key: string;
  /** The headers every answer echoes (`idempotency-key`). */
  readonly echo: Record<string, string>;
  /** The key as the replay cache holds it, when it is finished and cached. */
  readonly known: CachedKey | undefined;
}

/** What the fingerprint is computed from (and what the front end keeps for its admission), why the body is refused (`400`), or an answer already found. */
export type Fingerprinted<F> = { readonly bytes: Uint8Array<ArrayBuffer>; readonly kept: F } | { readonly refused: string } | { readonly answer: Answer };

/**
 * A front end as the checks see it, over its request `P`, its body `B`, what it keeps of the
 * fingerprinting `F`, and its result `R` (an answer, or the guard's decision).
 */
export interface KeyedFrontEnd<P, B, F, R> {
  readonly maxBodyBytes: number;
  readonly cache: ReplayCache | undefined;
  readonly digest: FingerprintDigest;
  /** The `401`'s detail: what the caller should send. */
  readonly noCaller: string;
  /** The authenticated caller, or `null` (answered `401`). */
  caller(request: P): string | null;
  keyHeader(request: P): string | null;
  /** The body, or {@link TOO_LARGE}; read only once the caller and the key passed. */
  body(request: P): B | typeof TOO_LARGE | Promise<B | typeof TOO_LARGE>;
  fingerprint(request: P, body: B, keyed: Keyed): Fingerprinted<F>;
  /** Admits the request (and runs or hands it over); any error is answered `503`. */
  admit(request: P, keyed: Keyed, requestHash: string, kept: F): Promise<R>;
  /** An answer given here, as the front end returns it. */
  answer(answer: Answer): R;
  /** Told of the error behind a `503` (a hook that throws is the front end's to contain). */
  report(error: unknown, ref: { readonly clientId: string; readonly key: string }): void;
}

/**
 * Runs the checks of the module comment on `request`, then `front.admit`.
 *
 * @example
 * ```ts
 * const decision = await checkThenAdmit(front, request); // 401, 400, 413, a cached replay or 422, or front.admit's result
 * ```
 */
export async function checkThenAdmit<P, B, F, R>(front: KeyedFrontEnd<P, B, F, R>, request: P): Promise<R> {
  const parsedKey = parseKeyHeader(front.keyHeader(request));
  const echo: Record<string, string> = parsedKey.ok ? { 'idempotency-key': parsedKey.key } : {};
  const clientId = front.caller(request);
  if (clientId === null) return front.answer(problemAnswer('invalid', ProblemType.Unauthorized, front.noCaller, { ...echo, 'www-authenticate': 'Bearer' }));
  if (!parsedKey.ok) return front.answer(problemAnswer('invalid', ProblemType.InvalidKey, parsedKey.reason));
  const body = await front.body(request);
  if (body === TOO_LARGE) return front.answer(problemAnswer('invalid', ProblemType.TooLarge, `the body is larger than ${front.maxBodyBytes} bytes`, echo));
  const key = parsedKey.key;
  const keyed: Keyed = { clientId, key, echo, known: front.cache?.get(clientId, key, Date.now()) };
  const fingerprinted = front.fingerprint(request, body, keyed);
  if ('answer' in fingerprinted) return front.answer(fingerprinted.answer);
  if ('refused' in fingerprinted) return front.answer(problemAnswer('invalid', ProblemType.InvalidRequest, fingerprinted.refused, echo));
  const requestHash = await front.digest(fingerprinted.bytes);
  // A finished key answers from the cache exactly as from its row: fingerprint first.
  if (keyed.known) return front.answer(fromCache(keyed.known, requestHash, echo));
  try {
    return await front.admit(request, keyed, requestHash, fingerprinted.kept);
  } catch (error) {
    // Fail closed: without the store there is no record, so nothing may run. The cause is
    // reported: a 503 says "the same request may succeed later", and someone should know why.
    front.report(error, { clientId, key });
    return front.answer(storeUnavailable(echo));
  }
}
