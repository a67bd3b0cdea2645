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
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { idempotent as expressIdempotent } from '../../src/adapters/express.js';
import { idempotent as fastifyIdempotent } from '../../src/adapters/fastify.js';
import { idempotent as honoIdempotent } from '../../src/adapters/hono.js';
import { sqliteKeyStore } from '../../src/server/sqlite.js';
import type { KeyStore } from '../../src/server/store/types.js';

let dir: string;
let store: KeyStore;
let closers: Array<() => Promise<unknown>> = [];
const clientId = (): string => 'acme';

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'oncely-edges-'));
  store = sqliteKeyStore({ path: join(dir, 'keys.db') });
  await store.migrate({ sqlite: 'CREATE TABLE orders (id TEXT PRIMARY KEY)', postgres: 'CREATE TABLE orders (id TEXT PRIMARY KEY)' });
});

afterEach(async () => {
  await Promise.all(closers.map((close) => close()));
  closers = [];
  await store.close();
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
