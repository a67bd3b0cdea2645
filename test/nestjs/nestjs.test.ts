/**
 * `oncely/nestjs` on `@nestjs/platform-express` and `@nestjs/platform-fastify`: a Nest app built
 * with `@nestjs/testing`, listening on loopback, driven over real HTTP. PROTOCOL.md's answers
 * through `@Idempotent()`: once under 100 concurrent duplicates, `422` for another body, `400`
 * without a key, the stored response replayed byte for byte, a failure releasing the key, and
 * `@OncelyTx()` committing with the key or not at all.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { INestApplication } from '@nestjs/common';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DEFAULT_NAMESPACE } from '../../src/keys.js';
import { downstreamKey } from '../../src/server/derived-key.js';
import type { OncelyModuleOptions } from '../../src/server/middleware/nestjs.js';
import { sqliteKeyStore } from '../../src/server/sqlite.js';
import type { KeyStore } from '../../src/server/store/types.js';
import { appModule, listen, newScript, ORDERS_TABLE, PLATFORMS, type Script } from './app.js';

let dir: string;
let store: KeyStore;
const apps: INestApplication[] = [];

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'oncely-nestjs-'));
  store = sqliteKeyStore({ path: join(dir, 'keys.db') });
  await store.migrate?.(ORDERS_TABLE);
});

afterEach(async () => {
  await Promise.all(apps.splice(0).map((app) => app.close()));
  await store.close?.();
  rmSync(dir, { recursive: true, force: true });
});

interface Sent {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
}

describe.each(PLATFORMS)('@Idempotent() on platform-%s', (platform) => {
  let url: string;
  let script: Script;

  const start = async (options: Partial<OncelyModuleOptions> = {}): Promise<void> => {
    script = newScript();
    const clientId = (request: { headers: Record<string, string | string[] | undefined> }) => {
      const user = request.headers['x-user'];
      return typeof user === 'string' ? user : 'acme';
    };
    const moduleRef = await Test.createTestingModule({ imports: [appModule({ store, clientId, ...options }, script)] }).compile();
    const app = platform === 'fastify' ? moduleRef.createNestApplication(new FastifyAdapter()) : moduleRef.createNestApplication();
    app.useLogger(false);
    apps.push(app);
    url = await listen(app);
  };

  const post = async (path: string, key: string | null, body: unknown, headers: Record<string, string> = {}): Promise<Sent> => {
    const all: Record<string, string> = { 'content-type': 'application/json', ...headers };
    if (key !== null) all['idempotency-key'] = key;
    const response = await fetch(`${url}${path}`, { method: 'POST', headers: all, body: JSON.stringify(body) });
    return { status: response.status, headers: response.headers, text: await response.text() };
  };

  it('runs 100 identical concurrent requests once; every one gets the original answer', async () => {
    await start();
    script.delayMs = 50;
    const answers = await Promise.all(Array.from({ length: 100 }, () => post('/orders/7', 'k-100', { item: 'book' })));
    expect(script.runs).toHaveLength(1);
    expect(new Set(answers.map((answer) => `${answer.status} ${answer.text}`))).toEqual(new Set([`201 {"id":"7","body":{"item":"book"},"run":1}`]));
    expect(answers.filter((answer) => answer.headers.get('idempotency-replay') === 'true')).toHaveLength(99);
  });

  it('replays the stored response byte for byte, its headers too; another body is 422 and leaves it intact', async () => {
    await start();
    const first = await post('/orders/7', 'k-1', { item: 'book', qty: 1 });
    expect([first.status, first.headers.get('idempotency-key'), first.headers.get('idempotency-replay')]).toEqual([201, 'k-1', null]);
    // The same JSON in another member order is the same request (Nest parsed it before the interceptor).
    const replay = await post('/orders/7', 'k-1', { qty: 1, item: 'book' });
    expect([replay.status, replay.text, replay.headers.get('idempotency-replay')]).toEqual([201, first.text, 'true']);
    expect([replay.headers.get('location'), replay.headers.get('content-type')]).toEqual(['/orders/7', first.headers.get('content-type')]);
    const other = await post('/orders/7', 'k-1', { item: 'lamp' });
    expect([other.status, other.headers.get('content-type')]).toEqual([422, 'application/problem+json']);
    expect((await post('/orders/8', 'k-1', { item: 'book', qty: 1 })).status).toBe(422);
    expect((await post('/orders/7', 'k-1', { item: 'book', qty: 1 })).text).toBe(first.text);
    expect(script.runs).toHaveLength(1);
  });

  it('answers 400 to a request without a key, and to a malformed one, without running the handler', async () => {
    await start();
    const missing = await post('/orders/7', null, { item: 'book' });
    expect([missing.status, missing.headers.get('content-type')]).toEqual([400, 'application/problem+json']);
    expect((await post('/orders/7', 'bad key with spaces', { item: 'book' })).status).toBe(400);
    expect(script.runs).toHaveLength(0);
    // An unguarded route is untouched.
    expect((await post('/open', null, { item: 'book' })).status).toBe(201);
  });

  it('keeps callers apart, and releases the key when the handler fails: the retry runs afresh', async () => {
    await start();
    script.status = 503;
    const failed = await post('/orders/7', 'k-1', { item: 'book' });
    expect([failed.status, JSON.parse(failed.text)]).toEqual([503, { failed: 503 }]);
    script.status = 201;
    const retry = await post('/orders/7', 'k-1', { item: 'book' });
    expect([retry.status, retry.headers.get('idempotency-replay')]).toEqual([201, null]);
    const bob = await post('/orders/7', 'k-1', { item: 'book' }, { 'x-user': 'bob' });
    expect([bob.status, bob.headers.get('idempotency-replay')]).toEqual([201, null]);
    expect(script.runs.map((run) => run.oncely.clientId)).toEqual(['acme', 'acme', 'bob']);
  });

  it('gives @OncelyContext() the derived key of a downstream call: the steps API derivation, the same on a replay', async () => {
    await start();
    const first = await post('/derived', 'k-9', {});
    expect(JSON.parse(first.text)).toEqual({ charge: downstreamKey(DEFAULT_NAMESPACE, 'acme', 'k-9', 'charge') });
    expect((await post('/derived', 'k-9', {})).text).toBe(first.text);
  });

  it('commits @OncelyTx() writes with the key: one row for many duplicates, none when the handler fails', async () => {
    await start({ inFlightWaitMs: 10_000 });
    const answers = await Promise.all(Array.from({ length: 20 }, () => post('/tx/orders', 'k-tx', { item: 'book' })));
    expect(new Set(answers.map((answer) => answer.status))).toEqual(new Set([201]));
    script.status = 500;
    expect((await post('/tx/orders', 'k-failed', { item: 'lamp' })).status).toBe(500);
    const rows = await store.transaction((tx) => tx.all<{ key: string }>('SELECT key FROM orders ORDER BY key'));
    expect(rows.map((row) => row.key)).toEqual(['k-tx']);
  });
});
