/**
 * PROTOCOL.md's response matrix through each framework's middleware, on real servers on
 * loopback over a SQLite key store: the route's handler is unchanged plus one `idempotent()`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { v5 as uuidv5 } from 'uuid';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DEFAULT_NAMESPACE } from '../../../src/keys.js';
import { downstreamKey } from '../../../src/server/derived-key.js';
import type { KeyStore } from '../../../src/server/store/types.js';
import { sqliteKeyStore } from '../../../src/server/sqlite.js';
import { FRAMEWORKS, ORDERS_SCHEMA, startApp, type AppOptions, type RunningApp } from './apps.js';

let dir: string;
let store: KeyStore;
const apps: RunningApp[] = [];

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'oncely-adapters-'));
  store = sqliteKeyStore({ path: join(dir, 'keys.db') });
  await store.migrate?.(ORDERS_SCHEMA);
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

async function post(
  app: RunningApp,
  key: string | null,
  body: unknown,
  init: { path?: string; headers?: Record<string, string>; raw?: string } = {},
): Promise<Sent> {
  const headers: Record<string, string> = { 'content-type': 'application/json', ...init.headers };
  if (key !== null) headers['idempotency-key'] = key;
  const response = await fetch(`${app.url}${init.path ?? '/v1/orders/7'}`, { method: 'POST', headers, body: init.raw ?? JSON.stringify(body) });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

describe.each(FRAMEWORKS)('%s middleware', (framework) => {
  const start = async (options: Partial<AppOptions> = {}): Promise<RunningApp> => {
    const app = await startApp(framework, { store, ...options });
    apps.push(app);
    return app;
  };

  it('executes once and replays the stored response byte for byte, without its cookie', async () => {
    const app = await start();
    const first = await post(app, 'k-1', { item: 'book', qty: 1 });
    expect(first.status).toBe(201);
    expect(first.headers.get('idempotency-key')).toBe('k-1');
    expect(first.headers.get('idempotency-replay')).toBeNull();
    expect(first.headers.get('set-cookie')).toContain('session=abc');
    // The same body in another member order is the same request.
    const replay = await post(app, 'k-1', { qty: 1, item: 'book' });
    expect(replay.status).toBe(201);
    expect(replay.text).toBe(first.text);
    expect(replay.headers.get('idempotency-replay')).toBe('true');
    expect(replay.headers.get('location')).toBe('/v1/orders/7');
    expect(replay.headers.get('content-type')).toBe(first.headers.get('content-type'));
    expect(replay.headers.get('set-cookie')).toBeNull();
    expect(app.script.runs).toHaveLength(1);
    expect(app.script.runs[0]!.body).toEqual({ item: 'book', qty: 1 });
  });

  it('answers 422 for the key reused with another body or path, and leaves the original intact', async () => {
    const app = await start();
    const first = await post(app, 'k-1', { item: 'book' });
    expect((await post(app, 'k-1', { item: 'lamp' })).status).toBe(422);
    expect((await post(app, 'k-1', { item: 'book' }, { path: '/v1/orders/8' })).status).toBe(422);
    const replay = await post(app, 'k-1', { item: 'book' });
    expect([replay.status, replay.text]).toEqual([201, first.text]);
    expect(app.script.runs).toHaveLength(1);
  });

  it('keeps callers apart: the same key from two callers is two executions', async () => {
    const app = await start({ userHeader: true });
    const alice = await post(app, 'k-1', { item: 'book' }, { headers: { 'x-user': 'alice' } });
    const bob = await post(app, 'k-1', { item: 'book' }, { headers: { 'x-user': 'bob' } });
    expect([alice.status, bob.status]).toEqual([201, 201]);
    expect(bob.headers.get('idempotency-replay')).toBeNull();
    expect(app.script.runs.map((run) => run.oncely?.clientId)).toEqual(['alice', 'bob']);
    expect((await post(app, 'k-1', { item: 'book' })).status).toBe(401);
  });

  it("gives the handler deriveKey(name): the steps API's derivation from caller, key and name, the same on the retry that runs it again", async () => {
    const app = await start({ userHeader: true });
    app.script.status = 503;
    await post(app, 'k-1', { item: 'book' }, { headers: { 'x-user': 'org:acme' } });
    app.script.status = 201;
    await post(app, 'k-1', { item: 'book' }, { headers: { 'x-user': 'org:acme' } });
    await post(app, 'acme:k-1', { item: 'book' }, { headers: { 'x-user': 'org' } });
    const [first, retry, other] = app.script.runs.map((run) => run.oncely!);
    expect(retry!.deriveKey('charge')).toBe(first!.deriveKey('charge'));
    expect(first!.deriveKey('charge')).toBe(downstreamKey(DEFAULT_NAMESPACE, 'org:acme', 'k-1', 'charge'));
    expect(first!.deriveKey('charge')).toBe(uuidv5(new TextEncoder().encode('8:org:acme3:k-16:charge'), DEFAULT_NAMESPACE));
    // Another call of the same request, and the caller and key that join to the same text: other keys.
    expect(new Set([first!.deriveKey('charge'), first!.deriveKey('refund'), other!.deriveKey('charge')]).size).toBe(3);
    expect(() => first!.deriveKey('')).toThrow(TypeError);
  });

  it('runs 100 identical concurrent requests once; every one gets the original answer', async () => {
    const app = await start();
    app.script.delayMs = 50;
    const answers = await Promise.all(Array.from({ length: 100 }, () => post(app, 'k-100', { item: 'book' })));
    expect(app.script.runs).toHaveLength(1);
    const texts = new Set(answers.map((answer) => `${answer.status} ${answer.text}`));
    expect([...texts]).toEqual([`201 ${answers.find((answer) => answer.headers.get('idempotency-replay') === null)!.text}`]);
    expect(answers.filter((answer) => answer.headers.get('idempotency-replay') === 'true')).toHaveLength(99);
  });

  it('answers 409 at once to a duplicate when waiting is off', async () => {
    const app = await start({ inFlightWaitMs: 0 });
    app.script.delayMs = 400;
    const original = post(app, 'k-1', { item: 'book' });
    await new Promise((resolve) => setTimeout(resolve, 100));
    const duplicate = await post(app, 'k-1', { item: 'book' });
    expect(duplicate.status).toBe(409);
    expect(Number(duplicate.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect((await original).status).toBe(201);
    expect(app.script.runs).toHaveLength(1);
  });

  it('leaves GET untouched', async () => {
    const app = await start();
    const response = await fetch(`${app.url}/v1/orders/7`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ id: '7', guarded: false });
    expect(response.headers.get('idempotency-key')).toBeNull();
  });

  it.each([500, 503, 429, 409, 401, 400])('releases the key on %i: the retry runs afresh', async (status) => {
    const app = await start();
    app.script.status = status;
    expect((await post(app, 'k-1', { item: 'book' })).status).toBe(status);
    app.script.status = 201;
    const retry = await post(app, 'k-1', { item: 'book' });
    expect(retry.status).toBe(201);
    expect(retry.headers.get('idempotency-replay')).toBeNull();
    expect(app.script.runs).toHaveLength(2);
  });

  it.each([402, 403, 404, 422])('stores a final %i and replays it', async (status) => {
    const app = await start();
    app.script.status = status;
    const first = await post(app, 'k-1', { item: 'book' });
    app.script.status = 201;
    const replay = await post(app, 'k-1', { item: 'book' });
    expect([replay.status, replay.text, replay.headers.get('idempotency-replay')]).toEqual([status, first.text, 'true']);
    expect(app.script.runs).toHaveLength(1);
  });

  it('refuses a missing or malformed key (400), and a body nested too deep (400) without consuming the key', async () => {
    const app = await start();
    expect((await post(app, null, { item: 'book' })).status).toBe(400);
    expect((await post(app, 'x'.repeat(300), { item: 'book' })).status).toBe(400);
    const deep = `${'['.repeat(3000)}${']'.repeat(3000)}`;
    const refused = await post(app, 'k-deep', undefined, { raw: `{"item":${deep}}` });
    expect(refused.status).toBe(400);
    expect(refused.headers.get('content-type')).toContain('application/problem+json');
    expect(app.script.runs).toHaveLength(0);
    expect((await post(app, 'k-deep', { item: 'book' })).status).toBe(201);
  });

  it('passes requests without a key through unguarded when keyMissing is pass', async () => {
    const app = await start({ keyMissing: 'pass' });
    expect((await post(app, null, { item: 'book' })).status).toBe(201);
    expect((await post(app, null, { item: 'book' })).status).toBe(201);
    expect(app.script.runs).toHaveLength(2);
    expect(app.script.runs[0]!.oncely).toBeUndefined();
  });

  it('with transaction: true, commits the handler writes with the stored response, and rolls them back on a 500', async () => {
    const app = await start({ transaction: true });
    app.script.insert = true;
    expect((await post(app, 'k-1', { item: 'book' })).status).toBe(201);
    app.script.status = 500;
    expect((await post(app, 'k-2', { item: 'lamp' })).status).toBe(500);
    const rows = await store.transaction((tx) => tx.all<{ id: string }>('SELECT id FROM orders ORDER BY id'));
    expect(rows.map((row) => row.id)).toEqual(['7:k-1']);
    // k-2 was released with its write undone: its retry commits once.
    app.script.status = 201;
    expect((await post(app, 'k-2', { item: 'lamp' })).status).toBe(201);
    const after = await store.transaction((tx) => tx.all<{ id: string }>('SELECT id FROM orders ORDER BY id'));
    expect(after.map((row) => row.id)).toEqual(['7:k-1', '7:k-2']);
  });
});

describe('express body parsing', () => {
  it('fingerprints a body the same whether or not express.json() ran, and gives the handler req.body either way', async () => {
    const parsed = await startApp('express', { store, bodyParser: true });
    const unparsed = await startApp('express', { store, bodyParser: false });
    apps.push(parsed, unparsed);
    const first = await post(unparsed, 'k-1', undefined, { raw: '{ "item": "book", "qty": 2 }' });
    expect(first.status).toBe(201);
    expect(unparsed.script.runs[0]!.body).toEqual({ item: 'book', qty: 2 });
    const replay = await post(parsed, 'k-1', { qty: 2, item: 'book' });
    expect([replay.status, replay.text, replay.headers.get('idempotency-replay')]).toEqual([201, first.text, 'true']);
    expect(parsed.script.runs).toHaveLength(0);
  });

  it('answers 413 to a body over the cap when it reads the body itself', async () => {
    const app = await startApp('express', { store, bodyParser: false, maxBodyBytes: 1024 });
    apps.push(app);
    expect((await post(app, 'k-1', { item: 'x'.repeat(2000) })).status).toBe(413);
    expect(app.script.runs).toHaveLength(0);
  });
});
