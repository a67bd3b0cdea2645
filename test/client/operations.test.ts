/** One logical operation: journaled first, one key, no credentials at rest, refused before sending when wrong. */
import { describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/create-client.js';
import { ErrorCode, InvalidKeyError, KeyReusedError, OncelyError, OperationAbortedError, isOncelyError } from '../../src/errors.js';
import { memoryJournal } from '../../src/journal/memory.js';
import { type Journal, type OperationRecord } from '../../src/journal/types.js';
import { deriveKey } from '../../src/keys.js';
import { BASE_URL, dedupe, json, problem, sequence, useProtocolServer } from '../support/protocol-server.js';
import { PAYMENT, TOKEN, testClient } from './helpers.js';

const server = useProtocolServer();

/** A reply that holds the request until `release()` is called. */
function gate(): { readonly wait: () => Promise<void>; readonly release: () => void } {
  let release = (): void => undefined;
  const opened = new Promise<void>((resolve) => (release = resolve));
  return { wait: () => opened, release: () => release() };
}

describe('an operation', () => {
  it('is in the journal, pending, before its first attempt reaches the server', async () => {
    // A journal whose writes land late: if the client sent before put() resolved, the record would be missing.
    const inner = memoryJournal();
    const slow: Journal = {
      ...inner,
      put: async (operation) => {
        await new Promise((resolve) => setTimeout(resolve, 30));
        return inner.put(operation);
      },
    };
    const client = testClient({ journal: slow });
    const atArrival: Array<OperationRecord | undefined> = [];
    server.reply(async ({ key }) => {
      atArrival.push(await client.journal.get(client.scope, key ?? ''));
      return json(201, {});
    });
    const r = await client.post('v1/payments', { json: PAYMENT });
    expect(atArrival).toEqual([expect.objectContaining({ key: r.key, state: 'pending', body: JSON.stringify(PAYMENT) })]);
  });

  it('never writes authorization, cookie or proxy-authorization to the journal, yet sends them on every attempt', async () => {
    server.reply(
      sequence(
        () => 'network-error',
        () => json(201, {}),
      ),
    );
    // x-tenant is allow-listed: a header that is journaled, next to credentials that never are.
    const client = testClient({ journalHeaders: ['x-tenant'] });
    const creds = { cookie: 'sid=1', 'Proxy-Authorization': 'Basic cHJveHk=' };
    await client.post('v1/payments', { json: PAYMENT, headers: creds });
    server.reply(() => problem(402, 'declined'));
    await client.post('v1/payments', { json: { ...PAYMENT, amount: 5_000_000 }, headers: creds }).catch(() => undefined);
    server.reply(() => 'network-error');
    await testClient({ journal: client.journal, journalHeaders: ['x-tenant'], retry: { limit: 0 } })
      .post('v1/payments', { json: PAYMENT })
      .catch(() => undefined);

    const records = await client.journal.list();
    expect(records.map((r) => r.state).sort()).toEqual(['failed', 'pending', 'succeeded']);
    const text = JSON.stringify(records).toLowerCase();
    for (const secret of ['test_acme', 'sid=1', 'chjvehk', 'authorization', 'cookie', 'proxy-authorization']) expect(text).not.toContain(secret);
    expect(records.every((r) => r.headers['x-tenant'] === 'acme')).toBe(true);
  });

  it('keeps a session the server sets (set-cookie) out of the stored response, but hands it to the caller', async () => {
    server.reply(() => json(201, { id: 'pay_1' }, { 'set-cookie': 'session=s3cret; HttpOnly', 'x-request-id': 'r1' }));
    const client = testClient();
    const r = await client.post('v1/payments', { json: PAYMENT });
    expect(r.headers['x-request-id']).toBe('r1');
    expect(r.headers['set-cookie']).toContain('s3cret');
    const stored = await client.journal.get(client.scope, r.key);
    expect(stored?.result?.headers['x-request-id']).toBe('r1');
    expect(JSON.stringify(stored)).not.toContain('s3cret');
  });

  it('sends the credentials with each attempt even though the journal lacks them', async () => {
    server.reply(
      sequence(
        () => 'network-error',
        () => json(201, {}),
      ),
    );
    await testClient().post('v1/payments', { json: PAYMENT, headers: { cookie: 'sid=1' } });
    expect(server.seen.map((s) => [s.headers.authorization, s.headers.cookie])).toEqual([
      [TOKEN, 'sid=1'],
      [TOKEN, 'sid=1'],
    ]);
  });

  it('refuses a body over the cap before journaling or sending anything', async () => {
    const client = testClient({ maxBodyBytes: 1_024 });
    const error = await client.post('v1/payments', { json: { blob: 'x'.repeat(2_000) } }).catch((e: unknown) => e);
    expect(isOncelyError(error, 'BODY_TOO_LARGE')).toBe(true);
    expect((error as Error).message).toMatch(/over the 1024-byte cap/);
    expect(server.seen).toHaveLength(0);
    expect(await client.journal.list()).toHaveLength(0);
  });

  it('caps at 64 KiB by default', async () => {
    const client = testClient();
    await expect(client.post('v1/upload', { body: 'x'.repeat(65_537) })).rejects.toMatchObject({ code: ErrorCode.BodyTooLarge });
    await expect(client.post('v1/upload', { body: 'x'.repeat(65_536) })).resolves.toMatchObject({ status: 201 });
    expect(server.seen).toHaveLength(1);
  });

  it('refuses a key reused locally with a different body: KeyReusedError, zero requests, the original intact', async () => {
    const client = testClient();
    server.reply(() => 'network-error');
    await client.post('v1/payments', { json: PAYMENT, key: 'order-7' }).catch(() => undefined);
    const before = await client.journal.get(client.scope, 'order-7');
    server.reply(() => json(201, {}));
    const error = await client.post('v1/payments', { json: { ...PAYMENT, amount: 999 }, key: 'order-7' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(KeyReusedError);
    expect((error as KeyReusedError).status).toBeUndefined();
    expect((error as Error).message).toContain('order-7');
    expect(server.seen).toHaveLength(0);
    expect(await client.journal.get(client.scope, 'order-7')).toEqual(before);
  });

  it('sends a corrected request under a key the server refused with 400, and never resends the refused one', async () => {
    const client = testClient();
    server.reply(() => problem(400, 'invalid-request'));
    const refused = await client.post('v1/payments', { json: { ...PAYMENT, amount: 12.5 }, key: 'order-9' }).catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: ErrorCode.Http, status: 400 });
    expect(await client.journal.get(client.scope, 'order-9')).toMatchObject({ state: 'failed', lastStatus: 400 });
    // The same refused request again is answered from the journal: nothing is sent.
    await expect(client.post('v1/payments', { json: { ...PAYMENT, amount: 12.5 }, key: 'order-9' })).rejects.toMatchObject({ status: 400 });
    expect(server.seen).toHaveLength(1);
    server.reply(() => json(201, { id: 'pay_9' }));
    const corrected = await client.post('v1/payments', { json: PAYMENT, key: 'order-9' });
    expect(corrected).toMatchObject({ key: 'order-9', status: 201 });
    expect(server.seen).toMatchObject([{ key: 'order-9', body: JSON.stringify(PAYMENT) }]);
    expect(await client.journal.get(client.scope, 'order-9')).toMatchObject({ state: 'succeeded', lastStatus: 201 });
  });

  it('keeps a key the server may have used: a different request after a 402 is KeyReusedError, nothing sent', async () => {
    const client = testClient();
    server.reply(() => problem(402, 'declined'));
    await expect(client.post('v1/payments', { json: PAYMENT, key: 'order-10' })).rejects.toMatchObject({ status: 402 });
    await expect(client.post('v1/payments', { json: { ...PAYMENT, amount: 1 }, key: 'order-10' })).rejects.toBeInstanceOf(KeyReusedError);
    expect(server.seen).toHaveLength(1);
  });

  it('refuses a key reused locally on another path or method', async () => {
    const client = testClient();
    const op = await client.prepare('POST', 'v1/payments', { json: PAYMENT });
    await expect(client.prepare('POST', 'v1/refunds', { json: PAYMENT, key: op.key })).rejects.toBeInstanceOf(KeyReusedError);
    await expect(client.prepare('PUT', 'v1/payments', { json: PAYMENT, key: op.key })).rejects.toBeInstanceOf(KeyReusedError);
    expect(server.seen).toHaveLength(0);
  });

  it('treats the same key with the same JSON in another key order as the same operation', async () => {
    const client = testClient();
    const a = await client.post('v1/payments', { json: { amount: 1, currency: 'EUR' }, key: 'order-8' });
    const b = await client.post('v1/payments', { json: { currency: 'EUR', amount: 1 }, key: 'order-8' });
    expect(b).toMatchObject({ key: 'order-8', status: a.status });
    expect(server.seen).toHaveLength(1);
  });

  it('refuses an invalid caller-given key with InvalidKeyError before journaling or sending', async () => {
    const client = testClient();
    const error = await client.post('v1/payments', { json: PAYMENT, key: 'has spaces' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidKeyError);
    expect((error as Error).message).toContain('POST http://oncely.test/v1/payments');
    expect(server.seen).toHaveLength(0);
    expect(await client.journal.list()).toHaveLength(0);
  });

  it('derives the key from naturalKey in the client namespace', async () => {
    const namespace = '6ba7b811-9dad-11d1-80b4-00c04fd430c8';
    const parts = ['acme-payroll', 'pay', '2026-12-01', 'row-17'];
    const r = await testClient({ namespace }).post('v1/payments', { json: PAYMENT, naturalKey: parts });
    expect(r.key).toBe(deriveKey(namespace, ...parts));
    expect(server.seen[0]?.key).toBe(r.key);
    const other = await testClient().post('v1/payments', { json: PAYMENT, naturalKey: parts });
    expect(other.key).toBe(deriveKey(undefined, ...parts));
    expect(other.key).not.toBe(r.key);
  });

  it('sends one request with one key when send() is double-clicked, and both clicks get the result', async () => {
    const slow = gate();
    const effect = dedupe(async () => {
      await slow.wait();
      return json(201, { id: 'pay_1' });
    });
    server.reply(effect);
    const op = await testClient().prepare('POST', 'v1/payments', { json: PAYMENT });
    const clicks = [op.send(), op.send(), op.send()];
    slow.release();
    const results = await Promise.all(clicks);
    expect(results.map((r) => [r.key, r.status])).toEqual([
      [op.key, 201],
      [op.key, 201],
      [op.key, 201],
    ]);
    expect(server.seen).toHaveLength(1);
    expect(effect.effects()).toBe(1);
  });

  it('returns the stored result without a request when send() is called after it settled', async () => {
    const op = await testClient().prepare('POST', 'v1/payments', { json: PAYMENT });
    const first = await op.send<{ ok: boolean }>();
    const second = await op.send<{ ok: boolean }>();
    expect(second).toEqual({ ...first, source: 'journal', replayed: true, headers: second.headers });
    expect(second.data.ok).toBe(true);
    expect(server.seen).toHaveLength(1);
  });

  it('says where each answer came from: the server executed it, replayed it, or the journal had it and nothing was sent', async () => {
    const effect = dedupe(() => json(201, { ok: true }));
    server.reply(effect);
    const journal = memoryJournal();
    const caller = testClient({ journal });
    const naturalKey = ['inv-7'];
    const executed = await caller.post('v1/payments', { json: PAYMENT, naturalKey });
    // The same payment posted again by this caller: the journal has it settled, nothing is sent.
    const fromJournal = await caller.post('v1/payments', { json: PAYMENT, naturalKey });
    // Another machine (a journal of its own) posts it: the server answers from its stored result.
    const replayed = await testClient().post('v1/payments', { json: PAYMENT, naturalKey });
    expect([executed, fromJournal, replayed].map((r) => [r.source, r.replayed])).toEqual([
      ['server', false],
      ['journal', true],
      ['replay', true],
    ]);
    expect([...new Set([executed, fromJournal, replayed].map((r) => r.key))]).toHaveLength(1);
    expect([server.seen.length, effect.effects()]).toEqual([2, 1]);
    // Counting executions by the answers: one, as on the server.
    expect([executed, fromJournal, replayed].filter((r) => !r.replayed)).toHaveLength(1);
  });

  it('shares one attempt chain between two prepares of the same natural key', async () => {
    const slow = gate();
    server.reply(async () => {
      await slow.wait();
      return json(201, {});
    });
    const client = testClient();
    const both = [client.post('v1/payments', { json: PAYMENT, naturalKey: ['inv-7'] }), client.post('v1/payments', { json: PAYMENT, naturalKey: ['inv-7'] })];
    await new Promise((resolve) => setTimeout(resolve, 50));
    slow.release();
    await Promise.all(both);
    expect(server.seen).toHaveLength(1);
  });

  it('stops waiting when the signal aborts but keeps the operation pending', async () => {
    const hang = gate();
    server.reply(async () => {
      await hang.wait();
      return json(201, {});
    });
    const client = testClient();
    const controller = new AbortController();
    const sending = client.post('v1/payments', { json: PAYMENT, signal: controller.signal });
    await server.arrival(1);
    controller.abort();
    const error = await sending.catch((e: unknown) => e);
    hang.release();
    expect(error).toBeInstanceOf(OperationAbortedError);
    expect(await client.pending()).toMatchObject([{ key: (error as OperationAbortedError).key, state: 'pending' }]);
  });

  it('keeps the send going for the other waiter when one of two waiters aborts', async () => {
    const slow = gate();
    server.reply(async () => {
      await slow.wait();
      return json(201, {});
    });
    const op = await testClient().prepare('POST', 'v1/payments', { json: PAYMENT });
    const controller = new AbortController();
    const impatient = op.send({ signal: controller.signal });
    const patient = op.send();
    controller.abort();
    await expect(impatient).rejects.toBeInstanceOf(OperationAbortedError);
    slow.release();
    await expect(patient).resolves.toMatchObject({ status: 201, key: op.key });
    expect(server.seen).toHaveLength(1);
  });

  it('starts a fresh send when clicked again right after an aborted wait', async () => {
    let calls = 0;
    server.reply(async () => {
      calls += 1;
      if (calls === 1) await new Promise((resolve) => setTimeout(resolve, 200));
      return json(201, { id: 'pay_1' });
    });
    const op = await testClient().prepare('POST', 'v1/payments', { json: PAYMENT });
    const controller = new AbortController();
    const first = op.send({ signal: controller.signal });
    await server.arrival(1);
    controller.abort();
    const again = op.send();
    await expect(first).rejects.toBeInstanceOf(OperationAbortedError);
    await expect(again).resolves.toMatchObject({ status: 201, key: op.key });
    expect(new Set(server.seen.map((s) => s.key))).toEqual(new Set([op.key]));
  });

  it('stops operations in flight on close() and leaves them pending', async () => {
    const hang = gate();
    server.reply(async () => {
      await hang.wait();
      return json(201, {});
    });
    const journal = memoryJournal();
    const client = testClient({ journal });
    const sending = client.post('v1/payments', { json: PAYMENT });
    await server.arrival(1);
    await client.close();
    await expect(sending).rejects.toBeInstanceOf(OperationAbortedError);
    hang.release();
    expect(await journal.list({ state: 'pending' })).toHaveLength(1);
    await expect(client.post('v1/payments', { json: PAYMENT })).rejects.toMatchObject({ code: ErrorCode.Config });
  });

  it.each(['put', 'patch', 'delete'] as const)('sends %s keyed and journaled like post', async (verb) => {
    const client = testClient();
    const r = await client[verb]('v1/things/1', { json: { name: 'a' } });
    expect(server.seen).toEqual([expect.objectContaining({ method: verb.toUpperCase(), path: '/v1/things/1', key: r.key })]);
    expect(await client.journal.get(client.scope, r.key)).toMatchObject({ method: verb.toUpperCase(), state: 'succeeded' });
  });

  it('refuses to start without a journal in the neutral entry, naming the ways to get one', () => {
    const make = (): unknown => createClient({ baseUrl: BASE_URL });
    expect(make).toThrow(OncelyError);
    expect(make).toThrow(/memoryJournal\(\).*oncely\/node.*oncely\/browser/);
  });
});
