/**
 * `oncely/hono`: makes an existing Hono route idempotent with one middleware. Runtime-neutral
 * (web `Request`/`Response` only), like Hono itself.
 *
 * ```ts
 * app.post('/orders', idempotent({ store, clientId: (c) => c.get('user').id }), (c) => c.json(order, 201));
 * ```
 *
 * The handler runs unchanged; its response is stored before it is sent, and a replay gets the
 * same status, headers and bytes with `Idempotency-Replay: true`. The middleware reads the body
 * through Hono's request, which keeps it: the handler's `c.req.json()` still works, and a body a
 * validator before it read is taken from Hono's cache.
 *
 * @module
 */
import type { Context, Env, HonoRequest, MiddlewareHandler } from 'hono';
import { readCappedBody } from '../read-body.js';
import { createGuard, type GuardContext, type GuardOptions, type GuardedBody, type WireResponse } from './guard.js';
import { MiddlewareOrderError } from '../errors/middleware-order-error.js';
import { headersOf, toResponse } from './web-response.js';

export type { GuardContext, GuardOptions } from './guard.js';
export { InvalidOptionError } from '../errors/invalid-option-error.js';
export { LeaseExpiredError } from '../errors/lease-expired-error.js';
export { MiddlewareOrderError } from '../errors/middleware-order-error.js';
export { ResponseTooLargeError } from '../errors/response-too-large-error.js';

/** The variable the middleware sets: `c.get('oncely')`. */
export interface OncelyVariables {
  oncely: GuardContext;
}

/** Options of the Hono {@link idempotent}. */
export interface HonoIdempotentOptions<E extends Env = Env> extends GuardOptions {
  /**
   * The caller whose keys these are (`(c) => c.get('user').id`): keys of two callers never meet.
   * `null`/`undefined` answers `401`. Required: a hash of a bearer token would change with every
   * token refresh (and run the handler again), and requests without one would share one key space.
   * Its `c` is untyped unless the app's environment is given: `idempotent<AppEnv>({ … })`.
   */
  readonly clientId: (c: Context<E>) => string | null | undefined | Promise<string | null | undefined>;
}

/**
 * The body a middleware before this one read through Hono (`c.req.json()`, a validator): the
 * exact bytes when Hono kept them (read as text or bytes), else the parsed JSON (fingerprinted as
 * its canonical JSON, as the raw text would be). A form Hono parsed cannot give its bytes back.
 */
async function cachedBody(req: HonoRequest, max: number): Promise<GuardedBody | 'too-large'> {
  const cache = req.bodyCache;
  if (cache.arrayBuffer === undefined && cache.text === undefined && cache.blob === undefined) {
    if (cache.json === undefined) {
      throw new MiddlewareOrderError('oncely/hono: a middleware before idempotent() parsed the body as a form; mount idempotent() before it');
    }
    // Read by the parser before, under its own limit (as with a body parser before oncely/express).
    return { parsed: (await cache.json) as unknown };
  }
  const bytes = new Uint8Array(await req.arrayBuffer());
  if (bytes.byteLength > max) return 'too-large';
  return bytes.byteLength === 0 ? { none: true } : { raw: bytes };
}

/**
 * The Hono middleware: put it in front of a route's existing handler.
 *
 * @example
 * ```ts
 * import { Hono } from 'hono';
 * import { idempotent } from 'oncely/hono';
 * import { sqliteKeyStore } from 'oncely/server/sqlite';
 *
 * const store = sqliteKeyStore({ path: 'keys.db' });
 * await store.migrate();
 * const app = new Hono();
 * app.post('/orders', idempotent({ store, clientId: (c) => c.req.header('x-account-id') ?? null }), async (c) => c.json({ id: 'ord_1', ...(await c.req.json()) }, 201));
 * ```
 */
export function idempotent<E extends Env = any>(options: HonoIdempotentOptions<E>): MiddlewareHandler<{ Variables: OncelyVariables }> {
  const guard = createGuard(options);
  const max = guard.maxBodyBytes;
  return async (c, next) => {
    if (!guard.guards(c.req.method)) return next();
    const context = c as unknown as Context<E>;
    const clientId = (await options.clientId(context)) ?? null;
    const url = new URL(c.req.url);
    const body = async (): Promise<GuardedBody | 'too-large'> => {
      // A middleware before this one (a validator) read the body through Hono: it is in the cache.
      if (Object.keys(c.req.bodyCache).length > 0) return cachedBody(c.req, max);
      // Capped while it arrives (a chunked body too), then left in Hono's body cache, from which
      // the handler's own c.req.json()/text() read it.
      const read = await readCappedBody(c.req.raw, max);
      if (!read.ok) return 'too-large';
      const bytes = read.bytes;
      (c.req.bodyCache as Record<string, Promise<unknown>>)['arrayBuffer'] = Promise.resolve(
        bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer,
      );
      return bytes.byteLength === 0 ? { none: true } : { raw: bytes };
    };
    const decision = await guard.decide({
      clientId,
      keyHeader: c.req.header('idempotency-key') ?? null,
      method: c.req.method,
      route: c.req.routePath,
      path: url.pathname + url.search,
      contentType: c.req.header('content-type') ?? null,
      body,
      prefer: c.req.header('prefer') ?? null,
    });
    if (decision.kind === 'pass') return next();
    if (decision.kind === 'answer') return toResponse(decision.response);
    const { execution } = decision;
    c.set('oncely', execution.context);
    let handled: WireResponse;
    try {
      await next();
      const response = c.res;
      handled = { status: response.status, headers: headersOf(response), body: new Uint8Array(await response.arrayBuffer()) };
    } catch (error) {
      await execution.abort(error);
      throw error;
    }
    const cookies = c.res.headers.getSetCookie();
    const answer = await execution.complete(handled);
    const sent = toResponse(answer);
    // The handler's own answer keeps its cookies; the guard's answer instead has none.
    if (answer.body === handled.body) for (const cookie of cookies) sent.headers.append('set-cookie', cookie);
    // Cleared first: Hono would otherwise copy the handler's headers into the new response.
    c.res = undefined;
    c.res = sent;
  };
}
