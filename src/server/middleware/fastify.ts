/**
 * `oncely/fastify`: makes an existing Fastify route idempotent with its route options.
 *
 * ```ts
 * app.post('/orders', idempotent({ store, clientId: (request) => request.user.id }), createOrder);
 * app.post('/refunds', idempotent({ store, clientId }, { schema, preHandler: audit }), createRefund); // with route options
 * ```
 *
 * `idempotent()` returns route options with a `preHandler` (admission: a replay, `409`, `422` and
 * the other answers are sent from there, and the handler does not run) and an `onSend` (the
 * handler's serialized reply is stored before it is sent); pass the route's own options as the
 * second argument, and its hooks are kept beside the guard's (spreading would replace them). Fastify has parsed the body by then; a JSON body
 * is fingerprinted as its canonical JSON, exactly as PROTOCOL.md's fingerprint of the raw text.
 *
 * @module
 */
import type { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest, RouteShorthandOptions, onSendHookHandler, preHandlerAsyncHookHandler } from 'fastify';
import { createGuard, type Execution, type GuardContext, type GuardOptions, type WireResponse } from './guard.js';
import { handlerHeaders, type HeaderValues } from './wire.js';

export type { GuardContext, GuardOptions } from './guard.js';
export { InvalidOptionError } from '../errors/invalid-option-error.js';
export { LeaseExpiredError } from '../errors/lease-expired-error.js';
export { ResponseTooLargeError } from '../errors/response-too-large-error.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by `oncely/fastify` on a guarded request: the caller, the key, and the transaction (`transaction: true`). */
    oncely?: GuardContext;
  }
}

/** Options of the Fastify {@link idempotent}. */
export interface FastifyIdempotentOptions extends GuardOptions {
  /**
   * The caller whose keys these are (`(request) => request.user.id`): keys of two callers never
   * meet. `null`/`undefined` answers `401`. Default: one caller per `Authorization` header value
   * (a hash of it); with cookie sessions, pass the session's user.
   */
  readonly clientId: (request: FastifyRequest) => string | null | undefined | Promise<string | null | undefined>;
}

/** The route options {@link idempotent} returns: the route's own, with the guard's hooks added. */
export type IdempotentRouteOptions<R extends RouteShorthandOptions = RouteShorthandOptions> = R & {
  readonly preHandler: preHandlerAsyncHookHandler[];
  readonly onSend: onSendHookHandler[];
};

const list = <T>(hooks: T | readonly T[] | undefined): T[] => (hooks === undefined ? [] : Array.isArray(hooks) ? [...(hooks as T[])] : [hooks as T]);

const header = (request: FastifyRequest, name: string): string | null => {
  const value = request.headers[name];
  return value === undefined ? null : Array.isArray(value) ? value.join(', ') : value;
};

/** The reply's headers now, lower-case names (a repeated header stays an array). */
function headersOf(reply: FastifyReply): HeaderValues {
  const headers: HeaderValues = {};
  for (const [name, value] of Object.entries(reply.getHeaders())) if (value !== undefined) headers[name.toLowerCase()] = value;
  return headers;
}

const isStream = (payload: unknown): payload is Readable =>
  payload !== null && typeof payload === 'object' && typeof (payload as { pipe?: unknown }).pipe === 'function';

async function collect(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer));
  return Buffer.concat(chunks);
}

/**
 * The route options that guard a Fastify route.
 *
 * @example
 * ```ts
 * import Fastify from 'fastify';
 * import { idempotent } from 'oncely/fastify';
 * import { sqliteKeyStore } from 'oncely/server/sqlite';
 *
 * const store = sqliteKeyStore({ path: 'keys.db' });
 * await store.migrate();
 * const app = Fastify();
 * app.post('/orders', idempotent({ store, clientId: (request) => String(request.headers['x-account-id'] ?? '') || null }), async (request, reply) => reply.code(201).send({ id: 'ord_1' }));
 * ```
 */
export function idempotent<R extends RouteShorthandOptions = RouteShorthandOptions>(options: FastifyIdempotentOptions, route?: R): IdempotentRouteOptions<R> {
  const guard = createGuard(options);
  /** The admitted requests: each one's execution, and the headers earlier hooks had set on its reply. */
  const running = new WeakMap<FastifyRequest, { readonly execution: Execution; readonly before: HeaderValues }>();

  const preHandler: preHandlerAsyncHookHandler = async function (request, reply) {
    if (!guard.guards(request.method)) return;
    const clientId = (await options.clientId(request)) ?? null;
    const decision = await guard.decide({
      clientId,
      keyHeader: header(request, 'idempotency-key'),
      method: request.method,
      route: request.routeOptions.url ?? request.url.split('?')[0]!,
      path: request.url,
      contentType: header(request, 'content-type'),
      body: request.body === undefined || request.body === null ? { none: true } : { parsed: request.body },
      prefer: header(request, 'prefer'),
    });
    if (decision.kind === 'pass') return;
    if (decision.kind === 'answer') {
      const { status, headers, body } = decision.response;
      return reply.code(status).headers(headers).send(asSent(body, headers));
    }
    running.set(request, { execution: decision.execution, before: headersOf(reply) });
    request.oncely = decision.execution.context;
  };

  const onSend: onSendHookHandler = async function (request, reply, payload) {
    const admitted = running.get(request);
    if (admitted === undefined) return payload;
    running.delete(request);
    const { execution, before } = admitted;
    const body = isStream(payload) ? await collect(payload) : (payload as string | Buffer | null | undefined);
    const handled: WireResponse = { status: reply.statusCode, headers: handlerHeaders(headersOf(reply), before), body: body ?? null };
    const answer = await execution.complete(handled);
    if (answer.status === handled.status && answer.body === handled.body) {
      reply.header('idempotency-key', execution.context.key);
      return body;
    }
    // The guard's answer instead, over the headers earlier hooks set for this request.
    for (const name of Object.keys(reply.getHeaders())) reply.removeHeader(name);
    reply.code(answer.status).headers({ ...before, ...answer.headers });
    return answer.body;
  };

  // The route's own hooks are kept: its preHandlers run after admission (a replay never reaches
  // them), its onSend hooks after the guard's: they run on every answer, the handler's first one
  // and each replay alike, so what is stored is the handler's own reply.
  return {
    ...(route as R),
    preHandler: [preHandler, ...list(route?.preHandler as preHandlerAsyncHookHandler | preHandlerAsyncHookHandler[] | undefined)],
    onSend: [onSend, ...list(route?.onSend as onSendHookHandler | onSendHookHandler[] | undefined)],
  };
}

/**
 * A stored body as Fastify must be given it to send the stored headers unchanged: Fastify adds
 * `; charset=utf-8` to a JSON content type without one when the payload is a string, so such a
 * response was sent as bytes (a string would have gained the charset before it was stored), and is
 * replayed as bytes. An empty body with no content type (a 303, a 204) is sent as none, as Fastify
 * sent it: an empty string would gain `text/plain`.
 */
function asSent(body: string | Uint8Array | null, headers: Readonly<Record<string, string>>): string | Buffer | null | undefined {
  if ((body === null || body.length === 0) && headers['content-type'] === undefined) return undefined;
  if (typeof body !== 'string') return body === null ? null : Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  const type = (headers['content-type'] ?? '').toLowerCase();
  return type.includes('json') && !type.includes('charset') ? Buffer.from(body, 'utf8') : body;
}
