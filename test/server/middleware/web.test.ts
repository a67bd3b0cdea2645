/**
 * `oncely/web` called as Next.js, Bun and Deno call a route handler: in process, with real
 * `Request` objects (no server between), over a SQLite key store. The response matrix itself runs
 * through `matrix.test.ts` (its `web` app); this file holds what only a wrapped web handler has:
 * the framework's own request object and arguments reaching the handler, the body re-read by the
 * handler after the guard fingerprinted it, and a throw.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MiddlewareOrderError } from '../../../src/server/errors/middleware-order-error.js';
import { withIdempotency, type GuardContext } from '../../../src/server/middleware/web.js';
import { sqliteKeyStore } from '../../../src/server/sqlite.js';
import type { KeyStore } from '../../../src/server/store/types.js';

let dir: string;
let store: KeyStore;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'oncely-web-'));
  store = sqliteKeyStore({ path: join(dir, 'keys.db') });
  await store.migrate?.();
});

afterEach(async () => {
  await store.close?.();
  rmSync(dir, { recursive: true, force: true });
});

/** A framework's own request class, as Next.js passes a `NextRequest`. */
class FrameworkRequest extends Request {
  readonly nextUrl = new URL(this.url);
}

const request = (key: string, body: BodyInit = '{"item":"book"}', init: RequestInit = {}): FrameworkRequest =>
  new FrameworkRequest('http://127.0.0.1/api/orders?page=1', {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': key },
    body,
    duplex: 'half',
    ...init,
  } as RequestInit);

interface Run {
  readonly request: FrameworkRequest;
  readonly oncely: GuardContext | undefined;
  readonly body: unknown;
  readonly params: { id: string };
}

/** A Next.js-shaped route: `(request, { params })`, the body read with `request.json()`. */
function route(options: { fail?: boolean; delayMs?: number; maxBodyBytes?: number } = {}) {
  const runs: Run[] = [];
  const POST = withIdempotency(
    async (request: FrameworkRequest, oncely, { params }: { params: Promise<{ id: string }> }) => {
      const run = { request, oncely, body: await request.json(), params: await params };
      runs.push(run);
      if (options.delayMs) await new Promise((resolve) => setTimeout(resolve, options.delayMs));
      if (options.fail) throw new Error('the handler failed');
      return Response.json({ id: run.params.id, run: runs.length, path: request.nextUrl.pathname }, { status: 201 });
    },
    { store, clientId: () => 'acme', maxBodyBytes: options.maxBodyBytes },
  );
  return { POST, runs };
}

const params = (id: string) => ({ params: Promise.resolve({ id }) });

describe('oncely/web with real Request objects in process', () => {
  it('hands the handler the framework’s own request object, its arguments, and a body it can still read', async () => {
    const { POST, runs } = route();
    const sent = request('k-1', '{ "item": "book" }');
    const response = await POST(sent, params('7'));
    expect(response.status).toBe(201);
    expect(await response.json()).toEqual({ id: '7', run: 1, path: '/api/orders' });
    expect(runs[0]!.request).toBe(sent);
    expect(runs[0]!.body).toEqual({ item: 'book' });
    expect(runs[0]!.oncely).toMatchObject({ clientId: 'acme', key: 'k-1' });
  });

  it('runs 100 identical concurrent requests once, and answers another body under the key 422', async () => {
    const { POST, runs } = route({ delayMs: 50 });
    const answers = await Promise.all(Array.from({ length: 100 }, () => POST(request('k-100'), params('7'))));
    expect(runs).toHaveLength(1);
    const texts = await Promise.all(answers.map(async (answer) => `${answer.status} ${await answer.text()}`));
    expect(new Set(texts)).toEqual(new Set(['201 {"id":"7","run":1,"path":"/api/orders"}']));
    expect(answers.filter((answer) => answer.headers.get('idempotency-replay') === 'true')).toHaveLength(99);
    const other = await POST(request('k-100', '{"item":"lamp"}'), params('7'));
    expect(other.status).toBe(422);
    expect(runs).toHaveLength(1);
  });

  it('fingerprints the query: the same body to another query is 422', async () => {
    const { POST } = route();
    expect((await POST(request('k-1'), params('7'))).status).toBe(201);
    const elsewhere = new FrameworkRequest('http://127.0.0.1/api/orders?page=2', request('k-1'));
    expect((await POST(elsewhere, params('7'))).status).toBe(422);
  });

  it('refuses a streamed body over the cap with 413 without reading all of it, and never runs the handler', async () => {
    const { POST, runs } = route({ maxBodyBytes: 1024 });
    let pulled = 0;
    const endless = new ReadableStream<Uint8Array>({
      pull(controller) {
        pulled += 4096;
        controller.enqueue(new Uint8Array(4096).fill(0x20));
      },
    });
    const refused = await POST(request('k-big', endless), params('7'));
    expect(refused.status).toBe(413);
    expect(pulled).toBeLessThan(64 * 1024);
    expect(runs).toHaveLength(0);
  });

  it('releases the key when the handler throws: the error reaches the framework, and the retry runs afresh', async () => {
    const failing = route({ fail: true });
    await expect(failing.POST(request('k-1'), params('7'))).rejects.toThrow('the handler failed');
    const { POST, runs } = route();
    const retry = await POST(request('k-1'), params('7'));
    expect([retry.status, retry.headers.get('idempotency-replay')]).toEqual([201, null]);
    expect(runs).toHaveLength(1);
  });

  it('says so when the body was read before the wrapper saw it', async () => {
    const { POST } = route();
    const read = request('k-1');
    await read.text();
    await expect(POST(read, params('7'))).rejects.toThrow(MiddlewareOrderError);
  });

  it('passes a method it does not guard to the handler without a context', async () => {
    const GET = withIdempotency(async (_request, oncely) => Response.json({ guarded: oncely !== undefined }), { store, clientId: () => 'acme' });
    expect(await (await GET(new Request('http://127.0.0.1/api/orders'))).json()).toEqual({ guarded: false });
  });
});
