/**
 * A Nest request as the guard wants it, on either HTTP platform: `@nestjs/platform-express` hands
 * an interceptor Express's `req` and `res`; `@nestjs/platform-fastify` Fastify's `request` and
 * `reply`, each with the Node object under `.raw`. Both end in a Node `ServerResponse`, which is
 * where the response is held (`node-response.ts`). Nothing here imports Nest or a platform.
 *
 * @module
 * @internal
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { bodyOf, header, type BodiedRequest } from './node-request.js';
import type { GuardedBody, GuardedRequest } from './types.js';
import type { HeaderValues } from './wire.js';

/** What the guard needs of a Nest request: its parts, the Node response, the headers set so far. */
export interface NestEdge {
  readonly request: Omit<GuardedRequest, 'clientId'>;
  /** The Node response every answer ends in. */
  readonly raw: ServerResponse;
  /** The headers earlier middleware and hooks set (CORS, a request id): each answer's own, never stored. */
  readonly before: HeaderValues;
}

/** Express's request as Nest hands it over (the parts read here). */
type ExpressLike = BodiedRequest & {
  readonly baseUrl: string;
  readonly originalUrl: string;
  readonly route?: { readonly path?: unknown };
  readonly path: string;
};

/** Fastify's request and reply as Nest hands them over (the parts read here). */
interface FastifyLike {
  readonly raw: IncomingMessage;
  readonly url: string;
  readonly body?: unknown;
  readonly routeOptions?: { readonly url?: string };
}
interface FastifyReplyLike {
  readonly raw: ServerResponse;
  getHeaders(): Record<string, number | string | string[] | undefined>;
}

/** Nest's `rawBody: true` keeps the bytes as received: the fingerprint then hashes them, as PROTOCOL.md says. */
const rawBodyOf = (request: object): Uint8Array | undefined => {
  const raw = (request as { rawBody?: unknown }).rawBody;
  return raw instanceof Uint8Array && raw.byteLength > 0 ? raw : undefined;
};

const isFastify = (request: object): request is FastifyLike => 'raw' in request && typeof (request as { raw?: unknown }).raw === 'object';

function fastifyEdge(request: FastifyLike, reply: FastifyReplyLike): NestEdge {
  const raw = rawBodyOf(request);
  const body: GuardedBody = raw !== undefined ? { raw } : request.body === undefined || request.body === null ? { none: true } : { parsed: request.body };
  const before: HeaderValues = {};
  for (const [name, value] of Object.entries(reply.getHeaders())) if (value !== undefined) before[name.toLowerCase()] = value;
  return {
    request: {
      keyHeader: header(request.raw, 'idempotency-key'),
      method: request.raw.method ?? 'GET',
      route: request.routeOptions?.url ?? request.url.split('?')[0]!,
      path: request.url,
      contentType: header(request.raw, 'content-type'),
      body,
      prefer: header(request.raw, 'prefer'),
    },
    raw: reply.raw,
    before,
  };
}

function expressEdge(req: ExpressLike, res: ServerResponse, maxBodyBytes: number): NestEdge {
  const raw = rawBodyOf(req);
  return {
    request: {
      keyHeader: header(req, 'idempotency-key'),
      method: req.method ?? 'GET',
      route: req.baseUrl + (req.route?.path === undefined ? req.path : String(req.route.path)),
      path: req.originalUrl,
      contentType: header(req, 'content-type'),
      body: raw !== undefined ? { raw } : bodyOf(req, maxBodyBytes),
      prefer: header(req, 'prefer'),
    },
    raw: res,
    before: res.getHeaders() as HeaderValues, // a copy
  };
}

/**
 * The guard's view of a Nest HTTP request, from what `switchToHttp()` gives on either platform.
 *
 * @example
 * ```ts
 * const http = context.switchToHttp();
 * const edge = nestEdge(http.getRequest(), http.getResponse(), guard.maxBodyBytes);
 * ```
 */
export function nestEdge(request: object, response: object, maxBodyBytes: number): NestEdge {
  if (isFastify(request)) return fastifyEdge(request, response as FastifyReplyLike);
  return expressEdge(request as ExpressLike, response as ServerResponse, maxBodyBytes);
}
