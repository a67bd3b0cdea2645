import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { canRunMysqlTests, openMysqlBackend, type MysqlBackend } from '../support/mysql.js';
import { BASE, createInProcess, payment, type InProcess } from './in-process.js';

// The reference app's SQL runs on every dialect (its inserts-once through ./insert-once.ts): this
// file runs the core of the matrix, recovery and the inbox on MySQL / MariaDB (`mysqlKeyStore`,
// a database per test), as app-postgres.test.ts does on PostgreSQL.
const run = await canRunMysqlTests();
let backend: MysqlBackend;
let t: InProcess | undefined;
beforeAll(async () => {
  if (run) backend = await openMysqlBackend('reference app');
});
afterEach(async () => {
  await t?.app.close(0);
  t = undefined;
});
afterAll(async () => {
  await backend?.close();
});

const onMysql = async (options: Parameters<typeof createInProcess>[0] = {}): Promise<InProcess> =>
  createInProcess({ ...options, store: backend.open(await backend.newDatabase()) });

describe.runIf(run)('reference app on MySQL', () => {
  it('executes, replays byte-identically, refuses a reused key with 422, and reports through every read endpoint', async () => {
    t = await onMysql();
    const first = await t!.post('my-1', payment(1250));
    expect(first.status).toBe(201);
    const body = await first.text();
    const replay = await t!.post('my-1', payment(1250));
    expect(replay.headers.get('idempotency-replay')).toBe('true');
    expect(await replay.text()).toBe(body);
    expect((await t!.post('my-1', payment(1))).status).toBe(422);
    const id = (JSON.parse(body) as { id: string }).id;
    expect(await t!.getJson(`/v1/payments/${id}`)).toEqual(JSON.parse(body));
    expect((await t!.get(`/v1/payments/${id}`, 'test_globex')).status).toBe(404);
    expect(await t!.getJson('/v1/ledger')).toEqual({
      count: 1,
      entries: [{ payment_id: id, amount: 1250, currency: 'EUR', idempotency_key: 'my-1' }],
    });
    expect((await t!.getJson<{ count: number }>('/v1/rail/charges')).count).toBe(1);
    expect(await t!.getJson('/v1/idempotency-keys/my-1')).toMatchObject({ state: 'finished', response_status: 201 });
    expect(await t!.getJson('/healthz', 'test_acme')).toEqual({ status: 'ok', store: 'mysql' });
  });

  it('runs 50 identical concurrent POSTs exactly once', async () => {
    t = await onMysql({ faults: 'slow:ext2:50' });
    const responses = await Promise.all(Array.from({ length: 50 }, () => t!.post('my-burst', payment(5))));
    expect(responses.filter((r) => r.status === 201 && r.headers.get('idempotency-replay') === null)).toHaveLength(1);
    expect(responses.every((r) => r.status === 201 || r.status === 409)).toBe(true);
    expect(await t!.count('ledger_entries')).toBe(1);
    expect(await t!.steps('H1', 'my-burst')).toBe(1);
  });

  it('stores and replays a decline, and completes a payment after a lost rail reply on retry', async () => {
    t = await onMysql({ faults: 'timeout:ext2:1:1' });
    expect((await t!.post('my-lost', payment(10))).status).toBe(202);
    expect((await t!.post('my-lost', payment(10))).status).toBe(201);
    expect((await t!.post('my-big', payment(3_000_000))).status).toBe(402);
    expect((await t!.post('my-big', payment(3_000_000))).headers.get('idempotency-replay')).toBe('true');
    expect((await t!.getJson<{ count: number }>('/v1/rail/charges')).count).toBe(1);
    expect((await t!.getJson<{ count: number }>('/v1/ledger')).count).toBe(1);
  });

  it('applies 50 concurrent redeliveries of one event once', async () => {
    t = await onMysql();
    const deliver = (): Promise<Response> =>
      t!.app.fetch(
        new Request(`${BASE}/v1/events`, {
          method: 'POST',
          headers: { authorization: 'Bearer test_acme', 'content-type': 'application/json' },
          body: JSON.stringify({ id: 'evt-my', type: 'invoice.paid', data: {} }),
        }),
      );
    const answers = await Promise.all(Array.from({ length: 50 }, async () => ((await (await deliver()).json()) as { status: string }).status));
    expect(answers.filter((status) => status === 'processed')).toHaveLength(1);
    expect(await t!.getJson('/v1/events/evt-my')).toEqual({ id: 'evt-my', type: 'invoice.paid', effects: 1 });
  });
});
