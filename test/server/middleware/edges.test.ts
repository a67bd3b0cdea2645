/**
 * The middleware where a user's app does something awkward: a transaction handler that never
 * answers, a response the store cannot keep, a chunked body over the cap, a Fastify route with
 * hooks of its own or a Buffer reply.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { serve } from '@hono/node-server';
import express from 'express';
import Fastify from 'fastify';
import { Hono } from 'hono';
import { validator } from 'hono/validator';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { idempotent as expressIdempotent } from '../../../src/server/middleware/express.js';
import { idempotent as fastifyIdempotent } from '../../../src/server/middleware/fastify.js';
import { idempotent as honoIdempotent } from '../../../src/server/middleware/hono.js';
import { sqliteKeyStore } from '../../../src/server/sqlite.js';
import type { KeyStore } from '../../../src/server/store/types.js';

let dir: string;
let store: KeyStore;
let closers: Array<() => Promise<unknown>> = [];
const clientId = (): string => 'acme';

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'oncely-edges-'));
  store = sqliteKeyStore({ path: join(dir, 'keys.db') });
  await store.migrate?.({ sqlite: 'CREATE TABLE orders (id TEXT PRIMARY KEY)', postgres: 'CREATE TABLE orders (id TEXT PRIMARY KEY)' });
});

afterEach(async () => {
  await Promise.all(closers.map((close) => close()));
  closers = [];
  await store.close?.();
  rmSync(dir, { recursive: true, force: true });
});

async function listenExpress(app: express.Express): Promise<string> {
  const server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  closers.push(() => new Promise((resolve) => server.closeAllConnections?.() ?? server.close(resolve)));
  closers.push(() => new Promise((resolve) => server.close(resolve)));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const post = (url: string, key: string, body: BodyInit = '{"item":"book"}', signal?: AbortSignal) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', 'idempotency-key': key }, body, signal, duplex: 'half' } as RequestInit);

describe('transaction: true with a handler that never answers', () => {
  it('rolls its writes back after one lease, and the store serves other keys again (it held the write lock until then)', async () => {
    const app = express();
    app.use(express.json());
    app.post('/orders/:id', expressIdempotent({ store, clientId, transaction: true, leaseMs: 600 }), (req, res) => {
      void (async () => {
        await req.oncely!.tx!.run('INSERT INTO orders (id) VALUES ($1)', [req.params['id']]);
        if (req.params['id'] === 'stuck') return; // a forgotten branch: no answer, ever
        res.status(201).json({ id: req.params['id'] });
      })();
    });
    const url = await listenExpress(app);
    const abandoned = new AbortController();
    const stuck = post(`${url}/orders/stuck`, 'k-stuck', undefined, abandoned.signal).catch(() => undefined);
    await new Promise((resolve) => setTimeout(resolve, 100));
    // Another key on the same store: answered once the stuck attempt's lease is over (never, before).
    const other = await post(`${url}/orders/ok-1`, 'k-ok');
    expect(other.status).toBe(201);
    // The stuck attempt's write is gone.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const rows = await store.transaction((tx) => tx.all<{ id: string }>('SELECT id FROM orders ORDER BY id'));
    expect(rows.map((row) => row.id)).toEqual(['ok-1']);
    abandoned.abort();
    await stuck;
  });
});

describe('a response the store cannot keep', () => {
  it.each([
    ['larger than maxResponseBytes', (res: express.Response) => res.status(201).json({ blob: 'x'.repeat(100_000) })],
    ['containing NUL', (res: express.Response) => res.status(201).type('text/plain').send('a\u0000b')],
  ])('%s: delivered once, replayed as a problem saying so, the handler never run twice', async (_name, answer) => {
    let runs = 0;
    const app = express();
    app.use(express.json());
    app.post('/orders', expressIdempotent({ store, clientId, leaseMs: 300 }), (_req, res) => {
      runs += 1;
      answer(res);
    });
    const url = await listenExpress(app);
    const first = await post(`${url}/orders`, 'k-1');
    expect(first.status).toBe(201);
    expect((await first.text()).length).toBeGreaterThan(2);
    await new Promise((resolve) => setTimeout(resolve, 400));
    const replay = await post(`${url}/orders`, 'k-1');
    expect(replay.status).toBe(201);
    expect(replay.headers.get('idempotency-replay')).toBe('true');
    expect(((await replay.json()) as { type: string }).type).toContain('response-not-stored');
    expect(runs).toBe(1);
  });
});

describe('oncely/hono reading the body itself', () => {
  it('refuses a chunked body over the cap with 413 before reading it all, and the handler still reads a body under it', async () => {
    let seen: unknown;
    const app = new Hono();
    app.post('/orders', honoIdempotent({ store, clientId, maxBodyBytes: 1024 }), async (c) => {
      seen = await c.req.json();
      return c.json({ ok: true }, 201);
    });
    const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' });
    await new Promise((resolve) => server.once('listening', resolve));
    closers.push(() => new Promise((resolve) => server.close(resolve)));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/orders`;
    let sent = 0;
    const endless = new ReadableStream<Uint8Array>({
      pull(controller) {
        sent += 4096;
        if (sent > 8 * 1024 * 1024) controller.close();
        else controller.enqueue(new Uint8Array(4096).fill(0x20));
      },
    });
    const refused = await post(url, 'k-big', endless);
    expect(refused.status).toBe(413);
    expect(sent).toBeLessThan(8 * 1024 * 1024);
    expect((await post(url, 'k-small', '{"item":"book"}')).status).toBe(201);
    expect(seen).toEqual({ item: 'book' });
  });
});

describe('oncely/hono behind a middleware that read the body first', () => {
  async function listenHono(app: Hono): Promise<string> {
    const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' });
    await new Promise((resolve) => server.once('listening', resolve));
    closers.push(() => new Promise((resolve) => server.close(resolve)));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  it("takes the body from Hono's cache after a JSON validator: the handler runs once, a retry replays, a reordered body is the same request, another body 422", async () => {
    let runs = 0;
    const app = new Hono();
    app.post(
      '/orders',
      validator('json', (value) => value as { item: string; qty: number }),
      honoIdempotent({ store, clientId }),
      (c) => {
        runs += 1;
        return c.json({ id: `ord_${runs}`, item: c.req.valid('json').item }, 201);
      },
    );
    const url = `${await listenHono(app)}/orders`;
    const first = await post(url, 'k-v', '{"item":"book","qty":1}');
    expect([first.status, await first.json()]).toEqual([201, { id: 'ord_1', item: 'book' }]);
    const replay = await post(url, 'k-v', '{ "qty": 1, "item": "book" }');
    expect([replay.status, replay.headers.get('idempotency-replay'), await replay.json()]).toEqual([201, 'true', { id: 'ord_1', item: 'book' }]);
    expect((await post(url, 'k-v', '{"item":"pen","qty":1}')).status).toBe(422);
    expect(runs).toBe(1);
  });

  it('takes the exact bytes from the cache after a middleware read the text', async () => {
    let runs = 0;
    const app = new Hono();
    app.use('/notes', async (c, next) => {
      c.set('length' as never, (await c.req.text()).length as never);
      await next();
    });
    app.post('/notes', honoIdempotent({ store, clientId, maxBodyBytes: 64 }), async (c) => {
      runs += 1;
      return c.text(await c.req.text(), 201);
    });
    const url = `${await listenHono(app)}/notes`;
    const sent = (key: string, body: string) => fetch(url, { method: 'POST', headers: { 'content-type': 'text/plain', 'idempotency-key': key }, body });
    const first = await sent('k-t', 'hello');
    expect([first.status, await first.text()]).toEqual([201, 'hello']);
    expect((await sent('k-t', 'hello ')).status).toBe(422);
    // The cap holds for a body read before the middleware too.
    expect((await sent('k-big', 'x'.repeat(65))).status).toBe(413);
    expect(runs).toBe(1);
  });

  it('compiles in a typed app: clientId reads a variable an earlier middleware set, and the handler reads oncely', async () => {
    const app = new Hono<{ Variables: { user: { id: string } } }>();
    app.use('/typed', async (c, next) => {
      c.set('user', { id: c.req.header('x-user') ?? 'anon' });
      await next();
    });
    app.post('/typed', honoIdempotent({ store, clientId: (c) => c.get('user').id }), (c) => c.json({ caller: c.get('oncely').clientId }, 201));
    const response = await fetch(`${await listenHono(app as unknown as Hono)}/typed`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': 'k-typed', 'x-user': 'u_7' },
      body: '{}',
    });
    expect([response.status, await response.json()]).toEqual([201, { caller: 'u_7' }]);
  });
});

describe('oncely/fastify with route options of its own', () => {
  it('keeps the route preHandler and onSend beside the guard: a replay skips the route preHandler, and the onSend hook shapes first answer and replay alike', async () => {
    const calls: string[] = [];
    let runs = 0;
    const app = Fastify();
    const route = {
      preHandler: async () => void calls.push('route preHandler'),
      onSend: async (_request: unknown, _reply: unknown, payload: unknown) => `${String(payload).slice(0, -1)},"signed":true}`,
    };
    app.post('/orders', fastifyIdempotent({ store, clientId }, route), async (_request, reply) => {
      runs += 1;
      return reply.code(201).send({ id: 'ord_1' });
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    closers.push(() => app.close());
    const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/orders`;
    const first = await post(url, 'k-1');
    const replay = await post(url, 'k-1');
    expect(await first.text()).toBe('{"id":"ord_1","signed":true}');
    expect([replay.headers.get('idempotency-replay'), await replay.text()]).toEqual(['true', '{"id":"ord_1","signed":true}']);
    expect(runs).toBe(1);
    expect(calls).toEqual(['route preHandler']);
  });

  it("stores only the handler's headers: a replay carries the CORS and request-id headers its own hooks set, not the first request's", async () => {
    let requests = 0;
    const app = Fastify();
    app.addHook('onRequest', async (request, reply) => {
      requests += 1;
      reply.header('access-control-allow-origin', String(request.headers.origin ?? '*'));
      reply.header('x-request-id', `req-${requests}`);
    });
    app.post('/orders', fastifyIdempotent({ store, clientId }), async (_request, reply) => reply.code(201).header('x-order', 'ord_1').send({ id: 'ord_1' }));
    app.post('/moved', fastifyIdempotent({ store, clientId }), async (_request, reply) => reply.code(303).header('location', '/orders/ord_1').send());
    await app.listen({ port: 0, host: '127.0.0.1' });
    closers.push(() => app.close());
    const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
    const from = (origin: string, path = '/orders') =>
      fetch(`${base}${path}`, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': 'application/json', 'idempotency-key': `k-cors${path}`, origin },
        body: '{}',
      });
    const first = await from('https://a.example');
    const replay = await from('https://b.example');
    const seen = (r: Response) => [r.headers.get('access-control-allow-origin'), r.headers.get('x-request-id'), r.headers.get('x-order')];
    expect(seen(first)).toEqual(['https://a.example', 'req-1', 'ord_1']);
    expect([replay.headers.get('idempotency-replay'), ...seen(replay)]).toEqual(['true', 'https://b.example', 'req-2', 'ord_1']);
    expect(await replay.text()).toBe(await first.text());
    const moved = await from('https://a.example', '/moved');
    const movedAgain = await from('https://a.example', '/moved');
    expect([
      movedAgain.status,
      movedAgain.headers.get('idempotency-replay'),
      movedAgain.headers.get('location'),
      movedAgain.headers.get('content-type'),
    ]).toEqual([303, 'true', '/orders/ord_1', moved.headers.get('content-type')]);
  });

  it('replays a Buffer reply with the headers it was sent with (no charset added to its content type)', async () => {
    const app = Fastify();
    app.post('/raw', fastifyIdempotent({ store, clientId }), async (_request, reply) =>
      reply.code(201).header('content-type', 'application/json').send(Buffer.from('{"id":"ord_2"}')),
    );
    await app.listen({ port: 0, host: '127.0.0.1' });
    closers.push(() => app.close());
    const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/raw`;
    const first = await post(url, 'k-raw');
    const replay = await post(url, 'k-raw');
    expect(first.headers.get('content-type')).toBe('application/json');
    expect([replay.status, replay.headers.get('idempotency-replay'), replay.headers.get('content-type')]).toEqual([201, 'true', 'application/json']);
    expect(await replay.text()).toBe(await first.text());
  });
});
