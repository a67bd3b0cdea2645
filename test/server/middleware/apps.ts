/**
 * The same small order API written as a user would in Express, Hono, Fastify and as a web-standard
 * handler (`oncely/web`, as a Next.js route handler is written), each route's handler unchanged plus
 * one `idempotent()`: the matrix test drives all four through one harness.
 *
 * Routes (under the mount prefix `/v1`):
 * - `POST /v1/orders/:id`: the handler under test; its status, delay and writes come from `script`.
 * - `GET /v1/orders/:id`: not guarded (GETs pass through even where the middleware is mounted for the whole router).
 */
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import express from 'express';
import Fastify from 'fastify';
import { Hono } from 'hono';
import { idempotent as expressIdempotent } from '../../../src/server/middleware/express.js';
import { idempotent as fastifyIdempotent } from '../../../src/server/middleware/fastify.js';
import type { GuardContext, GuardOptions } from '../../../src/server/middleware/guard.js';
import { idempotent as honoIdempotent } from '../../../src/server/middleware/hono.js';
import { withIdempotency } from '../../../src/server/middleware/web.js';

export type Framework = 'express' | 'hono' | 'fastify' | 'web';
export const FRAMEWORKS: readonly Framework[] = ['express', 'hono', 'fastify', 'web'];

/** What the handler does; the test changes it between requests. */
export interface Script {
  status: number;
  delayMs: number;
  /** Executions of the handler, in order: the parsed body and the guard's context. */
  readonly runs: Array<{ readonly body: unknown; readonly oncely: GuardContext | undefined }>;
  /** Written through `tx` when the guard gives one (`transaction: true`). */
  insert: boolean;
}

export interface AppOptions extends Omit<GuardOptions, 'store'> {
  readonly store: GuardOptions['store'];
  /** Caller from the `x-user` header (as an auth layer would set it); default: one caller, `acme`. */
  readonly userHeader?: boolean;
  /** Express only: mount `express.json()` before the middleware (as nearly every app does). */
  readonly bodyParser?: boolean;
}

export interface RunningApp {
  readonly url: string;
  readonly script: Script;
  close(): Promise<void>;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** The handler's logic, framework-free: returns the status and JSON body to answer with. */
async function order(script: Script, id: string, body: unknown, oncely: GuardContext | undefined): Promise<[number, unknown]> {
  script.runs.push({ body, oncely });
  if (script.insert && oncely?.tx) await oncely.tx.run('INSERT INTO orders (id, item) VALUES ($1, $2)', [`${id}:${oncely.key}`, JSON.stringify(body)]);
  if (script.delayMs > 0) await sleep(script.delayMs);
  return [script.status, { id, body, run: script.runs.length }];
}

export const ORDERS_SCHEMA = {
  sqlite: 'CREATE TABLE IF NOT EXISTS orders (id TEXT PRIMARY KEY, item TEXT NOT NULL)',
  postgres: 'CREATE TABLE IF NOT EXISTS orders (id TEXT PRIMARY KEY, item TEXT NOT NULL)',
};

const user = (value: string | string[] | undefined): string | null => (typeof value === 'string' ? value : null);

async function expressApp(options: AppOptions, script: Script): Promise<RunningApp> {
  const app = express();
  if (options.bodyParser !== false) app.use(express.json());
  const router = express.Router();
  const guard = expressIdempotent({ ...options, clientId: options.userHeader ? (req: express.Request) => user(req.headers['x-user']) : () => 'acme' });
  router.use(guard);
  router.post('/orders/:id', async (req, res) => {
    const [status, body] = await order(script, req.params.id!, req.body, req.oncely);
    res.status(status).location(`/v1/orders/${req.params.id}`).cookie('session', 'abc').json(body);
  });
  router.get('/orders/:id', (req, res) => {
    res.json({ id: req.params.id, guarded: req.oncely !== undefined });
  });
  app.use('/v1', router);
  const server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, script, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

async function honoApp(options: AppOptions, script: Script): Promise<RunningApp> {
  const v1 = new Hono<{ Variables: { oncely: GuardContext } }>();
  const guard = honoIdempotent({ ...options, clientId: options.userHeader ? (c) => c.req.header('x-user') ?? null : () => 'acme' });
  v1.use('*', guard);
  v1.post('/orders/:id', async (c) => {
    const [status, body] = await order(script, c.req.param('id'), await c.req.json(), c.get('oncely'));
    c.header('location', `/v1/orders/${c.req.param('id')}`);
    c.header('set-cookie', 'session=abc; Path=/');
    return c.json(body, status as 201);
  });
  v1.get('/orders/:id', (c) => c.json({ id: c.req.param('id'), guarded: c.get('oncely') !== undefined }));
  const app = new Hono().route('/v1', v1);
  const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' });
  await new Promise((resolve) => server.once('listening', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, script, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

async function fastifyApp(options: AppOptions, script: Script): Promise<RunningApp> {
  const app = Fastify();
  const guard = fastifyIdempotent({ ...options, clientId: options.userHeader ? (request) => user(request.headers['x-user']) : () => 'acme' });
  await app.register(
    async (v1) => {
      v1.post<{ Params: { id: string } }>('/orders/:id', guard, async (request, reply) => {
        const [status, body] = await order(script, request.params.id, request.body, request.oncely);
        return reply.code(status).header('location', `/v1/orders/${request.params.id}`).header('set-cookie', 'session=abc; Path=/').send(body);
      });
      v1.get<{ Params: { id: string } }>('/orders/:id', guard, async (request) => ({ id: request.params.id, guarded: request.oncely !== undefined }));
    },
    { prefix: '/v1' },
  );
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, script, close: () => app.close() };
}

/**
 * The web-standard handler wrapped as a Next.js route file would (`(request, { params })`), served
 * by @hono/node-server with a path match standing in for the framework's router.
 */
async function webApp(options: AppOptions, script: Script): Promise<RunningApp> {
  const clientId = options.userHeader ? (request: Request) => request.headers.get('x-user') : () => 'acme';
  const route = withIdempotency(
    async (request, oncely, { params }: { params: { id: string } }) => {
      if (request.method === 'GET') return Response.json({ id: params.id, guarded: oncely !== undefined });
      const [status, body] = await order(script, params.id, await request.json(), oncely);
      const headers = { location: `/v1/orders/${params.id}`, 'set-cookie': 'session=abc; Path=/' };
      return Response.json(body, { status, headers });
    },
    { ...options, clientId, route: '/v1/orders/[id]' },
  );
  const fetch = (request: Request): Promise<Response> | Response => {
    const id = /^\/v1\/orders\/([^/]+)$/.exec(new URL(request.url).pathname)?.[1];
    return id === undefined ? new Response('not found', { status: 404 }) : route(request, { params: { id } });
  };
  const server = serve({ fetch, port: 0, hostname: '127.0.0.1' });
  await new Promise((resolve) => server.once('listening', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, script, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

/** Starts `framework`'s app over `options.store`. */
export function startApp(framework: Framework, options: AppOptions): Promise<RunningApp> {
  const script: Script = { status: 201, delayMs: 0, runs: [], insert: false };
  if (framework === 'express') return expressApp(options, script);
  if (framework === 'hono') return honoApp(options, script);
  if (framework === 'web') return webApp(options, script);
  return fastifyApp(options, script);
}
