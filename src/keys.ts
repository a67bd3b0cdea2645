/**
 * Idempotency keys: minting, deriving and validating them.
 *
 * This module is shared by the client and the server, so the rules here are the
 * rules of `PROTOCOL.md` ("Identity and keys") and nothing else.
 *
 * @module
 */
import { v5 as uuidv5, v7 as uuidv7 } from 'uuid';

/**
 * The namespace {@link deriveKey} uses when none is given: `uuid5(URL, "https://oncely.dev/ns/default")`.
 * Override it per client (`createClient({ namespace })`) so that two applications deriving keys
 * from the same natural references never share keys.
 *
 * @example
 * ```ts
 * deriveKey(DEFAULT_NAMESPACE, 'acme-payroll', 'pay', '2026-12-01'); // same as deriveKey(undefined, ...)
 * ```
 */
export const DEFAULT_NAMESPACE = '7317fbb1-7234-5e5c-b971-92b1e877523a';

/** Longest key the protocol accepts. */
export const MAX_KEY_LENGTH = 255;

const KEY_PATTERN = /^[A-Za-z0-9_.:~@/+=-]{1,255}$/;
const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Mints a fresh key for one logical operation: a UUIDv7, time-ordered so that the
 * server's primary-key index stays append-mostly.
 *
 * Mint it once per operation, before the first attempt, and keep it with the pending
 * request: a key minted inside a retry loop defeats the whole mechanism.
 *
 * @example
 * ```ts
 * const key = newKey(); // '0193a5f2-7c1e-7a4b-9d2e-...'
 * ```
 */
export function newKey(): string {
  return uuidv7();
}

/**
 * Derives a deterministic key (uuid5) from a natural reference, such as a payroll row's
 * `client_ref + operation + value_date`. Resubmitting the same reference yields the same
 * key, so a resubmitted file is inherently safe.
 *
 * The parts are encoded unambiguously (as a JSON array), so `('a|b', 'c')` and
 * `('a', 'b|c')` never collide.
 *
 * @param namespace a UUID naming your application's key space; `undefined` uses {@link DEFAULT_NAMESPACE}
 * @param parts the natural reference, at least one part
 * @throws TypeError when the namespace is not a UUID or no part is given
 *
 * @example
 * ```ts
 * const key = deriveKey(undefined, 'acme-payroll', 'pay', '2026-12-01', 'row-17');
 * ```
 */
export function deriveKey(namespace: string | undefined, ...parts: ReadonlyArray<string | number>): string {
  const ns = namespace ?? DEFAULT_NAMESPACE;
  if (!UUID_PATTERN.test(ns)) {
    throw new TypeError(`deriveKey: namespace must be a UUID, got ${JSON.stringify(ns)}`);
  }
  if (parts.length === 0) {
    throw new TypeError('deriveKey: give at least one part of the natural reference');
  }
  return uuidv5(JSON.stringify(parts.map(String)), ns);
}

/**
 * Whether `key` is a valid idempotency key: 1–255 characters from
 * `A-Z a-z 0-9 _ . : ~ @ / + = -`.
 *
 * @example
 * ```ts
 * isValidKey('order-123'); // true
 * isValidKey('order 123'); // false
 * ```
 */
export function isValidKey(key: unknown): key is string {
  return typeof key === 'string' && KEY_PATTERN.test(key);
}

/** What {@link parseKeyHeader} found. */
export type ParsedKey = { readonly ok: true; readonly key: string } | { readonly ok: false; readonly reason: string };

/**
 * Parses an `Idempotency-Key` header value: a bare token or an RFC 8941 sf-string
 * (unquoted first). Two headers arrive joined by `", "` and are therefore rejected,
 * as are empty, over-long and out-of-charset keys.
 *
 * @param value the raw header value, or `null` when the header is absent
 *
 * @example
 * ```ts
 * parseKeyHeader('"0193a5f2-7c1e"'); // { ok: true, key: '0193a5f2-7c1e' }
 * parseKeyHeader('a b');             // { ok: false, reason: '...' }
 * ```
 */
export function parseKeyHeader(value: string | null | undefined): ParsedKey {
  if (value === null || value === undefined) {
    return { ok: false, reason: 'the Idempotency-Key header is required' };
  }
  let key = value;
  if (key.startsWith('"')) {
    // An sf-string may escape `"` and `\`, but neither is allowed in a key, so a
    // well-formed sf-string key is simply the text between the two quotes.
    if (key.length < 2 || !key.endsWith('"')) {
      return { ok: false, reason: 'the quoted Idempotency-Key is not closed' };
    }
    key = key.slice(1, -1);
  }
  if (key.length === 0) return { ok: false, reason: 'the Idempotency-Key is empty' };
  if (key.length > MAX_KEY_LENGTH) {
    return { ok: false, reason: `the Idempotency-Key is longer than ${MAX_KEY_LENGTH} characters` };
  }
  if (!KEY_PATTERN.test(key)) {
    return {
      ok: false,
      reason: 'the Idempotency-Key may only contain A-Z a-z 0-9 _ . : ~ @ / + = - (one header, no spaces)',
    };
  }
  return { ok: true, key };
}
