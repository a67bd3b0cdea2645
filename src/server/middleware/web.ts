/**
 * `oncely/web`: makes an existing web-standard handler, `(request: Request) => Response`,
 * idempotent by wrapping it. One line on a Next.js App Router route handler; the same wrapper
 * serves a React Router / Remix action, a SvelteKit endpoint, `Bun.serve` and `Deno.serve`.
 *
 * ```ts
 * export const POST = withIdempotency(
 *   async (request, oncely) => Response.json({ id: `ord_${oncely?.key}`, ...(await request.json()) }, { status: 201 }),
 *   { store, clientId: (request) => request.headers.get('x-account-id') },
 * );
 * ```
 *
 * The handler gets the request object it was given (a Next.js `NextRequest` keeps its `nextUrl`
 * and `cookies`), the guard's context (`oncely`: caller, key, and `tx` with `transaction: true`),
 * then the framework's other arguments (`{ params }`, Bun's server, Deno's info) unchanged. Its
 * response is stored before it is sent; a replay gets the same status, headers and bytes with
 * `Idempotency-Replay: true`.
 *
 * The body is fingerprinted from a clone of the request (capped while it arrives), so the handler
 * still reads it from the original with `request.json()`: both branches of the clone carry the
 * same bytes, and the request stays the framework's own object. A fresh `Request` built from the
 * bytes would lose what a framework adds to its subclass.
 *
 * @module
 */
import { readCappedBody } from '../read-body.js';
import { MiddlewareOrderError } from '../errors/middleware-order-error.js';
import { createGuard, type GuardContext, type GuardOptions, type GuardedBody, type WireResponse } from './guard.js';
import { headersOf, toResponse } from './web-response.js';

export type { GuardContext, GuardOptions } from './guard.js';
export { InvalidOptionError } from '../errors/invalid-option-error.js';
export { LeaseExpiredError } from '../errors/lease-expired-error.js';
export { MiddlewareOrderError } from '../errors/middleware-order-error.js';
export { ResponseTooLargeError } from '../errors/response-too-large-error.js';

/**
 * The handler {@link withIdempotency} wraps: the framework's request, the guard's context, then the
 * framework's other arguments. `oncely` is `undefined` only for a request let through unguarded (a
 * method not in `methods`, or no key with `keyMissing: 'pass'`).
 */
export type GuardedHandler<R extends Request = Request, A extends unknown[] = []> = (
  request: R,
  oncely: GuardContext | undefined,
  ...rest: A
) => Response | Promise<Response>;

/** Options of the web-standard {@link withIdempotency}. */
export interface WebIdempotentOptions<R extends Request = Request> extends GuardOptions {
  /**
   * The caller whose keys these are, from the request (its session cookie, a verified token):
   * keys of two callers never meet. `null`/`undefined` answers `401`. Required: a hash of a bearer
   * token would change with every token refresh (and run the handler again), and requests without
   * one would share one key space.
   */
  readonly clientId: (request: R) => string | null | undefined | Promise<string | null | undefined>;
  /**
   * The route's name as the key is stored and traced (`oncely.endpoint`): a web handler knows no
   * route pattern, so give one for a dynamic route (`/api/orders/[id]`) to keep that name the same
   * for every id. Only a label: the fingerprint always covers the path as requested, with its query.
   * @default the request URL's path
   */
  readonly route?: string | undefined;
}

/** The body read (capped) from a clone; over the cap, the original's stream is cancelled too. */
async function bodyOf(request: Request, max: number): Promise<GuardedBody | 'too-large'> {
  if (request.body === null) return { none: true };
  if (request.bodyUsed) throw new MiddlewareOrderError('oncely/web: the request body was read before withIdempotency() saw it; wrap the handler that reads it');
  const read = await readCappedBody(request.clone(), max);
  if (!read.ok) {
    await request.body.cancel().catch(() => undefined);
    return 'too-large';
  }
  return read.bytes.byteLength === 0 ? { none: true } : { raw: read.bytes };
}

/**
 * Wraps a web-standard handler: the returned function takes the same arguments as the framework
 * passes (`(request, context)` in Next.js) and answers as PROTOCOL.md's response matrix says.
 *
 * @example
 * ```ts
 * import { withIdempotency } from 'oncely/web';
 * import { sqliteKeyStore } from 'oncely/server/sqlite';
 *
 * const store = sqliteKeyStore({ path: 'keys.db' });
 * await store.migrate();
 *
 * // Exported as `POST` from a Next.js route file (app/api/orders/route.ts).
 * const POST = withIdempotency(
 *   async (request, oncely) => {
 *     const { item } = (await request.json()) as { item: string };
 *     return Response.json({ id: `ord_${oncely?.key}`, item }, { status: 201 });
 *   },
 *   { store, clientId: (request) => request.headers.get('x-account-id') },
 * );
 * ```
 */
export function withIdempotency<R extends Request, A extends unknown[] = []>(
  // The handler comes first: its signature decides R and A (`NextRequest`, `{ params }`), and
  // clientId's parameter is typed from it (TypeScript infers left to right).
  handler: GuardedHandler<R, A>,
  options: WebIdempotentOptions<R>,
): (request: R, ...rest: A) => Promise<Response> {
  const guard = createGuard(options);
  return async (request, ...rest) => {
    if (!guard.guards(request.method)) return handler(request, undefined, ...rest);
    const url = new URL(request.url);
    const headers = request.headers;
    const decision = await guard.decide({
      clientId: (await options.clientId(request)) ?? null,
      keyHeader: headers.get('idempotency-key'),
      method: request.method,
      route: options.route ?? url.pathname,
      path: url.pathname + url.search,
      contentType: headers.get('content-type'),
      body: () => bodyOf(request, guard.maxBodyBytes),
      prefer: headers.get('prefer'),
    });
    if (decision.kind === 'pass') return handler(request, undefined, ...rest);
    if (decision.kind === 'answer') return toResponse(decision.response);
    const { execution } = decision;
    let handled: WireResponse;
    let cookies: string[];
    try {
      const response = await handler(request, execution.context, ...rest);
      cookies = response.headers.getSetCookie();
      handled = { status: response.status, headers: headersOf(response), body: new Uint8Array(await response.arrayBuffer()) };
    } catch (error) {
      await execution.abort(error);
      throw error;
    }
    const answer = await execution.complete(handled);
    const sent = toResponse(answer);
    // The handler's own answer keeps its cookies; the guard's answer instead has none.
    if (answer.body === handled.body) for (const cookie of cookies) sent.headers.append('set-cookie', cookie);
    return sent;
  };
}
