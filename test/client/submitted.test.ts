/**
 * Only an operation somebody asked to send is ever sent by resume(): a prepared one (a key minted
 * when a checkout page renders) waits for its send(). And a 401 settles nothing: the operation
 * stays pending until credentials that work resume it.
 */
import { describe, expect, it } from 'vitest';
import { HttpError, isOncelyError } from '../../src/errors.js';
import { memoryJournal } from '../../src/journal/memory.js';
import type { Journal, OperationPatch } from '../../src/journal/types.js';
import { dedupe, json, problem, useProtocolServer } from '../support/protocol-server.js';
import { PAYMENT, SCOPE, TOKEN, testClient } from './helpers.js';

const server = useProtocolServer();

/** A hook that throws stops the send right before its first request: a crash at that moment. */
const crashBeforeFirstAttempt = (): never => {
  throw new Error('process gone');
};

/** A memory journal that logs its writes into `log`, next to the requests the server logs there. */
function loggingJournal(log: string[]): Journal {
  const inner = memoryJournal();
  return {
    ...inner,
    put: (operation) => {
      log.push(`put submitted=${String(operation.submitted === true)}`);
      return inner.put(operation);
    },
    update: (scope, key, patch: OperationPatch) => {
      log.push(`update ${Object.keys(patch).sort().join(',')}`);
      return inner.update(scope, key, patch);
    },
  };
}

describe('prepared and submitted operations', () => {
  it('never sends an operation that was only prepared: resume() makes zero requests and leaves it pending', async () => {
    const journal = memoryJournal();
    const op = await testClient({ journal }).prepare('POST', 'v1/payments', { json: PAYMENT });
    const later = testClient({ journal });
    expect(await later.resume()).toEqual([]);
    expect(server.seen).toHaveLength(0);
    expect(await journal.get(SCOPE, op.key)).toMatchObject({ state: 'pending', submittedAt: null, attempts: 0 });
  });

  it('lists prepared and submitted operations in pending(), telling them apart by submittedAt', async () => {
    const journal = memoryJournal();
    const client = testClient({ journal });
    const prepared = await client.prepare('POST', 'v1/payments', { json: PAYMENT, key: 'order-viewed' });
    const crashing = testClient({ journal, onAttempt: crashBeforeFirstAttempt });
    await crashing.post('v1/payments', { json: PAYMENT, key: 'order-paid' }).catch(() => undefined);
    const listed = await testClient({ journal }).pending();
    expect(listed.map((p) => [p.key, p.state === 'damaged' ? p.reason : p.submittedAt === null])).toEqual([
      [prepared.key, true],
      ['order-paid', false],
    ]);
    expect(server.seen).toHaveLength(0);
  });

  it('resumes an operation whose send() was called but crashed before its first attempt: one request', async () => {
    const journal = memoryJournal();
    const crashing = testClient({ journal, onAttempt: crashBeforeFirstAttempt });
    const op = await crashing.prepare('POST', 'v1/payments', { json: PAYMENT });
    await expect(op.send()).rejects.toThrow('process gone');
    expect(server.seen).toHaveLength(0);
    expect((await journal.get(SCOPE, op.key))?.submittedAt).toEqual(expect.any(Number));

    const outcomes = await testClient({ journal }).resume();
    expect(outcomes).toMatchObject([{ key: op.key, state: 'succeeded', result: { status: 201 } }]);
    expect(server.seen.map((s) => s.key)).toEqual([op.key]);
  });

  it('resumes an operation whose post() crashed before its first attempt: one request', async () => {
    const journal = memoryJournal();
    const crashing = testClient({ journal, onAttempt: crashBeforeFirstAttempt });
    await expect(crashing.post('v1/payments', { json: PAYMENT, key: 'order-7' })).rejects.toThrow('process gone');
    expect(server.seen).toHaveLength(0);
    expect(await testClient({ journal }).resume()).toMatchObject([{ key: 'order-7', state: 'succeeded' }]);
    expect(server.seen.map((s) => s.key)).toEqual(['order-7']);
  });

  it('journals post() as submitted in its one put, with no extra write before the request', async () => {
    const log: string[] = [];
    server.reply(() => {
      log.push('request');
      return json(201, {});
    });
    await testClient({ journal: loggingJournal(log) }).post('v1/payments', { json: PAYMENT });
    expect(log.slice(0, 2)).toEqual(['put submitted=true', 'request']);
  });

  it('marks a prepared operation submitted, durably, before the first request of its send(), and only once', async () => {
    const log: string[] = [];
    server.reply(() => {
      log.push('request');
      return json(201, {});
    });
    const client = testClient({ journal: loggingJournal(log) });
    const op = await client.prepare('POST', 'v1/payments', { json: PAYMENT });
    await op.send();
    await op.send();
    expect(log.slice(0, 3)).toEqual(['put submitted=false', 'update submittedAt', 'request']);
    expect(log.filter((entry) => entry === 'update submittedAt')).toHaveLength(1);
  });
});

describe('a 401 leaves the operation pending', () => {
  it('resume() with a bad token reports a 401 and keeps the record pending; with the right token it completes with one effect', async () => {
    const effect = dedupe(() => json(201, { id: 'pay_1' }));
    server.reply((request, index) => (request.headers.authorization === TOKEN ? effect(request, index) : problem(401, 'unauthorized')));
    const journal = memoryJournal();
    const crashing = testClient({ journal, onAttempt: crashBeforeFirstAttempt });
    await crashing.post('v1/payments', { json: PAYMENT, key: 'order-401' }).catch(() => undefined);

    const settled: string[] = [];
    const wrong = testClient({ journal, headers: { authorization: 'Bearer wrong' }, onSettled: (e) => settled.push(e.key) });
    const [refused] = await wrong.resume();
    expect(refused).toMatchObject({ key: 'order-401', state: 'pending' });
    expect(refused?.state === 'pending' && refused.error).toBeInstanceOf(HttpError);
    expect(refused?.state === 'pending' && isOncelyError(refused.error, 'HTTP_ERROR') && refused.error.status).toBe(401);
    expect(server.seen).toHaveLength(1);
    expect(settled).toEqual([]);
    expect(await journal.get(SCOPE, 'order-401')).toMatchObject({ state: 'pending', result: null, lastStatus: 401 });
    expect(await wrong.pending()).toMatchObject([{ key: 'order-401', state: 'pending' }]);

    const right = testClient({ journal });
    expect(await right.resume()).toMatchObject([{ key: 'order-401', state: 'succeeded', result: { status: 201 } }]);
    expect(effect.effects()).toBe(1);
    expect(await journal.get(SCOPE, 'order-401')).toMatchObject({ state: 'succeeded' });
    expect(await right.resume()).toEqual([]);
  });

  it('a send() answered 401 is not retried and a later send() with the same handle sends again', async () => {
    let authorized = false;
    server.reply(() => (authorized ? json(201, {}) : problem(401, 'unauthorized')));
    const op = await testClient().prepare('POST', 'v1/payments', { json: PAYMENT });
    const error = await op.send().catch((e: unknown) => e);
    expect(isOncelyError(error, 'HTTP_ERROR') && error.status).toBe(401);
    expect(server.seen).toHaveLength(1);
    authorized = true;
    await expect(op.send()).resolves.toMatchObject({ status: 201, attempts: 2 });
  });
});
