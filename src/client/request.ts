/**
 * Turns a call (`client.post(path, { json })`) into the operation that is journaled: the
 * absolute URL, the exact body bytes, the non-credential headers, the key and the fingerprint.
 *
 * @module
 */
import { queryCredential } from '../credentials.js';
import { ErrorCode, InvalidKeyError, OncelyError } from '../errors.js';
import { journaledFingerprintInput } from '../journal/integrity.js';
import type { NewOperation } from '../journal/types.js';
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
  /**
   * Extra headers for this operation. Only allow-listed ones (`content-type`, `accept`, the
   * client's `journalHeaders`) are journaled; the others are sent by this process only, so a
   * `resume()` after a restart sends the client's `headers` instead.
   */
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
  /** Headers of this call outside the allow-list: sent with every attempt in this process, never journaled. */
  readonly unjournaled: Readonly<Record<string, string>>;
}

/**
 * Checks that `headers` can be sent by fetch at all (values without CR/LF/NUL, names that are
 * tokens), so a bad value fails before anything is journaled, not as an unknown outcome.
 *
 * @internal
 */
export function checkHeaders(headers: Readonly<Record<string, string>>): string | undefined {
  try {
    new Headers(headers);
    return undefined;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
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
export async function prepareRequest(resolved: ResolvedOptions, method: string, path: string, options: RequestOptions): Promise<PreparedRequest> {
  const verb = method.toUpperCase();
  const target = resolved.target(`${verb} ${JSON.stringify(path)}`);
  let url: URL;
  try {
    url = new URL(path, target.baseUrl);
  } catch (cause) {
    throw new OncelyError(ErrorCode.Config, `${verb} ${JSON.stringify(path)}: not a URL path; nothing was journaled or sent`, { cause });
  }
  if (url.username !== '' || url.password !== '') {
    throw new OncelyError(
      ErrorCode.Config,
      `${verb} ${path}: the URL holds a user name or password; send credentials as a header. Nothing was journaled or sent`,
    );
  }
  // The client's headers (its credentials) are for its own origin only.
  if (url.origin !== target.origin) {
    throw new OncelyError(ErrorCode.Config, `${verb} ${url.href}: outside this client's origin ${target.origin}; nothing was journaled or sent`);
  }
  // A query string is journaled: a parameter named like a credential, or holding a JWT, is
  // refused unless opted in (see credentials.ts for the rule).
  const secret = resolved.allowCredentialsInQuery === true ? undefined : queryCredential(url, resolved.allowCredentialsInQuery);
  if (secret !== undefined) {
    throw new OncelyError(
      ErrorCode.Config,
      `${verb} ${url.origin}${url.pathname}: the query parameter ${JSON.stringify(secret)} looks like a credential and the journal keeps query strings; ` +
        `send it as a header, or name it in allowCredentialsInQuery (['${secret}']). Nothing was journaled or sent`,
    );
  }
  // A fragment is never sent (fetch drops it) and may hold a token (OAuth's implicit flow): it
  // is not journaled either.
  url.hash = '';
  const callHeaders = lowerCase(options.headers);
  const headers = { ...(await resolved.headers()), ...callHeaders };
  if ('idempotency-key' in headers) {
    throw new OncelyError(ErrorCode.Config, `${verb} ${url.href}: pass the key as the \`key\` option, not as a header`);
  }
  let body: string | null = null;
  if (options.json !== undefined && options.body !== undefined) {
    throw new OncelyError(ErrorCode.Config, `${verb} ${url.href}: give either json or body, not both`);
  }
  if (options.json !== undefined) {
    body = serialise(options.json, verb, url.href);
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
  const refused = checkHeaders(headers);
  if (refused !== undefined) {
    throw new OncelyError(ErrorCode.Config, `${verb} ${url.href}: a header cannot be sent (${refused}); nothing was journaled or sent`);
  }
  // content-length is recomputed by fetch; keeping a stale one would corrupt a resend.
  delete headers['content-length'];
  delete callHeaders['content-length'];
  const journaled: Record<string, string> = {};
  const unjournaled: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (resolved.journalHeaders.has(name)) journaled[name] = value;
  }
  // The client's own headers are evaluated again for every attempt; only this call's are kept.
  for (const [name, value] of Object.entries(callHeaders)) {
    if (!resolved.journalHeaders.has(name)) unjournaled[name] = value;
  }
  // The journal check (recordDamage) recomputes it from the journaled record alone.
  const fp = await resolved.digest(journaledFingerprintInput(verb, url, journaled, body));
  return {
    operation: { scope: target.scope, key, method: verb, url: url.href, headers: journaled, body, fingerprint: fp },
    unjournaled,
  };
}

function serialise(json: unknown, verb: string, url: string): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(json);
  } catch (cause) {
    throw new OncelyError(ErrorCode.Config, `${verb} ${url}: the json body cannot be serialised (${String(cause)}); nothing was journaled or sent`, { cause });
  }
  if (text === undefined) {
    throw new OncelyError(ErrorCode.Config, `${verb} ${url}: the json body (${typeof json}) has no JSON form; nothing was journaled or sent`);
  }
  return text;
}
