import { afterEach, describe, expect, it } from 'vitest';
import { createInProcess, payment, type InProcess } from './in-process.js';

let t: InProcess;
afterEach(async () => {
  await t.app.close(0);
});

const problemType = async (response: Response): Promise<string> => ((await response.json()) as { type: string }).type;

describe('reference app in-process: PROTOCOL.md response matrix', () => {
  it('executes a first payment once: 201 with the payment body, the key echoed, one ledger entry and one rail charge', async () => {
    t = await createInProcess();
    const response = await t.post('pay-1', payment(1250, 'inv-7'));
    expect(response.status).toBe(201);
    expect(response.headers.get('idempotency-key')).toBe('pay-1');
    const body = (await response.json()) as Record<string, unknown>;
    expect(body).toMatchObject({ status: 'succeeded', amount: 1250, currency: 'EUR', reference: 'inv-7' });
    expect(String(body['id'])).toMatch(/^pay_/);
    expect(Number.isNaN(Date.parse(String(body['created_at'])))).toBe(false);
    const ledger = await t.getJson<{ count: number; entries: Array<Record<string, unknown>> }>('/v1/ledger');
    expect(ledger.count).toBe(1);
    expect(ledger.entries[0]).toEqual({ payment_id: body['id'], amount: 1250, currency: 'EUR', idempotency_key: 'pay-1' });
    expect((await t.getJson<{ count: number }>('/v1/rail/charges')).count).toBe(1);
    expect(await t.getJson(`/v1/payments/${String(body['id'])}`)).toEqual(body);
  });

  it('replays a finished key with the stored status and headers, Idempotency-Replay: true and a byte-identical body', async () => {
    t = await createInProcess();
    const first = await t.post('pay-1', payment());
    const firstBody = await first.text();
    const again = await t.post('pay-1', { reference: 'inv-7', currency: 'EUR', amount: 1250 });
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotency-replay')).toBe('true');
    expect(again.headers.get('location')).toBe(first.headers.get('location'));
    expect(await again.text()).toBe(firstBody);
    expect(await t.count('ledger_entries')).toBe(1);
    expect(await t.count('rail_charges')).toBe(1);
    expect(await t.steps('H1', 'pay-1')).toBe(1);
  });

  it('answers 409 with a short Retry-After while the owner is working, when duplicates do not wait', async () => {
    t = await createInProcess({ leaseMs: 4900, faults: 'slow:ext2:800', inFlightWaitMs: 0 });
    const first = t.post('pay-1', payment());
    // Wait until the owner is inside the slow rail call (EXT2_SENT committed, lease just refreshed).
    for (let i = 0; i < 200; i += 1) {
      if ((await t.app.store.load('acme', 'pay-1'))?.recoveryPoint === 'EXT2_SENT') break;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const second = await t.post('pay-1', payment());
    expect(second.status).toBe(409);
    expect(await problemType(second)).toBe('https://oncely.dev/problems/key-in-flight');
    expect(second.headers.get('retry-after')).toBe('1');
    expect((await first).status).toBe(201);
    expect(await t.count('ledger_entries')).toBe(1);
  });

  it('answers 422 to the same key with a different body and leaves the original intact', async () => {
    t = await createInProcess();
    const first = await t.post('pay-1', payment(1250));
    const firstBody = await first.text();
    const reused = await t.post('pay-1', payment(9999));
    expect(reused.status).toBe(422);
    expect(await problemType(reused)).toBe('https://oncely.dev/problems/key-reused');
    const key = await t.getJson<Record<string, unknown>>('/v1/idempotency-keys/pay-1');
    expect(key).toMatchObject({ key: 'pay-1', state: 'finished', response_status: 201 });
    expect(await (await t.post('pay-1', payment(1250))).text()).toBe(firstBody);
    expect(await t.count('ledger_entries')).toBe(1);
    expect(await t.count('payments', 'amount = 9999')).toBe(0);
  });

  it('answers 400 to a missing key and stores nothing', async () => {
    t = await createInProcess();
    const response = await t.post(null, payment());
    expect(response.status).toBe(400);
    expect(await problemType(response)).toBe('https://oncely.dev/problems/invalid-key');
    expect(await t.count('oncely_keys')).toBe(0);
    expect(await t.count('payments')).toBe(0);
  });

  it.each([
    ['amount 0', { amount: 0, currency: 'EUR', reference: 'r' }],
    ['a fractional amount', { amount: 12.5, currency: 'EUR', reference: 'r' }],
    ['an amount given as a string', { amount: '12', currency: 'EUR', reference: 'r' }],
    ['a lower-case currency', { amount: 12, currency: 'eur', reference: 'r' }],
    ['a reference of 141 characters', { amount: 12, currency: 'EUR', reference: 'x'.repeat(141) }],
    ['an unknown field', { amount: 12, currency: 'EUR', reference: 'r', amuont: 1 }],
    ['a JSON array', [1, 2]],
  ])('answers 400 to an invalid body (%s) without consuming the key', async (_name, body) => {
    t = await createInProcess();
    const invalid = await t.post('pay-1', body);
    expect(invalid.status).toBe(400);
    expect(await problemType(invalid)).toBe('https://oncely.dev/problems/invalid-request');
    expect(await t.count('oncely_keys')).toBe(0);
    expect((await t.post('pay-1', payment())).status).toBe(201);
  });

  it('answers 400 to a body that is not JSON, without consuming the key', async () => {
    t = await createInProcess();
    expect((await t.post('pay-1', undefined, { raw: '{"amount": 1,' })).status).toBe(400);
    expect(await t.count('oncely_keys')).toBe(0);
  });

  it('answers 413 to a body over 64 KiB and stores nothing', async () => {
    t = await createInProcess();
    const response = await t.post('pay-1', { ...payment(), reference: 'x'.repeat(70_000) });
    expect(response.status).toBe(413);
    expect(await problemType(response)).toBe('https://oncely.dev/problems/too-large');
    expect(await t.count('oncely_keys')).toBe(0);
  });

  it('answers 503 with Retry-After when an upstream is unavailable, stores nothing final, keeps the request at its recovery point, and a retry executes once', async () => {
    t = await createInProcess({ faults: 'unavailable:ext1:1:1' });
    const transient = await t.post('pay-1', payment());
    expect(transient.status).toBe(503);
    expect(Number(transient.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect((await t.getJson<Record<string, unknown>>('/v1/idempotency-keys/pay-1'))['state']).toBe('started');
    expect(await t.count('risk_checks')).toBe(0);
    // H1 committed: the key keeps its request, so another body under it is a reuse.
    expect((await t.post('pay-1', payment(4_200))).status).toBe(422);
    const retry = await t.post('pay-1', payment());
    expect(retry.status).toBe(201);
    expect(retry.headers.get('idempotency-replay')).toBeNull();
    expect(await t.steps('H1', 'pay-1')).toBe(1);
    expect(await t.count('ledger_entries')).toBe(1);
  });

  it('answers 503 when the rail is unavailable and completes on retry with one charge', async () => {
    t = await createInProcess({ faults: 'unavailable:ext2:1:1' });
    expect((await t.post('pay-1', payment())).status).toBe(503);
    expect(await t.count('rail_charges')).toBe(0);
    expect((await t.post('pay-1', payment())).status).toBe(201);
    expect(await t.steps('H2', 'pay-1')).toBe(1);
    expect((await t.getJson<{ count: number }>('/v1/rail/charges')).count).toBe(1);
  });

  it('declines an amount above 1 000 000 with 402 declined, stores and replays it, and the rail records no charge', async () => {
    t = await createInProcess();
    const declined = await t.post('big-1', payment(1_000_001));
    expect(declined.status).toBe(402);
    const text = await declined.text();
    expect(JSON.parse(text)).toMatchObject({ type: 'https://oncely.dev/problems/declined', status: 402 });
    const replay = await t.post('big-1', payment(1_000_001));
    expect(replay.status).toBe(402);
    expect(replay.headers.get('idempotency-replay')).toBe('true');
    expect(await replay.text()).toBe(text);
    expect((await t.getJson<{ count: number }>('/v1/rail/charges')).count).toBe(0);
    expect((await t.getJson<{ count: number }>('/v1/ledger')).count).toBe(0);
    expect(await t.count('payments', "status = 'declined'")).toBe(1);
    expect((await t.post('ok-1', payment(1_000_000))).status).toBe(201);
  });

  it.each([
    ['no Authorization header', null],
    ['an unknown token', 'test_nobody'],
  ])('answers 401 with WWW-Authenticate: Bearer to %s, on payments and reads alike', async (_name, token) => {
    t = await createInProcess();
    const response = await t.post('pay-1', payment(), { token });
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toBe('Bearer');
    expect(await problemType(response)).toBe('https://oncely.dev/problems/unauthorized');
    expect((await t.get('/v1/ledger', token)).status).toBe(401);
    expect(await t.count('oncely_keys')).toBe(0);
  });

  it('runs exactly one execution for 100 identical concurrent POSTs; the others get 409 with Retry-After or the replay', async () => {
    t = await createInProcess({ faults: 'slow:ext1:20' });
    const responses = await Promise.all(Array.from({ length: 100 }, () => t.post('same', payment())));
    const executed = responses.filter((r) => r.status === 201 && r.headers.get('idempotency-replay') === null);
    const replayed = responses.filter((r) => r.status === 201 && r.headers.get('idempotency-replay') === 'true');
    const inFlight = responses.filter((r) => r.status === 409);
    expect(executed).toHaveLength(1);
    expect(replayed.length + inFlight.length).toBe(99);
    for (const response of inFlight) expect(Number(response.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect((await t.getJson<{ count: number }>('/v1/ledger')).count).toBe(1);
    expect((await t.getJson<{ count: number }>('/v1/rail/charges')).count).toBe(1);
    expect(await t.steps('H1', 'same')).toBe(1);
  });
});
