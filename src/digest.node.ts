/**
 * The Node {@link FingerprintDigest}: `node:crypto`'s SHA-256, synchronous.
 *
 * WebCrypto's `subtle.digest` is asynchronous and, for a request-sized input, spends far more
 * time scheduling the hash off the main thread and back than hashing; on an idempotency
 * server the fingerprint is computed for every replay and every `409`, so that overhead sits on
 * the hottest path. `bench/fingerprint.ts` measures the difference.
 *
 * @module
 */
import { createHash } from 'node:crypto';
import type { FingerprintDigest } from './fingerprint.js';

/**
 * SHA-256 of `input` as lower-case hex, computed synchronously with `node:crypto`. Returns
 * exactly what the WebCrypto default returns, so a client and a server can never disagree on a
 * fingerprint whichever of the two each uses.
 *
 * @example
 * ```ts
 * const hex = await nodeDigest(new TextEncoder().encode('{"amount":5}')); // 64 hex digits, the same as webCryptoDigest's
 * ```
 */
export const nodeDigest: FingerprintDigest = (input) => createHash('sha256').update(input).digest('hex');
