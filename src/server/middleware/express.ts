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
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { createGuard, type Execution, type GuardContext, type GuardOptions, type GuardedBody, type WireResponse } from './guard.js';
import { handlerHeaders, type HeaderValues } from './wire.js';

export type { GuardContext, GuardOptions } from './guard.js';
export { LeaseExpiredError } from '../errors/lease-expired-error.js';

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

const header = (req: IncomingMessage, name: string): string | null => {
  const value = req.headers[name];
  return value === undefined ? null : Array.isArray(value) ? value.join(', ') : value;
};

const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i;

/** The body as a parser left it, or read here (capped), leaving `req.body` as a parser would. */
function bodyOf(req: Request, maxBytes: number): GuardedBody | (() => Promise<GuardedBody | 'too-large'>) {
  const parsed = (req as { _body?: boolean })._body === true || req.readableEnded;
  if (parsed) return req.body === undefined ? { none: true } : { parsed: req.body };
  return async () => {
    const length = Number(req.headers['content-length'] ?? 0);
    if (length > maxBytes) return 'too-large';
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of req as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > maxBytes) return 'too-large';
      chunks.push(chunk);
    }
    const bytes = Buffer.concat(chunks);
    // Later body parsers skip a request whose body was read (body-parser's own flag).
    (req as { _body?: boolean })._body = true;
    if (size === 0) return { none: true };
    const contentType = req.headers['content-type'] ?? '';
    req.body = bytes;
    if (JSON_TYPE.test(contentType)) {
      try {
        req.body = JSON.parse(bytes.toString('utf8'));
      } catch {
        // Left as bytes: the handler sees what was sent.
      }
    }
    return { raw: bytes };
  };
}

/** Makes `headers` the response's headers, and `status` its status. */
function reset(res: ServerResponse, status: number, headers: HeaderValues): void {
  for (const name of res.getHeaderNames()) res.removeHeader(name);
  res.statusCode = status;
  for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
}

/**
 * Puts back the status and headers the handler ended with (`held`, a copy from `getHeaders()`),
 * touching only what changed since (an error handler after a throw): one pass, and usually no
 * `setHeader` at all, where {@link reset} removes and sets every header again.
 */
function restore(res: ServerResponse, status: number, held: HeaderValues): void {
  res.statusCode = status;
  const now = res.getHeaders() as HeaderValues;
  for (const name in now) if (!(name in held)) res.removeHeader(name);
  for (const name in held) if (now[name] !== held[name]) res.setHeader(name, held[name]!);
}

/** Sends a guard's answer over the headers earlier middleware set (`before`). */
function send(res: ServerResponse, wire: WireResponse, before: HeaderValues): void {
  reset(res, wire.status, { ...before, ...wire.headers });
  const body = wire.status === 204 || wire.status === 304 ? '' : (wire.body ?? '');
  if (wire.status !== 204 && wire.status !== 304) res.setHeader('content-length', typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength);
  res.end(body);
}

/**
 * Readies `target` (Express's `req` or `res`) for the properties the guard adds to it by deleting
 * and setting back `name`, one of its own data properties: its value and attributes stay, only
 * its place in the key order changes. Why: Express gives every `req` and `res` a prototype of
 * their own (`setPrototypeOf` in its init), after which V8 builds a new hidden class for each
 * property added to the object (a few µs each), and every property access in Node's HTTP code and
 * Express afterwards misses V8's inline caches for that new class. A delete turns the object into
 * a dictionary-mode one, once (about 1 µs): its added properties are hash inserts, and its shape is
 * one that the caches already know. Measured with `bench/express-middleware-cpu.ts`: the guard's
 * CPU per request over the unguarded route went from about 37 µs to about 7 µs.
 */
function readyForOwnProperties<T extends object>(target: T, name: keyof T & string): void {
  const value = target[name];
  delete target[name];
  target[name] = value;
}

type Chunk = string | Uint8Array;
type Callback = (error?: Error | null) => void;

/** A written chunk as bytes, without copying one that already is (as Node's own `write` keeps it). */
const bytesOf = (chunk: Chunk, encoding: BufferEncoding | undefined): Buffer =>
  typeof chunk === 'string'
    ? Buffer.from(chunk, encoding ?? 'utf8')
    : Buffer.isBuffer(chunk)
      ? chunk
      : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);

/**
 * Holds back what the handler writes; when it ends the response, hands it to the guard and sends
 * what the guard answers: exactly what the handler ended with once stored, or the guard's answer
 * instead. Whatever touches the response after its first `end` (a second `end`, an error handler
 * after a throw) changes nothing: the stored answer is the one sent.
 */
function capture(res: ServerResponse, execution: Execution, before: HeaderValues, onFailure: (error: unknown) => void): void {
  const { writeHead, write, end } = res;
  readyForOwnProperties(res, 'sendDate');
  const chunks: Buffer[] = [];
  let ended = false;
  const keep = (chunk: Chunk | undefined, encoding?: BufferEncoding): void => {
    if (ended || chunk === undefined || chunk === null) return;
    chunks.push(bytesOf(chunk, encoding));
  };
  const later = (callback: Callback | undefined): void => {
    if (callback) queueMicrotask(() => callback());
  };
  res.writeHead = function (this: ServerResponse, status: number, ...rest: unknown[]) {
    if (ended) return res;
    res.statusCode = status;
    const headers = rest.find((item) => typeof item === 'object' && item !== null) as Record<string, string | string[]> | string[] | undefined;
    if (Array.isArray(headers)) for (let at = 0; at + 1 < headers.length; at += 2) res.setHeader(headers[at]!, headers[at + 1]!);
    else if (headers) for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
    return res;
  } as ServerResponse['writeHead'];
  res.write = function (chunk: Chunk, encoding?: BufferEncoding | Callback, callback?: Callback) {
    keep(chunk, typeof encoding === 'string' ? encoding : undefined);
    later(typeof encoding === 'function' ? encoding : callback);
    return true;
  } as ServerResponse['write'];
  res.end = function (chunk?: Chunk | Callback, encoding?: BufferEncoding | Callback, callback?: Callback) {
    const done = typeof chunk === 'function' ? chunk : typeof encoding === 'function' ? encoding : callback;
    if (ended) {
      later(done);
      return res;
    }
    if (typeof chunk !== 'function') keep(chunk, typeof encoding === 'string' ? encoding : undefined);
    ended = true;
    // `res.json`/`res.send` end with one Buffer and no write before: that Buffer is the body.
    const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
    const status = res.statusCode;
    const headers = res.getHeaders() as HeaderValues;
    const handled: WireResponse = { status, headers: handlerHeaders(headers, before), body };
    execution
      .complete(handled)
      .then((answer) => {
        if (res.headersSent) return; // the socket went away meanwhile: nothing left to send to
        if (answer.status === status && answer.body === body) {
          // Sent as the handler ended it. `write` and `end` stay held (a later call changes
          // nothing); Node's `end` sends the head through `writeHead`, so that one goes back.
          restore(res, status, headers);
          res.setHeader('idempotency-key', execution.context.key);
          res.writeHead = writeHead;
          (end as (this: ServerResponse, chunk: Buffer, callback?: Callback) => ServerResponse).call(res, body, done);
        } else {
          Object.assign(res, { writeHead, write, end });
          send(res, answer, before);
        }
      })
      .catch(onFailure);
    return res;
  } as ServerResponse['end'];
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
