import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { openPgBackend, type PgBackend } from '../support/pg.js';
import { BASE, createInProcess, payment, type InProcess } from './in-process.js';

// The reference app's SQL is written once for both dialects: this file runs the core of the
// matrix, recovery and the inbox on PostgreSQL (a server when one answers, else PGlite).
let backend: PgBackend;
let t: InProcess;
beforeAll(async () => {
  backend = await openPgBackend('reference app');
});
afterEach(async () => {
  await t.app.close(0);
});
afterAll(async () => {
  await backend.close();
});

const onPostgres = (options: Parameters<typeof createInProcess>[0] = {}): Promise<InProcess> =>
  createInProcess({ ...options, store: backend.open(backend.newSchema()) });

describe('reference app on PostgreSQL', () => {
  it('executes, replays byte-identically, refuses a reused key with 422, and reports through every read endpoint', async () => {
    t = await onPostgres();
    const first = await t.post('pg-1', payment(1250));
    expect(first.status).toBe(201);
    const body = await first.text();
    const replay = await t.post('pg-1', payment(1250));
    expect(replay.headers.get('idempotency-replay')).toBe('true');
    expect(await replay.text()).toBe(body);
    expect((await t.post('pg-1', payment(1))).status).toBe(422);
    const id = (JSON.parse(body) as { id: string }).id;
    expect(await t.getJson(`/v1/payments/${id}`)).toEqual(JSON.parse(body));
    expect((await t.get(`/v1/payments/${id}`, 'test_globex')).status).toBe(404);
    expect(await t.getJson('/v1/ledger')).toEqual({
      count: 1,
      entries: [{ payment_id: id, amount: 1250, currency: 'EUR', idempotency_key: 'pg-1' }],
    });
    expect((await t.getJson<{ count: number }>('/v1/rail/charges')).count).toBe(1);
    expect(await t.getJson('/v1/idempotency-keys/pg-1')).toMatchObject({ state: 'finished', response_status: 201 });
    expect(await t.getJson('/healthz', 'test_acme')).toEqual({ status: 'ok', store: 'postgres' });
  });

  it('runs 50 identical concurrent POSTs exactly once', async () => {
    t = await onPostgres({ faults: 'slow:ext2:50' });
    const responses = await Promise.all(Array.from({ length: 50 }, () => t.post('pg-burst', payment(5))));
    expect(responses.filter((r) => r.status === 201 && r.headers.get('idempotency-replay') === null)).toHaveLength(1);
    expect(responses.every((r) => r.status === 201 || r.status === 409)).toBe(true);
    expect(await t.count('ledger_entries')).toBe(1);
    expect(await t.steps('H1', 'pg-burst')).toBe(1);
  });

  it('stores and replays a decline, and completes a payment after a lost rail reply on retry', async () => {
    t = await onPostgres({ faults: 'timeout:ext2:1:1' });
    expect((await t.post('pg-lost', payment(10))).status).toBe(202);
    expect((await t.post('pg-lost', payment(10))).status).toBe(201);
    expect((await t.post('pg-big', payment(3_000_000))).status).toBe(402);
    expect((await t.post('pg-big', payment(3_000_000))).headers.get('idempotency-replay')).toBe('true');
    expect((await t.getJson<{ count: number }>('/v1/rail/charges')).count).toBe(1);
    expect((await t.getJson<{ count: number }>('/v1/ledger')).count).toBe(1);
  });

  it('applies 50 concurrent redeliveries of one event once', async () => {
    t = await onPostgres();
    const deliver = (): Promise<Response> =>
      t.app.fetch(
        new Request(`${BASE}/v1/events`, {
          method: 'POST',
          headers: { authorization: 'Bearer test_acme', 'content-type': 'application/json' },
          body: JSON.stringify({ id: 'evt-pg', type: 'invoice.paid', data: {} }),
        }),
      );
    const answers = await Promise.all(Array.from({ length: 50 }, async () => ((await (await deliver()).json()) as { status: string }).status));
    expect(answers.filter((status) => status === 'processed')).toHaveLength(1);
    expect(await t.getJson('/v1/events/evt-pg')).toEqual({ id: 'evt-pg', type: 'invoice.paid', effects: 1 });
  });
});
