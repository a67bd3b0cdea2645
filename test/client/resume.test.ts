/** After a crash or reload: pending operations are resent byte for byte, claimed first, and never when expired. */
import { describe, expect, it } from 'vitest';
import { ExpiredOperationError, HttpError, JournalError } from '../../src/errors.js';
import { fingerprint } from '../../src/fingerprint.js';
import { memoryJournal } from '../../src/journal/memory.js';
import type { Journal, NewOperation } from '../../src/journal/types.js';
import { json, problem, useProtocolServer } from '../support/protocol-server.js';
import { PAYMENT, TOKEN, testClient } from './helpers.js';

const server = useProtocolServer();

const BODY = '{ "reference": "inv-7",  "currency": "EUR", "amount": 1250 }';

/** What a previous process left behind: an operation journaled with odd but exact bytes (and their fingerprint, checked before any resend). */
const LEFT_BEHIND: NewOperation = {
  scope: 'http://oncely.test',
  key: 'crashed-op-1',
  method: 'POST',
  url: 'http://oncely.test/v1/payments',
  headers: { 'content-type': 'application/json', 'x-tenant': 'acme' },
  body: BODY,
  fingerprint: await fingerprint('POST', '/v1/payments', BODY, { contentType: 'application/json' }),
  // Its send() had been called: only submitted operations are resumed.
  submitted: true,
};

