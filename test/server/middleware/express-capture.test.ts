/**
 * The Express middleware holds the handler's response until it is stored. What a handler (or the
 * middleware around it) does to the response after its first `end` must change neither what the
 * client gets nor what is replayed, and headers earlier middleware sets on every request (CORS, a
 * request id) belong to each answer, not to the stored response.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import express from 'express';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { idempotent } from '../../../src/server/middleware/express.js';
import { sqliteKeyStore } from '../../../src/server/sqlite.js';
import type { KeyStore } from '../../../src/server/store/types.js';

let dir: string;
let store: KeyStore;
let closers: Array<() => Promise<void>> = [];

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'oncely-express-'));
  store = sqliteKeyStore({ path: join(dir, 'keys.db') });
  await store.migrate?.();
});

afterEach(async () => {
  await Promise.all(closers.map((close) => close()));
  closers = [];
  await store.close?.();
  rmSync(dir, { recursive: true, force: true });
});

/** The route behind the guard; `wrap` runs before the guard (a middleware that wraps the response's methods). */
async function serve(route: express.RequestHandler, { wrap, guards = [idempotent({ store, clientId: () => 'acme' })] }: Wrapping = {}): Promise<string> {
  const app = express();
  let requestId = 0;
  app.use((_req, res, next) => {
    requestId += 1;
    res.setHeader('access-control-allow-origin', 'https://shop.example');
    res.setHeader('x-request-id', `req-${requestId}`);
    next();
  });
  app.use(express.json());
  if (wrap) app.use(wrap);
  app.post('/orders', ...guards, route);
  // Express's own error handling: a handler that throws after answering reaches it.
  app.use((_error: unknown, _req: express.Request, res: express.Response, _next: express.NextFunction) => {
    res.setHeader('x-error', 'boom');
    res.status(500).json({ error: 'boom' });
  });
  const server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  closers.push(() => new Promise((resolve) => server.close(() => resolve())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/orders`;
}

interface Wrapping {
  readonly wrap?: express.RequestHandler;
  readonly guards?: express.RequestHandler[];
}

/** As `on-headers` (morgan, express-session, compression) does: `writeHead` and `end` wrapped as the response's own; counts the ends that reach it. */
function onHeaders(ends: { count: number }): express.RequestHandler {
  return (_req, res, next) => {
    const { writeHead, end } = res;
    res.writeHead = function (this: express.Response, ...args: unknown[]) {
      this.setHeader('x-wrapped', 'yes');
      return Reflect.apply(writeHead, this, args) as express.Response;
    } as express.Response['writeHead'];
    res.end = function (this: express.Response, ...args: unknown[]) {
      ends.count += 1;
      return Reflect.apply(end, this, args) as express.Response;
    } as express.Response['end'];
    next();
  };
}

const post = async (url: string, key: string) => {
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', 'idempotency-key': key }, body: '{"item":"book"}' });
  return { status: response.status, headers: response.headers, text: await response.text() };
};

describe('express response capture', () => {
  it('sends and stores the first end; a second end is a no-op whose callback still runs', async () => {
    let called = false;
    const url = await serve((_req, res) => {
      res.status(201).end('first');
      res.end('second', () => {
        called = true;
      });
    });
    const first = await post(url, 'k-1');
    const replay = await post(url, 'k-1');
    expect([first.status, first.text]).toEqual([201, 'first']);
    expect([replay.status, replay.text, replay.headers.get('idempotency-replay')]).toEqual([201, 'first', 'true']);
    expect(called).toBe(true);
  });

  it('a throw after answering reaches the error handler but changes neither the answer nor the replay', async () => {
    const url = await serve((_req, res) => {
      res.status(201).json({ id: 'ord_1' });
      throw new Error('after the answer');
    });
    const first = await post(url, 'k-1');
    expect([first.status, first.text, first.headers.get('content-length'), first.headers.get('x-error')]).toEqual([201, '{"id":"ord_1"}', '14', null]);
    const replay = await post(url, 'k-1');
    expect([replay.status, replay.text, replay.headers.get('x-error')]).toEqual([201, '{"id":"ord_1"}', null]);
  });

  it('keeps headers earlier middleware set on guard answers, and does not replay them from the first request', async () => {
    const url = await serve((_req, res) => {
      res.status(201).location('/orders/1').json({ id: 'ord_1' });
    });
    const first = await post(url, 'k-1');
    const replay = await post(url, 'k-1');
    expect(first.headers.get('x-request-id')).toBe('req-1');
    expect(replay.headers.get('x-request-id')).toBe('req-2');
    expect(replay.headers.get('access-control-allow-origin')).toBe('https://shop.example');
    expect(replay.headers.get('location')).toBe('/orders/1');
    const invalid = await post(url, 'x'.repeat(300));
    expect(invalid.status).toBe(400);
    expect(invalid.headers.get('access-control-allow-origin')).toBe('https://shop.example');
  });

  it('replays a 204 with no body and no content-length', async () => {
    const url = await serve((_req, res) => {
      res.status(204).end();
    });
    expect((await post(url, 'k-1')).status).toBe(204);
    const replay = await post(url, 'k-1');
    expect([replay.status, replay.text, replay.headers.get('idempotency-replay')]).toEqual([204, '', 'true']);
    expect(replay.headers.get('content-length')).toBeNull();
  });

  it("sends and replays a single end(Buffer) as it is, with the handler's headers", async () => {
    const url = await serve((_req, res) => {
      res.status(201).setHeader('content-type', 'application/octet-stream');
      res.setHeader('x-order', 'ord_1');
      res.end(Buffer.from('ord_1 paid'));
    });
    const first = await post(url, 'k-1');
    const replay = await post(url, 'k-1');
    for (const answer of [first, replay]) {
      expect([answer.status, answer.text, answer.headers.get('x-order'), answer.headers.get('content-type')]).toEqual([
        201,
        'ord_1 paid',
        'ord_1',
        'application/octet-stream',
      ]);
      expect(answer.headers.get('idempotency-key')).toBe('k-1');
    }
    expect([first.headers.get('idempotency-replay'), replay.headers.get('idempotency-replay')]).toEqual([null, 'true']);
  });

  it('joins streamed writes of strings in any encoding, Buffers and Uint8Arrays, in order; write callbacks run', async () => {
    let written = 0;
    const url = await serve((_req, res) => {
      res.status(201).setHeader('content-type', 'text/plain; charset=utf-8');
      res.write('caf\u00e9 ', () => (written += 1));
      res.write('6f7264', 'hex');
      res.write(Buffer.from('_1 '));
      res.write(new Uint8Array([0x70, 0x61, 0x69, 0x64]).subarray(1), () => (written += 1));
      res.write('IA==', 'base64');
      res.end('\u00fc', 'latin1');
    });
    const first = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', 'idempotency-key': 'k-1' }, body: '{"item":"book"}' });
    const bytes = Buffer.from(await first.arrayBuffer());
    const replay = await post(url, 'k-1');
    expect([first.status, bytes.toString('hex')]).toEqual([201, Buffer.concat([Buffer.from('caf\u00e9 ord_1 aid '), Buffer.from([0xfc])]).toString('hex')]);
    // The latin1 'ü' is the byte 0xfc, not UTF-8: delivered once, and its replay says it was not stored.
    expect([replay.status, replay.headers.get('content-type')]).toEqual([201, 'application/problem+json']);
    expect(written).toBe(2);
  });

  it('replays streamed UTF-8 writes byte for byte, a header set between writes included', async () => {
    const url = await serve((_req, res) => {
      res.status(201);
      res.write('{"id":');
      res.setHeader('content-type', 'application/json');
      res.write(Buffer.from('"ord_1","note":"\u20ac'));
      res.end('"}', 'utf8');
    });
    const first = await post(url, 'k-1');
    const replay = await post(url, 'k-1');
    for (const answer of [first, replay]) {
      expect([answer.status, answer.text, answer.headers.get('content-type')]).toEqual([201, '{"id":"ord_1","note":"\u20ac"}', 'application/json']);
    }
    expect(replay.headers.get('idempotency-replay')).toBe('true');
  });

  it('holds the response when earlier middleware wrapped writeHead and end as its own, and sends through the wrappers once', async () => {
    let runs = 0;
    const ends = { count: 0 };
    const url = await serve(
      (_req, res) => {
        runs += 1;
        res.status(201).json({ id: 'ord_1' });
        res.status(500).end('late');
      },
      { wrap: onHeaders(ends) },
    );
    const first = await post(url, 'k-1');
    const replay = await post(url, 'k-1');
    expect([first.status, first.text, first.headers.get('x-wrapped'), first.headers.get('idempotency-key')]).toEqual([201, '{"id":"ord_1"}', 'yes', 'k-1']);
    expect([replay.status, replay.text, replay.headers.get('idempotency-replay'), replay.headers.get('x-wrapped')]).toEqual([
      201,
      '{"id":"ord_1"}',
      'true',
      'yes',
    ]);
    expect([runs, ends.count]).toEqual([1, 2]);
  });

  it('holds the response for each of two guards on one route (two stores): stored in both, sent once', async () => {
    const other = sqliteKeyStore({ path: join(dir, 'other.db') });
    await other.migrate();
    closers.push(() => other.close());
    let runs = 0;
    const url = await serve(
      (_req, res) => {
        runs += 1;
        res.status(201).json({ id: `ord_${runs}` });
      },
      { guards: [idempotent({ store, clientId: () => 'acme' }), idempotent({ store: other, clientId: () => 'acme' })] },
    );
    const first = await post(url, 'k-1');
    const replay = await post(url, 'k-1');
    expect([first.status, first.text, replay.status, replay.text, replay.headers.get('idempotency-replay')]).toEqual([
      201,
      '{"id":"ord_1"}',
      201,
      '{"id":"ord_1"}',
      'true',
    ]);
    expect((await other.load('acme', 'k-1'))?.response?.body).toBe('{"id":"ord_1"}');
    expect(runs).toBe(1);
  });

  it('holds the response of an Express app mounted behind the guard (which gives the response its own prototype)', async () => {
    let runs = 0;
    const orders = express();
    orders.post('/orders', (_req, res) => {
      runs += 1;
      res.status(201).json({ id: `ord_${runs}` });
    });
    const url = await serve(orders);
    const first = await post(url, 'k-1');
    const replay = await post(url, 'k-1');
    expect([first.status, first.text, first.headers.get('idempotency-key')]).toEqual([201, '{"id":"ord_1"}', 'k-1']);
    expect([replay.status, replay.text, replay.headers.get('idempotency-replay')]).toEqual([201, '{"id":"ord_1"}', 'true']);
    expect(runs).toBe(1);
  });
});
