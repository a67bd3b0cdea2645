/**
 * Spans of the framework middleware (through Hono's `app.request`, no sockets) and of the client
 * (one per attempt, against the real handler in-process), read back from an in-memory exporter.
 */
import { Hono } from 'hono';
import { afterEach, describe, expect, it } from 'vitest';
import { idempotent } from '../../src/server/middleware/hono.js';
import { createClient } from '../../src/client/create-client.js';
import { memoryJournal } from '../../src/journal/memory.js';
import { sqliteKeyStore } from '../../src/server/sqlite.js';
import type { KeyStore } from '../../src/server/store.js';
import { createTestApp, type TestApp } from '../server/fixtures.js';
import { recorder } from './exporter.js';

let store: KeyStore | undefined;
let app: TestApp | undefined;
afterEach(async () => {
  await store?.close?.();
  await app?.store.close?.();
  store = app = undefined;
});

describe('middleware telemetry', () => {
  it('traces each guarded request with the outcome /metrics would count, and nothing the caller sent', async () => {
    const rec = recorder();
    store = sqliteKeyStore({ path: ':memory:' });
    await store.migrate?.();
    const web = new Hono();
    let status = 201;
    const guard = idempotent({ store, clientId: (c) => c.req.header('x-user') ?? null, telemetry: rec.telemetry });
    web.post('/v1/orders/:id', guard, async (c) => c.json({ ok: true }, status as 201));
    web.get('/v1/orders/:id', (c) => c.json({ ok: true }));
    const post = (body: unknown, key = 'key-secret-3a1d') =>
      web.request('/v1/orders/7?token=query-secret-6c2e', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': key, 'x-user': 'user-secret-9d4f', authorization: 'Bearer bearer-secret-1b8a' },
        body: JSON.stringify(body),
      });
    expect((await post({ item: 'body-secret-5e7c' })).status).toBe(201);
    expect((await post({ item: 'body-secret-5e7c' })).headers.get('idempotency-replay')).toBe('true');
    expect((await post({ item: 'other' })).status).toBe(422);
    status = 503;
    expect((await post({ item: 'x' }, 'k2')).status).toBe(503);
    expect((await web.request('/v1/orders/7')).status).toBe(200);
    expect(
      rec.spans('oncely.request').map((s) => [s.attributes['oncely.outcome'], s.attributes['http.response.status_code'], s.attributes['oncely.endpoint']]),
    ).toEqual([
      ['executed', 201, 'POST /v1/orders/:id'],
      ['replayed', 201, 'POST /v1/orders/:id'],
      ['mismatch', 422, 'POST /v1/orders/:id'],
      ['transient', 503, 'POST /v1/orders/:id'],
    ]);
    const all = rec.everything();
    for (const secret of ['key-secret', 'query-secret', 'user-secret', 'bearer-secret', 'body-secret', 'token']) expect(all).not.toContain(secret);
  });
});

describe('client telemetry', () => {
  it('makes one span per attempt with its number, status, Retry-After and whether it was a replay', async () => {
    const rec = recorder();
    app = await createTestApp();
    const handler = app.handler;
    const clientOf = () =>
      createClient({
        baseUrl: 'http://oncely.test/',
        headers: { authorization: 'Bearer test_acme' },
        journal: memoryJournal(),
        fetch: async (request) => (await handler.handle(request)) ?? new Response(null, { status: 404 }),
        retry: { limit: 3, backoffMs: 1, jitter: false, maxRetryAfterMs: 5 },
        telemetry: rec.telemetry,
      });
    const client = clientOf();
    app.rail.script.push('unavailable');
    const json = { amount: 10, note: 'body-secret-2f6a' };
    expect((await client.post('v1/payments?page=query-secret-8e1b', { json, key: 'client-key-secret-4c9e' })).status).toBe(201);
    // Another client (its own journal) sending the same key: the server replays.
    expect((await clientOf().post('v1/payments?page=query-secret-8e1b', { json, key: 'client-key-secret-4c9e' })).status).toBe(201);
    const attempts = rec.spans('oncely.attempt');
    expect(
      attempts.map((s) => [
        s.attributes['oncely.attempt'],
        s.attributes['http.response.status_code'],
        s.attributes['oncely.retry_after'],
        s.attributes['oncely.replayed'],
      ]),
    ).toEqual([
      [1, 503, '2', false],
      [2, 201, undefined, false],
      [1, 201, undefined, true],
    ]);
    expect(attempts[0]!.attributes).toMatchObject({ 'http.request.method': 'POST', 'server.address': 'oncely.test', 'url.path': '/v1/payments' });
    const all = rec.everything();
    for (const secret of ['body-secret', 'query-secret', 'client-key-secret', 'test_acme', 'Bearer']) expect(all).not.toContain(secret);
  });
});
