/** End-to-end stories against a deduping fake server: each counts effects, which must be one. */
import { describe, expect, it } from 'vitest';
import { buildClient } from '../../src/client/create-client.js';
import { memoryJournal } from '../../src/journal/memory.js';
import { BASE_URL, dedupe, json, useProtocolServer, type Reply, type Script } from '../support/protocol-server.js';
import { PAYMENT, testClient } from './helpers.js';

const server = useProtocolServer();

describe('exactly once', () => {
  it('applies the effect once when the response is lost after the server executed it', async () => {
    const effect = dedupe(() => json(201, { id: 'pay_1' }));
    let cut = true;
    server.reply(async (request, index): Promise<Reply> => {
      const reply = await effect(request, index);
      if (!cut) return reply;
      cut = false;
      return 'network-error'; // executed and stored, but the client never hears back
    });
    const r = await testClient().post('v1/payments', { json: PAYMENT });
    expect(r).toMatchObject({ status: 201, replayed: true, attempts: 2, data: { id: 'pay_1' } });
    expect(effect.effects()).toBe(1);
  });

  it('applies the effect once when a crashed process is resumed after the server executed it', async () => {
    const effect = dedupe(() => json(201, { id: 'pay_1' }));
    server.reply(async (request, index): Promise<Reply> => {
      await effect(request, index);
      return 'network-error';
    });
    const journal = memoryJournal();
    const crashed = testClient({ journal, retry: { limit: 0 } });
    await crashed.post('v1/payments', { json: PAYMENT }).catch(() => undefined);

    server.reply(effect);
    const [outcome] = await testClient({ journal }).resume();
    expect(outcome).toMatchObject({ state: 'succeeded', result: { replayed: true, status: 201 } });
    expect(effect.effects()).toBe(1);
  });

  it('makes a second process sending the same operation wait for the first and return its result without a request', async () => {
    let release = (): void => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    const effect = dedupe(async () => {
      await held;
      return json(201, { id: 'pay_1' });
    });
    server.reply(effect);
    const journal = memoryJournal();
    const a = testClient({ journal, ownerId: 'process-a' });
    const b = testClient({ journal, ownerId: 'process-b', retry: { backoffMs: 5, budgetMs: 5_000, limit: 1_000 } });
    const first = a.post('v1/payments', { json: PAYMENT, key: 'order-1' });
    await server.arrival(1);
    const second = b.post('v1/payments', { json: PAYMENT, key: 'order-1' });
    await new Promise((resolve) => setTimeout(resolve, 30));
    release();
    const [ra, rb] = await Promise.all([first, second]);
    expect(rb).toMatchObject({ key: 'order-1', status: ra.status, data: ra.data });
    expect(server.seen).toHaveLength(1);
    expect(effect.effects()).toBe(1);
  });

  it("goes ahead once a crashed process's claim runs out, without spending its retries on the wait", async () => {
    const journal = memoryJournal();
    const client = testClient({ journal, retry: { limit: 1, backoffMs: 20, budgetMs: 5_000 } });
    const op = await client.prepare('POST', 'v1/payments', { json: PAYMENT });
    // The crashed process: it claimed the operation and died without releasing it.
    expect(await journal.claim(client.scope, op.key, 'crashed-process', 300)).toBe(true);
    await expect(op.send()).resolves.toMatchObject({ status: 201, attempts: 1 });
    expect(server.seen).toHaveLength(1);
  });

  it('sends through a custom fetch (an in-process server core) without any network', async () => {
    const core = dedupe(() => json(201, { id: 'pay_in_process' }));
    const seenKeys: Array<string | null> = [];
    const fetch = async (request: Request): Promise<Response> => {
      const url = new URL(request.url);
      const headers: Record<string, string> = {};
      request.headers.forEach((value, name) => (headers[name] = value));
      const seen = { method: request.method, path: url.pathname, key: request.headers.get('idempotency-key'), body: await request.text(), headers };
      seenKeys.push(seen.key);
      const reply = await (core as Script)(seen, seenKeys.length - 1);
      return reply === 'network-error' ? Promise.reject(new TypeError('fetch failed')) : reply;
    };
    const client = testClient({ baseUrl: 'http://in-process.invalid', fetch });
    const op = await client.prepare('POST', 'v1/payments', { json: PAYMENT });
    const [r1, r2] = await Promise.all([op.send(), op.send()]);
    expect(r1.data).toEqual({ id: 'pay_in_process' });
    expect(r2.key).toBe(r1.key);
    expect(seenKeys).toEqual([op.key]);
    expect(server.seen).toHaveLength(0);
  });

  it('closes a journal it created from the platform default, and leaves a given one open', async () => {
    const created = memoryJournal();
    const owned = buildClient({ baseUrl: BASE_URL }, () => created);
    expect(owned.journal).toBe(created);
    await owned.close();
    await expect(created.list()).rejects.toThrow(/closed/);

    const given = memoryJournal();
    await buildClient({ baseUrl: BASE_URL, journal: given }, () => memoryJournal()).close();
    await expect(given.list()).resolves.toEqual([]);
  });

  it('stores a response body cut to maxBodyBytes but returns it whole to the sender', async () => {
    const big = 'y'.repeat(5_000);
    server.reply(() => json(201, { big }));
    const client = testClient({ maxBodyBytes: 1_000 });
    const r = await client.post<{ big: string }>('v1/payments', { json: PAYMENT });
    expect(r.data.big).toHaveLength(5_000);
    const stored = await client.journal.get(client.scope, r.key);
    expect(new TextEncoder().encode(stored?.result?.body ?? '').length).toBe(1_000);
  });
});
