/**
 * One small order API written in Express, Hono and Fastify, guarded by oncely's middleware, for
 * `oncely conform` to check: `POST /v1/orders` creates an order with an id of its own (so a
 * second execution is a second resource), takes 300 ms for a body with `"slow": true`, answers
 * 503 to a request with an `x-fault` header, and knows its caller from `x-user`.
 */
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import express from 'express';
import Fastify from 'fastify';
import { Hono } from 'hono';
import { idempotent as expressIdempotent } from '../../../src/server/middleware/express.js';
import { idempotent as fastifyIdempotent } from '../../../src/server/middleware/fastify.js';
import { idempotent as honoIdempotent } from '../../../src/server/middleware/hono.js';
import type { KeyStore } from '../../../src/server/store/types.js';

export type Framework = 'express' | 'hono' | 'fastify';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** The handler, framework-free: the status, the body and the order's path. */
async function createOrder(body: unknown, fault: boolean, next: () => number): Promise<{ status: number; body: object; location?: string }> {
  if ((body as { slow?: unknown } | null)?.slow === true) await sleep(300);
  if (fault) return { status: 503, body: { error: 'warehouse unavailable' } };
  const id = `ord_${next()}`;
  return { status: 201, body: { id, order: body }, location: `/v1/orders/${id}` };
}

/** Starts `framework`'s app on 127.0.0.1 over `store`; `url` is the endpoint to check. */
export async function startOrderApp(framework: Framework, store: KeyStore): Promise<{ url: string; close(): Promise<void> }> {
  let orders = 0;
  const next = (): number => (orders += 1);
  if (framework === 'express') {
    const app = express();
    app.use(express.json());
    app.post('/v1/orders', expressIdempotent({ store, clientId: (req) => req.get('x-user') ?? null }), async (req, res) => {
      const order = await createOrder(req.body, req.get('x-fault') !== undefined, next);
      if (order.location) res.location(order.location);
      res.status(order.status).json(order.body);
    });
    const server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    const { port } = server.address() as AddressInfo;
    return { url: `http://127.0.0.1:${port}/v1/orders`, close: () => new Promise((resolve) => server.close(() => resolve())) };
  }
  if (framework === 'hono') {
    const app = new Hono();
    app.post('/v1/orders', honoIdempotent({ store, clientId: (c) => c.req.header('x-user') ?? null }), async (c) => {
      const order = await createOrder(await c.req.json(), c.req.header('x-fault') !== undefined, next);
      if (order.location) c.header('location', order.location);
      return c.json(order.body, order.status as 201);
    });
    const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' });
    await new Promise((resolve) => server.once('listening', resolve));
    const { port } = server.address() as AddressInfo;
    return { url: `http://127.0.0.1:${port}/v1/orders`, close: () => new Promise((resolve) => server.close(() => resolve())) };
  }
  const app = Fastify();
  const guard = fastifyIdempotent({ store, clientId: (request) => (typeof request.headers['x-user'] === 'string' ? request.headers['x-user'] : null) });
  app.post('/v1/orders', guard, async (request, reply) => {
    const order = await createOrder(request.body, request.headers['x-fault'] !== undefined, next);
    if (order.location) void reply.header('location', order.location);
    return reply.code(order.status).send(order.body);
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/v1/orders`, close: () => app.close() };
}