describe('resume()', () => {
  it('resends exactly the journaled bytes with the journaled key, adding the current credentials', async () => {
    const journal = memoryJournal();
    await journal.put(LEFT_BEHIND);
    const outcomes = await testClient({ journal }).resume();
    expect(outcomes).toMatchObject([{ key: 'crashed-op-1', state: 'succeeded', result: { status: 201 } }]);
    expect(server.seen).toHaveLength(1);
    expect(server.seen[0]).toMatchObject({ method: 'POST', path: '/v1/payments', key: 'crashed-op-1', body: LEFT_BEHIND.body });
    expect(server.seen[0]?.headers).toMatchObject({ 'content-type': 'application/json', 'x-tenant': 'acme', authorization: TOKEN });
    expect(await journal.get(LEFT_BEHIND.scope, 'crashed-op-1')).toMatchObject({ state: 'succeeded', attempts: 1 });
  });

  it('uses the credentials of the resuming client, not those of the one that prepared the operation', async () => {
    const journal = memoryJournal();
    server.reply(() => 'network-error');
    await testClient({ journal, retry: { limit: 0 } })
      .post('v1/payments', { json: PAYMENT })
      .catch(() => undefined);
    server.reply(() => json(201, {}));
    await testClient({ journal, headers: { authorization: 'Bearer rotated' } }).resume();
    expect(server.seen.map((s) => s.headers.authorization)).toEqual(['Bearer rotated']);
  });

  it('reports a final answer as failed with its typed error and settles the record', async () => {
    const journal = memoryJournal();
    await journal.put(LEFT_BEHIND);
    server.reply(() => problem(402, 'declined', { 'idempotency-replay': 'true' }));
    const [outcome] = await testClient({ journal }).resume();
    expect(outcome).toMatchObject({ key: 'crashed-op-1', state: 'failed' });
    expect(outcome?.state === 'failed' && outcome.error).toBeInstanceOf(HttpError);
    expect(await journal.get(LEFT_BEHIND.scope, 'crashed-op-1')).toMatchObject({ state: 'failed', result: { status: 402, replayed: true } });
  });

  it('reports an operation still unknown as pending and keeps it resumable', async () => {
    const journal = memoryJournal();
    await journal.put(LEFT_BEHIND);
    server.reply(() => problem(202, 'outcome-unknown', { 'retry-after': '1' }));
    const client = testClient({ journal, retry: { limit: 1 } });
    expect(await client.resume()).toMatchObject([{ key: 'crashed-op-1', state: 'pending', error: { code: 'OPERATION_PENDING' } }]);
    expect(await client.pending()).toMatchObject([{ key: 'crashed-op-1', state: 'pending', attempts: 2, lastStatus: 202 }]);
  });

  it('never resends an operation older than keyTtlMs: reports it expired and lists it as expired', async () => {
    const journal = memoryJournal();
    await journal.put({ ...LEFT_BEHIND, createdAt: Date.now() - 25 * 3_600_000 });
    const client = testClient({ journal });
    expect(await client.pending()).toMatchObject([{ key: 'crashed-op-1', state: 'expired' }]);
    const [outcome] = await client.resume();
    expect(outcome).toMatchObject({ key: 'crashed-op-1', state: 'expired' });
    expect(outcome?.state === 'expired' && outcome.error).toBeInstanceOf(ExpiredOperationError);
    expect(server.seen).toHaveLength(0);
    expect((await journal.get(LEFT_BEHIND.scope, 'crashed-op-1'))?.state).toBe('pending');
  });

  it('refuses to send an expired operation through prepare() and send() too', async () => {
    const journal = memoryJournal();
    const op = await testClient({ journal }).prepare('POST', 'v1/payments', { json: PAYMENT });
    await new Promise((resolve) => setTimeout(resolve, 20));
    const later = testClient({ journal, keyTtlMs: 10 });
    const same = await later.prepare('POST', 'v1/payments', { json: PAYMENT, key: op.key });
    await expect(same.send()).rejects.toBeInstanceOf(ExpiredOperationError);
    expect(server.seen).toHaveLength(0);
    expect((await journal.get(later.scope, op.key))?.state).toBe('pending');
  });

  it('skips an operation another process holds a claim on, sending nothing', async () => {
    const journal = memoryJournal();
    await journal.put(LEFT_BEHIND);
    expect(await journal.claim(LEFT_BEHIND.scope, 'crashed-op-1', 'other-process', 60_000)).toBe(true);
    expect(await testClient({ journal }).resume()).toEqual([{ key: 'crashed-op-1', state: 'skipped' }]);
    expect(server.seen).toHaveLength(0);
  });

  it('lets two clients sharing a journal send a pending operation only once at a time', async () => {
    const journal = memoryJournal();
    let release = (): void => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    server.reply(async () => {
      await held;
      return json(201, {});
    });
    const a = testClient({ journal, ownerId: 'process-a' });
    const b = testClient({ journal, ownerId: 'process-b' });
    const sending = a.post('v1/payments', { json: PAYMENT });
    await server.arrival(1);
    const [outcome] = await b.resume();
    expect(outcome).toMatchObject({ state: 'skipped' });
    release();
    await sending;
    expect(server.seen).toHaveLength(1);
    expect(await b.resume()).toEqual([]);
  });

  it('releases its claim when it is done, so another process can resume later', async () => {
    const journal = memoryJournal();
    await journal.put(LEFT_BEHIND);
    server.reply(() => 'network-error');
    await testClient({ journal, ownerId: 'process-a', retry: { limit: 0 } }).resume();
    server.reply(() => json(201, {}));
    expect(await testClient({ journal, ownerId: 'process-b' }).resume()).toMatchObject([{ state: 'succeeded' }]);
  });

  it('returns a stored result after a restart without sending again', async () => {
    const journal = memoryJournal();
    const first = await testClient({ journal }).post('v1/payments', { json: PAYMENT, key: 'order-1' });
    const again = await testClient({ journal }).post('v1/payments', { json: PAYMENT, key: 'order-1' });
    expect(again).toMatchObject({ status: first.status, key: 'order-1', data: first.data });
    expect(server.seen).toHaveLength(1);
  });

  it('stops and throws when the journal itself fails, instead of reporting the operation failed', async () => {
    const inner = memoryJournal();
    await inner.put(LEFT_BEHIND);
    const broken: Journal = {
      ...inner,
      update: () => Promise.reject(new JournalError('disk full', { path: '/tmp/j.db', hint: 'free some space' })),
    };
    await expect(testClient({ journal: broken }).resume()).rejects.toBeInstanceOf(JournalError);
    expect((await inner.get(LEFT_BEHIND.scope, 'crashed-op-1'))?.state).toBe('pending');
  });

  it('resumes many pending operations, each once', async () => {
    const journal: Journal = memoryJournal();
    await journal.putMany(Array.from({ length: 10 }, (_, i) => ({ ...LEFT_BEHIND, key: `op-${i}` })));
    const outcomes = await testClient({ journal }).resume({ concurrency: 3 });
    expect(outcomes.map((o) => o.state)).toEqual(Array(10).fill('succeeded'));
    expect(server.seen.map((s) => s.key).sort()).toEqual(Array.from({ length: 10 }, (_, i) => `op-${i}`).sort());
  });
});
