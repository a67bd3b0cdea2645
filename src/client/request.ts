/**
 * Turns a call (`client.post(path, { json })`) into the operation that is journaled: the
 * absolute URL, the exact body bytes, the non-credential headers, the key and the fingerprint.
 *
 * @module
 */
import { ErrorCode, InvalidKeyError, OncelyError } from '../errors.js';
import { fingerprintInput } from '../fingerprint.js';
import { CREDENTIAL_HEADERS, type NewOperation } from '../journal/types.js';
import { deriveKey, isValidKey, newKey } from '../keys.js';
import type { ResolvedOptions } from './options.js';

/**
 * Options of one keyed request (`post`, `put`, `patch`, `delete`, `prepare`).
 *
 * @example
 * ```ts
 * await client.post('v1/payments', {
 *   json: { amount: 1250, currency: 'EUR', reference: 'row-17' },
 *   naturalKey: ['acme-payroll', 'pay', '2026-12-01', 'row-17'],
 * });
 * ```
 */
export interface RequestOptions {
  /** A JSON body: serialised once with `JSON.stringify`, sent as `application/json`. */
  readonly json?: unknown;
  /** A text body, sent byte for byte (set `content-type` yourself). Binary bodies are not journaled. */
  readonly body?: string;
  /** Extra headers. Credentials among them are sent but never journaled. */
  readonly headers?: Readonly<Record<string, string>>;
  /** Use this idempotency key (validated) instead of minting a UUIDv7. */
  readonly key?: string;
  /** Derive the key from a natural reference: `deriveKey(namespace, ...naturalKey)`. */
  readonly naturalKey?: ReadonlyArray<string | number>;
  /** Stops waiting for this call; the operation stays pending. */
  readonly signal?: AbortSignal;
}

/**
 * A call resolved into what is journaled plus what must stay in memory only.
 *
 * @internal
 */
export interface PreparedRequest {
  readonly operation: NewOperation;
  /** Credential headers given with this call: sent with every attempt in this process, never journaled. */
  readonly credentials: Readonly<Record<string, string>>;
}

const encoder = new TextEncoder();

function lowerCase(headers: Readonly<Record<string, string>> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers ?? {})) out[name.toLowerCase()] = value;
  return out;
}

function chooseKey(options: RequestOptions, namespace: string, method: string, url: string): string {
  if (options.key !== undefined && options.naturalKey !== undefined) {
    throw new OncelyError(ErrorCode.Config, `${method} ${url}: give either key or naturalKey, not both`);
  }
  if (options.naturalKey !== undefined) return deriveKey(namespace, ...options.naturalKey);
  if (options.key !== undefined) {
    if (!isValidKey(options.key)) throw new InvalidKeyError({ method, url, key: options.key });
    return options.key;
  }
  return newKey();
}

/**
 * Resolves a call into the operation to journal. Throws before anything is journaled or sent.
 *
 * @internal
 */
export async function prepareRequest(
  resolved: ResolvedOptions,
  method: string,
  path: string,
  options: RequestOptions,
): Promise<PreparedRequest> {
  const verb = method.toUpperCase();
  const url = new URL(path, resolved.baseUrl);
  const headers = { ...resolved.headers, ...lowerCase(options.headers) };
  if ('idempotency-key' in headers) {
    throw new OncelyError(ErrorCode.Config, `${verb} ${url.href}: pass the key as the \`key\` option, not as a header`);
  }
  let body: string | null = null;
  if (options.json !== undefined && options.body !== undefined) {
    throw new OncelyError(ErrorCode.Config, `${verb} ${url.href}: give either json or body, not both`);
  }
  if (options.json !== undefined) {
    body = JSON.stringify(options.json);
    headers['content-type'] ??= 'application/json';
  } else if (options.body !== undefined) {
    body = options.body;
  }
  const key = chooseKey(options, resolved.namespace, verb, url.href);
  if (body !== null) {
    const size = encoder.encode(body).length;
    if (size > resolved.maxBodyBytes) {
      throw new OncelyError(
        ErrorCode.BodyTooLarge,
        `${verb} ${url.href} (Idempotency-Key ${key}): the body is ${size} bytes, over the ${resolved.maxBodyBytes}-byte cap; nothing was sent`,
      );
    }
  }
  const journaled: Record<string, string> = {};
  const credentials: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    // content-length is recomputed by fetch; keeping a stale one would corrupt a resend.
    if (name === 'content-length') continue;
    (CREDENTIAL_HEADERS.has(name) ? credentials : journaled)[name] = value;
  }
  // Without a content-type, fetch sends a string body as text/plain: fingerprint it as the server will.
  const contentType = journaled['content-type'] ?? 'text/plain;charset=UTF-8';
  const fp = await resolved.digest(fingerprintInput(verb, url.pathname + url.search, body, { contentType }));
  return {
    operation: { key, method: verb, url: url.href, headers: journaled, body, fingerprint: fp },
    credentials,
  };
}
