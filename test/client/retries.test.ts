/** Retries as the server sees them: same key and bytes, Retry-After honoured, unknown outcomes stay pending. */
import { delay } from 'msw';
import { describe, expect, it } from 'vitest';
import { OperationPendingError } from '../../src/errors.js';
import type { AttemptEvent, RetryEvent, SettledEvent } from '../../src/client/results.js';
import { json, problem, sequence, useProtocolServer, type Reply } from '../support/protocol-server.js';
import { PAYMENT, testClient } from './helpers.js';

const server = useProtocolServer();

const transient: Record<string, () => Reply> = {
  'a network error': () => 'network-error',
  '409 key in flight': () => problem(409, 'key-in-flight', { 'retry-after': '1' }),
  '429 rate limited': () => problem(429, 'rate-limited', { 'retry-after': '1' }),
  '503 unavailable': () => problem(503, 'upstream-unavailable', { 'retry-after': '1' }),
  '202 outcome unknown': () => problem(202, 'outcome-unknown', { 'retry-after': '1' }),
  '500 server error': () => problem(500, 'internal'),
  '502 bad gateway': () => new Response('bad gateway', { status: 502 }),
  '504 gateway timeout': () => new Response('gateway timeout', { status: 504 }),
};

describe('retries', () => {
  it.each(Object.keys(transient))('sends the same key and the same body bytes on every attempt after %s', async (name) => {
    const reply = transient[name] as () => Reply;
    server.reply(sequence(reply, reply, () => json(201, { id: 'pay_1' })));
    const r = await testClient().post('v1/payments', { json: PAYMENT });
    expect(r.attempts).toBe(3);
    expect(server.seen).toHaveLength(3);
    expect(server.seen.every((s) => s.key === r.key && s.body === JSON.stringify(PAYMENT))).toBe(true);
  });

  it('keeps key and bytes through a mix of network errors, 409, 429, 503 and 202', async () => {
    server.reply(
      sequence(
        () => 'network-error',
        transient['409 key in flight'] as () => Reply,
        transient['429 rate limited'] as () => Reply,
        transient['503 unavailable'] as () => Reply,
        transient['202 outcome unknown'] as () => Reply,
        () => json(201, { id: 'pay_1' }),
      ),
    );
    const r = await testClient().post('v1/payments', { body: 'amount=1250&currency=EUR', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expect(r.attempts).toBe(6);
    expect(new Set(server.seen.map((s) => `${s.key}\n${s.body}\n${s.headers['content-type']}`))).toEqual(
      new Set([`${r.key}\namount=1250&currency=EUR\napplication/x-www-form-urlencoded`]),
    );
  });

  it('waits at least the Retry-After seconds before the next attempt', async () => {
    const at: number[] = [];
    server.reply((_request, index) => {
      at.push(performance.now());
      return index === 0 ? problem(503, 'upstream-unavailable', { 'retry-after': '1' }) : json(201, {});
    });
    await testClient({ retry: { maxRetryAfterMs: 5_000 } }).post('v1/payments', { json: PAYMENT });
    expect(at).toHaveLength(2);
    expect((at[1] as number) - (at[0] as number)).toBeGreaterThanOrEqual(990);
  });

  it('waits until an HTTP-date Retry-After', async () => {
    const at: number[] = [];
    let until = 0;
    server.reply((_request, index) => {
      at.push(Date.now());
      if (index > 0) return json(201, {});
      // HTTP-dates have whole seconds: two seconds ahead is at least one second away.
      until = Math.floor(Date.now() / 1000) * 1000 + 2_000;
      return problem(429, 'rate-limited', { 'retry-after': new Date(until).toUTCString() });
    });
    await testClient({ retry: { maxRetryAfterMs: 5_000 } }).post('v1/payments', { json: PAYMENT });
    expect(at).toHaveLength(2);
    expect(at[1] as number).toBeGreaterThanOrEqual(until - 5);
  });

  it('treats an attempt that times out as unknown and retries it with the same key', async () => {
    server.reply(async (_request, index) => {
      if (index === 0) await delay(1_000);
      return json(201, { id: 'pay_1' });
    });
    const r = await testClient({ timeoutMs: 100 }).post('v1/payments', { json: PAYMENT });
    expect(r.attempts).toBe(2);
    expect(server.seen[0]?.key).toBe(server.seen[1]?.key);
  });

  it('leaves the operation pending with OperationPendingError when retries run out on an unknown outcome', async () => {
    server.reply(() => 'network-error');
    const client = testClient({ retry: { limit: 2 } });
    const op = await client.prepare('POST', 'v1/payments', { json: PAYMENT });
    const error = await op.send().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OperationPendingError);
    expect((error as OperationPendingError).attempts).toBe(3);
    expect(server.seen).toHaveLength(3);
    expect(await client.journal.get(client.scope, op.key)).toMatchObject({ state: 'pending', attempts: 3 });
    expect(await client.pending()).toMatchObject([{ key: op.key, state: 'pending', attempts: 3 }]);
  });

  it('completes an exhausted operation later with resume(), with the same key and bytes', async () => {
    server.reply(() => problem(503, 'upstream-unavailable', { 'retry-after': '1' }));
    const client = testClient({ retry: { limit: 1 } });
    const op = await client.prepare('POST', 'v1/payments', { json: PAYMENT });
    await expect(op.send()).rejects.toBeInstanceOf(OperationPendingError);
    const firstBody = server.seen[0]?.body;

    server.reply(() => json(201, { id: 'pay_1' }));
    const outcomes = await client.resume();
    expect(outcomes).toMatchObject([{ key: op.key, state: 'succeeded', result: { status: 201, attempts: 3 } }]);
    expect(server.seen).toEqual([expect.objectContaining({ key: op.key, body: firstBody })]);
    expect(await client.pending()).toEqual([]);
  });

  it('gives up within the time budget and keeps the operation pending', async () => {
    server.reply(() => problem(429, 'rate-limited', { 'retry-after': '1' }));
    const client = testClient({ retry: { limit: 100, budgetMs: 200, maxRetryAfterMs: 60 } });
    const error = await client.post('v1/payments', { json: PAYMENT }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OperationPendingError);
    expect((error as OperationPendingError).lastStatus).toBe(429);
    // Waits of 60 ms fit 3 times in 200 ms: at most 4 attempts, far below the limit of 100.
    expect(server.seen.length).toBeLessThanOrEqual(4);
  });

  it('calls onAttempt per attempt, onRetry per retry with its reason, and onSettled once', async () => {
    server.reply(
      sequence(
        () => problem(503, 'upstream-unavailable', { 'retry-after': '1' }),
        () => 'network-error',
        () => json(201, {}),
      ),
    );
    const attempts: AttemptEvent[] = [];
    const retries: RetryEvent[] = [];
    const settled: SettledEvent[] = [];
    const client = testClient({
      onAttempt: (e) => attempts.push(e),
      onRetry: (e) => retries.push(e),
      onSettled: (e) => settled.push(e),
    });
    const r = await client.post('v1/payments', { json: PAYMENT });
    expect(attempts.map((e) => e.attempt)).toEqual([1, 2, 3]);
    expect(retries.map((e) => [e.attempt, e.status, e.delayMs])).toEqual([
      [1, 503, 20],
      [2, undefined, 2],
    ]);
    expect(retries[1]?.error).toBeInstanceOf(Error);
    expect(settled).toEqual([expect.objectContaining({ key: r.key, state: 'succeeded', status: 201, attempts: 3 })]);
  });
});
