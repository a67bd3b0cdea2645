/**
 * `oncely/express`: makes an existing Express route idempotent with one middleware.
 *
 * ```ts
 * app.use(express.json());
 * app.post('/orders', idempotent({ store, clientId: (req) => req.user.id }), createOrder);
 * ```
 *
 * The handler runs unchanged. Its response is held until it is stored (`res.json`, `res.send`,
 * `res.end`, streamed writes: all of it), then sent; a replay gets the same status, headers and
 * bytes with `Idempotency-Replay: true`. A body parser mounted before the middleware is fine
 * (the fingerprint is canonical JSON either way); with none, the middleware reads the body itself
 * and sets `req.body` as `express.json()` would (JSON) or as `express.raw()` would (anything else).
 *
 * @module
 */
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { createGuard, type GuardContext, type GuardOptions } from './guard.js';
import { bodyOf, header } from './node-request.js';
import { capture, readyForOwnProperties, send } from './node-response.js';
import type { HeaderValues } from './wire.js';

export type { GuardContext, GuardOptions } from './guard.js';
export { InvalidOptionError } from '../errors/invalid-option-error.js';
export { LeaseExpiredError } from '../errors/lease-expired-error.js';
export { ResponseTooLargeError } from '../errors/response-too-large-error.js';

// The global namespace every Express `Request` extends (as passport's `req.user`): it needs no
// module resolution from this package to @types/express-serve-static-core.
declare global {
  namespace Express {
    interface Request {
      /** Set by `oncely/express` on a guarded request: the caller, the key, and the transaction (`transaction: true`). */
      oncely?: GuardContext;
    }
  }
}

/** Options of the Express {@link idempotent}. */
export interface ExpressIdempotentOptions extends GuardOptions {
  /**
   * The caller whose keys these are (`(req) => req.user.id`): keys of two callers never meet.
   * `null`/`undefined` answers `401`. Required: a hash of a bearer token would change with every
   * token refresh (and run the handler again), and requests without one would share one key space.
   */
  readonly clientId: (req: Request) => string | null | undefined | Promise<string | null | undefined>;
}

/**
 * The Express middleware: put it in front of a route's existing handler.
 *
 * @example
 * ```ts
 * import express from 'express';
 * import { idempotent } from 'oncely/express';
 * import { sqliteKeyStore } from 'oncely/server/sqlite';
 *
 * const store = sqliteKeyStore({ path: 'keys.db' });
 * await store.migrate();
 * const app = express();
 * app.use(express.json());
 * app.post('/orders', idempotent({ store, clientId: (req) => req.get('x-account-id') ?? null }), (req, res) => {
 *   res.status(201).json({ id: 'ord_1', item: req.body.item });
 * });
 * ```
 */
export function idempotent(options: ExpressIdempotentOptions): RequestHandler {
  const guard = createGuard(options);
  async function guarded(req: Request, res: Response, next: NextFunction): Promise<void> {
    if (!guard.guards(req.method)) return next();
    const before = res.getHeaders() as HeaderValues; // a copy
    const clientId = (await options.clientId(req)) ?? null;
    const route = req.route as { path?: unknown } | undefined;
    const decision = await guard.decide({
      clientId,
      keyHeader: header(req, 'idempotency-key'),
      method: req.method,
      route: req.baseUrl + (route?.path === undefined ? req.path : String(route.path)),
      path: req.originalUrl,
      contentType: header(req, 'content-type'),
      body: bodyOf(req, guard.maxBodyBytes),
      prefer: header(req, 'prefer'),
    });
    if (decision.kind === 'pass') return next();
    if (decision.kind === 'answer') return send(res, decision.response, before);
    readyForOwnProperties(req, 'complete');
    req.oncely = decision.execution.context;
    capture(res, decision.execution, before, next);
    next();
  }
  return (req, res, next) => {
    guarded(req, res, next).catch(next);
  };
}
