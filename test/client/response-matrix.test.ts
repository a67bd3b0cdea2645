/**
 * PROTOCOL.md's response matrix, one row per test, as the client sees it: what it returns or
 * throws, how many requests it sent, and what the journal says afterwards.
 */
import { describe, expect, it } from 'vitest';
import { HttpError, InvalidKeyError, KeyReusedError, isOncelyError } from '../../src/errors.js';
import { json, problem, sequence, useProtocolServer } from '../support/protocol-server.js';
import { PAYMENT, testClient } from './helpers.js';

const server = useProtocolServer();

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => {
      throw new Error('expected a rejection');
    },
    (error: unknown) => error,
  );
}

describe('the client against the response matrix', () => {
  it('returns a first execution (201) as a succeeded, non-replayed result and settles the journal record', async () => {
    server.reply(({ key }) => json(201, { id: 'pay_1', status: 'succeeded' }, { 'idempotency-key': key ?? '' }));
    const client = testClient();
    const r = await client.post<{ id: string }>('v1/payments', { json: PAYMENT });
    expect(r).toMatchObject({ status: 201, data: { id: 'pay_1' }, replayed: false, attempts: 1 });
    expect(server.seen).toHaveLength(1);
    expect(server.seen[0]?.key).toBe(r.key);
    const record = await client.journal.get(client.scope, r.key);
    expect(record).toMatchObject({ state: 'succeeded', attempts: 1, lastStatus: 201, result: { status: 201, replayed: false } });
  });

  it('marks a replay of a finished key (Idempotency-Replay: true) as replayed with the stored status', async () => {
    server.reply(() => json(201, { id: 'pay_1' }, { 'idempotency-replay': 'true' }));
    const r = await testClient().post('v1/payments', { json: PAYMENT });
    expect(r).toMatchObject({ status: 201, replayed: true, data: { id: 'pay_1' } });
  });

  it("accepts Stripe's Idempotent-Replayed: true as the replay marker", async () => {
    server.reply(() => json(200, { id: 'ch_1' }, { 'idempotent-replayed': 'true' }));
    const r = await testClient().post('v1/charges', { json: PAYMENT });
    expect(r.replayed).toBe(true);
  });

  it('waits out a 409 (key in flight) and retries with the same key and bytes until the stored answer arrives', async () => {
    server.reply(
      sequence(
        () => problem(409, 'key-in-flight', { 'retry-after': '1' }),
        () => json(201, { id: 'pay_1' }),
      ),
    );
    const r = await testClient().post('v1/payments', { json: PAYMENT });
    expect(r.status).toBe(201);
    expect(r.attempts).toBe(2);
    expect(new Set(server.seen.map((s) => `${s.key}|${s.body}`)).size).toBe(1);
  });

  it('throws KeyReusedError on a 422, sends it once, and settles the record as failed', async () => {
    server.reply(() => problem(422, 'key-reused'));
    const client = testClient();
    const error = await rejection(client.post('v1/payments', { json: PAYMENT, key: 'order-7' }));
    expect(error).toBeInstanceOf(KeyReusedError);
    expect((error as KeyReusedError).status).toBe(422);
    expect(server.seen).toHaveLength(1);
    expect((await client.journal.get(client.scope, 'order-7'))?.state).toBe('failed');
  });

  it('throws InvalidKeyError on a 400 whose problem type is invalid-key, sent once', async () => {
    server.reply(() => problem(400, 'invalid-key'));
    const error = await rejection(testClient().post('v1/payments', { json: PAYMENT }));
    expect(error).toBeInstanceOf(InvalidKeyError);
    expect((error as InvalidKeyError).status).toBe(400);
    expect(server.seen).toHaveLength(1);
  });

  it('throws HttpError on a 400 invalid request body, never retried', async () => {
    server.reply(() => problem(400, 'invalid-request'));
    const error = await rejection(testClient().post('v1/payments', { json: { amount: -1 } }));
    expect(isOncelyError(error, 'HTTP_ERROR') && error.status).toBe(400);
    expect(server.seen).toHaveLength(1);
  });

  it('throws HttpError on a 413 (body over the server cap), never retried', async () => {
    server.reply(() => problem(413, 'too-large'));
    const error = await rejection(testClient().post('v1/payments', { json: PAYMENT }));
    expect(isOncelyError(error, 'HTTP_ERROR') && error.status).toBe(413);
    expect(server.seen).toHaveLength(1);
  });

  it('retries a 503 (transient, key released) after its Retry-After and succeeds with the same key', async () => {
    server.reply(
      sequence(
        () => problem(503, 'upstream-unavailable', { 'retry-after': '1' }),
        () => json(201, { id: 'pay_1' }),
      ),
    );
    const r = await testClient().post('v1/payments', { json: PAYMENT });
    expect(r).toMatchObject({ status: 201, attempts: 2 });
    expect(server.seen.map((s) => s.key)).toEqual([r.key, r.key]);
  });

  it('retries a 202 (outcome unknown, parked) until the server has the final answer', async () => {
    server.reply(
      sequence(
        () => problem(202, 'outcome-unknown', { 'retry-after': '1' }),
        () => problem(202, 'outcome-unknown', { 'retry-after': '1' }),
        () => json(201, { id: 'pay_1' }),
      ),
    );
    const client = testClient();
    const r = await client.post('v1/payments', { json: PAYMENT });
    expect(r).toMatchObject({ status: 201, attempts: 3 });
    expect((await client.journal.get(client.scope, r.key))?.state).toBe('succeeded');
  });

  it('throws HttpError on a 402 decline, settles it as failed, and replays it from the journal on the next send', async () => {
    server.reply(() => problem(402, 'declined'));
    const client = testClient();
    const op = await client.prepare('POST', 'v1/payments', { json: { ...PAYMENT, amount: 5_000_000 } });
    const first = await rejection(op.send());
    expect(first).toBeInstanceOf(HttpError);
    expect((first as HttpError).status).toBe(402);
    expect((first as HttpError).body).toContain('declined');
    const again = await rejection(op.send());
    expect((again as HttpError).status).toBe(402);
    expect(server.seen).toHaveLength(1);
    expect(await client.journal.get(client.scope, op.key)).toMatchObject({ state: 'failed', result: { status: 402 } });
  });

  it('reports a replayed 402 as replayed', async () => {
    server.reply(() => problem(402, 'declined', { 'idempotency-replay': 'true' }));
    const error = await rejection(testClient().post('v1/payments', { json: PAYMENT }));
    expect(error).toMatchObject({ status: 402, replayed: true });
  });

  it('throws HttpError on a 401 (missing or unknown token), never retried, and leaves the operation pending', async () => {
    server.reply(() => problem(401, 'unauthorized', { 'www-authenticate': 'Bearer' }));
    const client = testClient();
    const error = await rejection(client.post('v1/payments', { json: PAYMENT, key: 'order-401' }));
    expect(isOncelyError(error, 'HTTP_ERROR') && error.status).toBe(401);
    expect(server.seen).toHaveLength(1);
    expect(await client.journal.get(client.scope, 'order-401')).toMatchObject({ state: 'pending', result: null, attempts: 1, lastStatus: 401 });
  });

  it.each([404, 403, 405, 501])('treats a %i as final: exactly one request', async (status) => {
    server.reply(() => problem(status, 'other'));
    const error = await rejection(testClient().post('v1/payments', { json: PAYMENT }));
    expect(error).toMatchObject({ status });
    expect(server.seen).toHaveLength(1);
  });

  it('names the method, URL and key in a final error message', async () => {
    server.reply(() => problem(402, 'declined'));
    const error = (await rejection(testClient().post('v1/payments', { json: PAYMENT, key: 'order-9' }))) as HttpError;
    expect(error.message).toContain('POST http://oncely.test/v1/payments');
    expect(error.message).toContain('order-9');
    expect(error.key).toBe('order-9');
  });
});
