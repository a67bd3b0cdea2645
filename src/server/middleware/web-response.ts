/**
 * Web-standard `Response`s for the guards of runtimes that speak them (`oncely/hono`,
 * `oncely/web`): the guard's wire response as a `Response`, and a handler's `Response` headers as
 * the guard stores them.
 *
 * @module
 * @internal
 */
import type { WireResponse } from '../answers.js';

/**
 * `wire` as a `Response` (no body for 204 and 304, which may not carry one).
 *
 * @example
 * ```ts
 * const response = toResponse({ status: 201, headers: { 'content-type': 'application/json' }, body: '{}' });
 * ```
 */
export const toResponse = (wire: WireResponse): Response => {
  const body = wire.status === 204 || wire.status === 304 ? null : wire.body;
  return new Response(body as BodyInit | null, { status: wire.status, headers: wire.headers });
};

/**
 * A response's headers as a plain object, but `set-cookie`: never stored, passed on apart.
 *
 * @example
 * ```ts
 * headersOf(new Response('{}', { headers: { 'content-type': 'application/json' } })); // { 'content-type': 'application/json' }
 * ```
 */
export function headersOf(response: Response): Record<string, string> {
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    if (name !== 'set-cookie') headers[name] = value;
  });
  return headers;
}
