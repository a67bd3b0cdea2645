import { createServer } from 'node:net';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createClient, type Client } from '../../src/index.js';
import { isOncelyError } from '../../src/errors.js';
import { memoryJournal } from '../../src/journal/memory.js';
import { BASE, createInProcess, payment, type InProcess } from './in-process.js';
import { getJson, spawnServe, tempDir } from './serve-process.js';

let t: InProcess | undefined;
let client: Client | undefined;
afterEach(async () => {
  await client?.close();
  await t?.app.close(0);
  client = undefined;
  t = undefined;
});

/** A client wired straight to the app's fetch core: no socket, same bytes. */
function inProcessClient(app: InProcess, token = 'test_acme'): Client {
  return createClient({
    baseUrl: BASE,
    headers: { authorization: `Bearer ${token}` },
    journal: memoryJournal(),
    fetch: (request) => app.app.fetch(request),
    retry: { limit: 5, backoffMs: 10, maxRetryAfterMs: 50, budgetMs: 10_000 },
  });
}

describe('the oncely client against the reference app (in-process)', () => {
  it('pays once, and a double click on one prepared operation is still one payment', async () => {
    t = await createInProcess();
    client = inProcessClient(t);
    const op = await client.prepare('POST', 'v1/payments', { json: payment(1250) });
    const [first, second] = await Promise.all([op.send<{ id: string; status: string }>(), op.send<{ id: string }>()]);
    expect(first.status).toBe(201);
    expect(first.data.status).toBe('succeeded');
    expect(second.data.id).toBe(first.data.id);
    expect((await t.getJson<{ count: number; entries: Array<{ idempotency_key: string }> }>('/v1/ledger')).entries).toEqual([
      expect.objectContaining({ idempotency_key: first.key }),
    ]);
    expect(await t.count('rail_charges')).toBe(1);
  });

  it.each([
    ['a lost rail reply (202)', 'timeout:ext2:1:1'],
    ['a lost rail request (202)', 'lost:ext2:1:1'],
    ['an unavailable risk check (503)', 'unavailable:ext1:1:1'],
  ])('retries through %s with the same key until the payment completes once', async (_name, faults) => {
    t = await createInProcess({ faults });
    client = inProcessClient(t);
    const result = await client.post<{ status: string }>('v1/payments', { json: payment(300) });
    expect(result.status).toBe(201);
    expect(result.attempts).toBeGreaterThanOrEqual(2);
    expect((await t.getJson<{ count: number }>('/v1/ledger')).count).toBe(1);
    expect((await t.getJson<{ count: number }>('/v1/rail/charges')).count).toBe(1);
    expect(await t.count('oncely_keys')).toBe(1);
  });

  it('settles a decline as a final failure (402) without retrying, and the rail records no charge', async () => {
    t = await createInProcess();
    client = inProcessClient(t);
    const failure = await client.post('v1/payments', { json: payment(5_000_000) }).catch((error: unknown) => error);
    expect(isOncelyError(failure, 'HTTP_ERROR') && failure.status).toBe(402);
    expect(await client.pending()).toEqual([]);
    expect(t.app.metrics.snapshot().requests.executed).toBe(1);
    expect((await t.getJson<{ count: number }>('/v1/rail/charges')).count).toBe(0);
  });

  it('derives the same key from a natural reference, so a resubmitted row replays instead of paying twice', async () => {
    t = await createInProcess();
    client = inProcessClient(t);
    const row = ['acme-payroll', 'pay', '2026-12-01', 'row-17'];
    const first = await client.post('v1/payments', { json: payment(900, 'row-17'), naturalKey: row });
    const other = inProcessClient(t);
    const again = await other.post('v1/payments', { json: payment(900, 'row-17'), naturalKey: row });
    await other.close();
    expect(again.key).toBe(first.key);
    expect(again.replayed).toBe(true);
    expect((await t.getJson<{ count: number }>('/v1/ledger')).count).toBe(1);
  });
});

describe('the oncely client against oncely serve (real HTTP)', () => {
  const { dir, cleanup } = tempDir();
  afterAll(cleanup);

  const freePort = (): Promise<number> =>
    new Promise((resolve) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const { port } = probe.address() as { port: number };
        probe.close(() => resolve(port));
      });
    });

  it('keeps a payment pending across a server crash and completes it once with resume() after the restart', async () => {
    const db = `${dir}/e2e.db`;
    const port = await freePort();
    const args = ['--db', db, '--lease', '300ms', '--recovery-interval', '0'];
    const crashing = await spawnServe([...args, '--port', String(port), '--faults', 'crash-after:EXT2_SENT:1']);
    client = createClient({
      baseUrl: crashing.url,
      headers: { authorization: 'Bearer test_acme' },
      journal: memoryJournal(),
      retry: { limit: 2, backoffMs: 50, budgetMs: 1_500 },
    });
    const outcome = await client.post('v1/payments', { json: payment(4321, 'e2e') }).catch((error: unknown) => error);
    expect((await crashing.exited).signal).toBe('SIGKILL');
    expect(isOncelyError(outcome, 'OPERATION_PENDING')).toBe(true);
    expect(await client.pending()).toHaveLength(1);

    const restarted = await spawnServe([...args, '--port', String(port)]);
    try {
      const resumed = await client.resume();
      expect(resumed.map((r) => r.state)).toEqual(['succeeded']);
      expect(await client.pending()).toEqual([]);
      expect((await getJson<{ count: number }>(restarted.url, '/v1/ledger')).body.count).toBe(1);
      expect((await getJson<{ count: number }>(restarted.url, '/v1/rail/charges')).body.count).toBe(1);
    } finally {
      await restarted.stop();
    }
  });
});
