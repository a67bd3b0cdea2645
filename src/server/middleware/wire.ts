/**
 * A response as the framework edges hand it to the guard and get it back, and what of it is
 * stored for replay.
 *
 * @module
 * @internal
 */
import { PROBLEM_BASE } from '../problems.js';
import type { WireResponse } from '../answers.js';
import type { StoredResponse } from '../store/types.js';

export type { WireResponse } from '../answers.js';

/** Headers as a Node response holds them (a repeated header stays an array). */
export type HeaderValues = Record<string, number | string | string[]>;

/**
 * The headers the handler set: those not already on the response when the guard admitted the
 * request (CORS, a request id: earlier middleware and hooks set them again on every request, a
 * replay's own included, so they are not stored).
 */
export function handlerHeaders(now: Readonly<HeaderValues>, before: Readonly<HeaderValues>): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(now)) {
    const flat = Array.isArray(value) ? value.join(', ') : String(value);
    const earlier = before[name];
    if (earlier === undefined || (Array.isArray(earlier) ? earlier.join(', ') : String(earlier)) !== flat) headers[name] = flat;
  }
  return headers;
}

/**
 * 4xx answers never stored (the key is released): a retry may cure them (401, 408, 409, 429), or,
 * for 400, the request was refused before any work, which PROTOCOL.md says consumes no key (a
 * corrected body may be sent again with the same key).
 */
const RELEASED_4XX = new Set([400, 401, 408, 409, 429]);

/**
 * Whether a handler's response is final, stored with the key and replayed: 2xx, 3xx, and 4xx
 * except 400, 401, 408, 409 and 429. A 5xx (and those five) releases the key, so a retry runs afresh.
 *
 * @example
 * ```ts
 * isFinalStatus(201); // true
 * isFinalStatus(503); // false
 * ```
 */
export function isFinalStatus(status: number): boolean {
  return status >= 200 && status < 500 && !RELEASED_4XX.has(status);
}

/**
 * Not replayed: set per response by the server (`date`, framing), credentials (`set-cookie`), or
 * set by the guard itself on every answer.
 */
const UNSTORED = new Set(['set-cookie', 'date', 'connection', 'keep-alive', 'transfer-encoding', 'content-length', 'idempotency-key', 'idempotency-replay']);

const utf8 = new TextDecoder('utf-8', { fatal: true });
const encoder = new TextEncoder();

/**
 * What is stored for `response`: its status, its headers but {@link UNSTORED}, its body text. A body
 * that is larger than `maxBytes` or not UTF-8 is not stored: its replay is a problem document with
 * the same status saying so (the handler is still never run twice).
 */
export function captureStored(response: WireResponse, maxBytes: number): StoredResponse {
  const headers: Record<string, string> = {};
  for (const name in response.headers) if (!UNSTORED.has(name)) headers[name] = response.headers[name]!;
  const body = response.body ?? '';
  let text: string | undefined;
  let size: number;
  if (typeof body === 'string') {
    // At most 3 bytes per UTF-16 unit: encode only a body that might be too large.
    size = body.length * 3 <= maxBytes ? body.length : encoder.encode(body).byteLength;
    text = body;
  } else {
    size = body.byteLength;
    try {
      text = size <= maxBytes ? utf8.decode(body) : undefined;
    } catch {
      text = undefined;
    }
  }
  // NUL: PostgreSQL's text cannot hold it, and every store must answer alike.
  if (text !== undefined && size <= maxBytes && !text.includes('\u0000')) return { status: response.status, headers, body: text };
  const why = size > maxBytes ? `is larger than maxResponseBytes (${Math.max(0, maxBytes)})` : text === undefined ? 'is not UTF-8 text' : 'contains NUL';
  return {
    status: response.status,
    headers: { 'content-type': 'application/problem+json' },
    body: JSON.stringify({
      type: `${PROBLEM_BASE}response-not-stored`,
      title: 'The original response was not stored',
      status: response.status,
      detail: `the original response (${size} bytes) ${why}; it was delivered once and is not replayed`,
    }),
  };
}
