/**
 * CORS for browser callers on other origins (`oncely serve --cors ORIGIN`): a preflight from a
 * listed origin is answered `204` allowing the headers an idempotent POST sends, and every answer
 * to such an origin exposes the headers a client reads. An origin not listed gets no CORS headers
 * (the browser then refuses to let the page read anything).
 *
 * @module
 */

/** What a browser on a listed origin may send. */
export const CORS_ALLOWED_HEADERS = ['Idempotency-Key', 'Content-Type', 'Authorization', 'Prefer'] as const;
/** What it may read. */
export const CORS_EXPOSED_HEADERS = ['Idempotency-Key', 'Idempotency-Replay', 'Retry-After', 'Location'] as const;

/** A fetch handler with CORS in front. */
export type Fetch = (request: Request) => Promise<Response>;

/**
 * Wraps `fetch` with CORS for `origins` (exact `scheme://host[:port]` strings); with none, `fetch` itself.
 *
 * @example
 * ```ts
 * const handler = withCors(app.fetch, ['https://shop.example']);
 * ```
 */
export function withCors(fetch: Fetch, origins: readonly string[]): Fetch {
  if (origins.length === 0) return fetch;
  const allowed = new Set(origins);
  return async (request) => {
    const origin = request.headers.get('origin');
    const listed = origin !== null && allowed.has(origin);
    if (request.method === 'OPTIONS' && request.headers.has('access-control-request-method')) {
      const headers: Record<string, string> = { vary: 'Origin' };
      if (listed) {
        Object.assign(headers, {
          'access-control-allow-origin': origin,
          'access-control-allow-methods': 'GET, POST',
          'access-control-allow-headers': CORS_ALLOWED_HEADERS.join(', '),
          'access-control-max-age': '600',
        });
      }
      return new Response(null, { status: 204, headers });
    }
    const response = await fetch(request);
    if (!listed) return response;
    // A replay's headers may be shared (frozen) by the replay cache: answer with a copy.
    const headers = new Headers(response.headers);
    headers.set('access-control-allow-origin', origin);
    headers.set('access-control-expose-headers', CORS_EXPOSED_HEADERS.join(', '));
    headers.append('vary', 'Origin');
    return new Response(response.body, { status: response.status, statusText: response.statusText, headers });
  };
}
