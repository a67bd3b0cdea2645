/** Following an operation: its state, a subscription to its changes, a settlement anyone can await. */
import { describe, expect, it } from 'vitest';
import type { OperationSnapshot } from '../../src/client/follow.js';
import { HttpError, OperationPendingError } from '../../src/errors.js';
import { memoryJournal } from '../../src/journal/memory.js';
import { json, problem, sequence, useProtocolServer } from '../support/protocol-server.js';
import { PAYMENT, testClient } from './helpers.js';

const server = useProtocolServer();

function record(states: OperationSnapshot[]): (snapshot: OperationSnapshot) => void {
  return (snapshot) => void states.push(snapshot);
}

describe('an operation followed through its state', () => {
  it('starts prepared, goes through sending and ends succeeded with the result, told to subscribers in order', async () => {
    const client = testClient();
    const op = await client.prepare('POST', 'v1/payments', { json: PAYMENT });
    expect(op.state).toEqual({ state: 'prepared' });
    const states: OperationSnapshot[] = [];
    op.subscribe(record(states));

    const result = await op.send();

    expect(states.map((s) => s.state)).toEqual(['sending', 'sending', 'succeeded']);
    expect(states[0]).toEqual({ state: 'sending', elsewhere: false });
    expect(op.state).toEqual({ state: 'succeeded', result });
  });

  it('reports waiting with the time of the next attempt while the server asks to retry later', async () => {
    server.reply(
      sequence(
        () => problem(503, 'busy', { 'retry-after': '1' }),
        () => json(201, { id: 'pay_1' }),
      ),
    );
    const client = testClient();
    const op = await client.prepare('POST', 'v1/payments', { json: PAYMENT });
    const states: OperationSnapshot[] = [];
    op.subscribe(record(states));
    const before = Date.now();

    await op.send();

    const waiting = states.find((s) => s.state === 'waiting');
    expect(waiting).toMatchObject({ state: 'waiting', status: 503 });
    expect(waiting?.state === 'waiting' && waiting.retryAt).toBeGreaterThanOrEqual(before);
    expect(states.at(-1)?.state).toBe('succeeded');
  });

  it('reports pending with no retry time when the outcome is still unknown, and with the 401 that settled nothing', async () => {
    server.reply(() => 'network-error');
    const client = testClient({ retry: { limit: 1 } });
    const op = await client.prepare('POST', 'v1/payments', { json: PAYMENT });
    const states: OperationSnapshot[] = [];
    op.subscribe(record(states));
    await expect(op.send()).rejects.toBeInstanceOf(OperationPendingError);
    expect(states.some((s) => s.state === 'pending' && s.retryAt !== null)).toBe(true);
    expect(op.state).toMatchObject({ state: 'pending', retryAt: null, error: { code: 'OPERATION_PENDING' } });

    server.reply(() => problem(401, 'unauthorized'));
    await expect(op.send()).rejects.toBeInstanceOf(HttpError);
    expect(op.state).toMatchObject({ state: 'pending', retryAt: null, error: { status: 401 } });
  });

  it('ends failed with the typed error on a final non-2xx, and stays there', async () => {
    server.reply(() => problem(402, 'declined'));
    const op = await testClient().prepare('POST', 'v1/payments', { json: PAYMENT });
    await expect(op.send()).rejects.toBeInstanceOf(HttpError);
    expect(op.state).toMatchObject({ state: 'failed', error: { status: 402 } });
    await expect(op.send()).rejects.toBeInstanceOf(HttpError);
    expect(op.state.state).toBe('failed');
    expect(server.seen).toHaveLength(1);
  });

  it('is expired, without a request, for an operation older than keyTtlMs', async () => {
    const journal = memoryJournal();
    const op = await testClient({ journal }).prepare('POST', 'v1/payments', { json: PAYMENT });
    await new Promise((resolve) => setTimeout(resolve, 20));
    const later = await testClient({ journal, keyTtlMs: 10 }).prepare('POST', 'v1/payments', { json: PAYMENT, key: op.key });
    expect(later.state.state).toBe('expired');
    expect(server.seen).toHaveLength(0);
  });

  it('shows a settled operation as such on a new handle (a reload), from the journal', async () => {
    const journal = memoryJournal();
    const paid = await testClient({ journal }).post<{ id: string }>('v1/payments', { json: PAYMENT, naturalKey: ['order', 7] });
    const reloaded = await testClient({ journal }).prepare('POST', 'v1/payments', { json: PAYMENT, naturalKey: ['order', 7] });
    expect(reloaded.state).toMatchObject({ state: 'succeeded', result: { status: paid.status, key: paid.key, data: paid.data } });
  });

  it('shares one state between two handles of the same key in one client (a StrictMode double effect)', async () => {
    const client = testClient();
    const [a, b] = await Promise.all([
      client.prepare('POST', 'v1/payments', { json: PAYMENT, naturalKey: ['order', 8] }),
      client.prepare('POST', 'v1/payments', { json: PAYMENT, naturalKey: ['order', 8] }),
    ]);
    const heard: string[] = [];
    b.subscribe((s) => heard.push(s.state));
    await Promise.all([a.send(), b.send()]);
    expect(server.seen).toHaveLength(1);
    expect(b.state.state).toBe('succeeded');
    expect(heard.at(-1)).toBe('succeeded');
  });

  it('stops telling a listener once it unsubscribed', async () => {
    const op = await testClient().prepare('POST', 'v1/payments', { json: PAYMENT });
    const heard: string[] = [];
    const stop = op.subscribe((s) => heard.push(s.state));
    stop();
    await op.send();
    expect(heard).toEqual([]);
  });
});

describe('settled()', () => {
  it('resolves for every caller with the one result of the send in flight here', async () => {
    const op = await testClient().prepare('POST', 'v1/payments', { json: PAYMENT });
    const followers = [op.settled(), op.settled()];
    const sent = op.send();
    const [first, second] = await Promise.all(followers);
    expect(first).toBe(await sent);
    expect(second).toBe(first);
    expect(server.seen).toHaveLength(1);
  });

  it('rejects with the typed error when the operation fails', async () => {
    server.reply(() => problem(402, 'declined'));
    const op = await testClient().prepare('POST', 'v1/payments', { json: PAYMENT });
    const following = op.settled();
    await op.send().catch(() => undefined);
    await expect(following).rejects.toMatchObject({ status: 402 });
  });

  it('resolves when another client sharing the journal (another tab) settles it, sending nothing itself', async () => {
    const journal = memoryJournal();
    server.reply(() => 'network-error');
    const first = testClient({ journal, ownerId: 'tab-a', retry: { limit: 0 } });
    const op = await first.prepare('POST', 'v1/payments', { json: PAYMENT, naturalKey: ['order', 9] });
    await op.send().catch(() => undefined);
    const follower = await testClient({ journal, ownerId: 'tab-b' }).prepare('POST', 'v1/payments', { json: PAYMENT, naturalKey: ['order', 9] });
    expect(follower.state).toMatchObject({ state: 'pending' });
    const following = follower.settled();

    server.reply(() => json(201, { id: 'pay_9' }));
    await op.send();

    await expect(following).resolves.toMatchObject({ status: 201, data: { id: 'pay_9' } });
    expect(follower.state.state).toBe('succeeded');
    expect(server.seen).toHaveLength(1);
  });

  it('stops waiting when its signal aborts, leaving the operation alone', async () => {
    const op = await testClient().prepare('POST', 'v1/payments', { json: PAYMENT });
    const controller = new AbortController();
    const following = op.settled({ signal: controller.signal });
    controller.abort(new Error('page left'));
    await expect(following).rejects.toThrow('page left');
    expect(op.state.state).toBe('prepared');
  });
});

describe('resume({ follow: true })', () => {
  it('waits for the operation another client is sending and reports its outcome instead of skipped, with one request', async () => {
    const journal = memoryJournal();
    let release = (): void => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    server.reply(async () => {
      await held;
      return json(201, { id: 'pay_1' });
    });
    const a = testClient({ journal, ownerId: 'tab-a' });
    const b = testClient({ journal, ownerId: 'tab-b', retry: { backoffMs: 5, budgetMs: 30_000 } });
    const sending = a.post('v1/payments', { json: PAYMENT });
    await server.arrival(1);

    const resuming = b.resume({ follow: true });
    setTimeout(release, 50);

    expect(await resuming).toMatchObject([{ state: 'succeeded', result: { status: 201 } }]);
    await sending;
    expect(server.seen).toHaveLength(1);
  });
});

describe("the client's view of every operation it follows", () => {
  it('tells client.subscribe() listeners each change of each operation, and lists in following() those that can still change', async () => {
    const client = testClient();
    const heard: Array<[string, string]> = [];
    const stop = client.subscribe((key, snapshot) => void heard.push([key, snapshot.state]));
    const paid = await client.prepare('POST', 'v1/payments', { json: PAYMENT });
    const later = await client.prepare('POST', 'v1/payments', { json: { ...PAYMENT, reference: 'inv-8' } });
    expect([...client.following()].map(([key, snapshot]) => [key, snapshot.state])).toEqual([
      [paid.key, 'prepared'],
      [later.key, 'prepared'],
    ]);

    await paid.send();

    expect(heard).toEqual([
      [paid.key, 'prepared'],
      [later.key, 'prepared'],
      [paid.key, 'sending'],
      [paid.key, 'sending'],
      [paid.key, 'succeeded'],
    ]);
    // Settled: the journal has it, and the client no longer follows it.
    expect([...client.following().keys()]).toEqual([later.key]);
    stop();
    await later.send();
    expect(heard).toHaveLength(5);
  });
});
