import { afterEach, describe, expect, it } from 'vitest';
import { createInProcess, payment, type InProcess } from './in-process.js';
import { MALFORMED_KEYS } from './malformed-keys.js';

let t: InProcess;
afterEach(async () => {
  await t.app.close(0);
});

describe('reference app in-process: keys and callers', () => {
  it(`answers 400 to each of ${MALFORMED_KEYS.length} malformed keys and stores nothing`, async () => {
    t = await createInProcess();
    expect(MALFORMED_KEYS.length).toBeGreaterThanOrEqual(30);
    for (const [name, key] of MALFORMED_KEYS) {
      const response = await t.post(key, payment());
      expect({ name, status: response.status }).toEqual({ name, status: 400 });
    }
    expect(await t.count('oncely_keys')).toBe(0);
    expect(await t.count('payments')).toBe(0);
    expect((await t.getJson<{ count: number }>('/v1/ledger')).count).toBe(0);
    expect(await t.count('rail_charges')).toBe(0);
  });

  it('answers 400 to two Idempotency-Key headers and stores nothing', async () => {
    t = await createInProcess();
    const headers = new Headers();
    headers.append('idempotency-key', 'key-a');
    headers.append('idempotency-key', 'key-b');
    const response = await t.post(null, payment(), { headers });
    expect(response.status).toBe(400);
    expect(await t.count('oncely_keys')).toBe(0);
  });

  it('accepts every character of the key alphabet, a 255-character key and an RFC 8941 sf-string', async () => {
    t = await createInProcess();
    for (const key of ['AZaz09_.:~@/+=-', 'k'.repeat(255)]) expect((await t.post(key, payment())).status).toBe(201);
    const quoted = await t.post('"quoted-1"', payment());
    expect(quoted.status).toBe(201);
    expect(quoted.headers.get('idempotency-key')).toBe('quoted-1');
    expect((await t.post('quoted-1', payment())).headers.get('idempotency-replay')).toBe('true');
    const key = await t.getJson<Record<string, unknown>>(`/v1/idempotency-keys/${encodeURIComponent('AZaz09_.:~@/+=-')}`);
    expect(key['state']).toBe('finished');
    expect(await t.count('ledger_entries')).toBe(3);
  });

  it('charges caller org:acme (key inv-1) and caller org (key acme:inv-1) once each: ids with a colon reach no other caller', async () => {
    t = await createInProcess({ clients: { tok_a: 'org:acme', tok_b: 'org' } });
    const a = await t.post('inv-1', payment(500), { token: 'tok_a' });
    const b = await t.post('acme:inv-1', payment(700), { token: 'tok_b' });
    expect([a.status, b.status]).toEqual([201, 201]);
    expect(b.headers.get('idempotency-replay')).toBeNull();
    const ids = [((await a.json()) as { id: string }).id, ((await b.json()) as { id: string }).id];
    expect(ids[0]).not.toBe(ids[1]);
    // The rail holds one charge per payment, each in its own caller's list.
    expect(await t.count('rail_charges')).toBe(2);
    expect((await t.getJson<{ count: number }>('/v1/rail/charges', 'tok_a')).count).toBe(1);
    expect((await t.getJson<{ count: number; charges: Array<{ amount: number }> }>('/v1/rail/charges', 'tok_b')).charges.map((c) => c.amount)).toEqual([700]);
    expect((await t.getJson<{ count: number }>('/v1/ledger', 'tok_b')).count).toBe(1);
  });

  it('runs another caller using the same key string as its own operation, each executed once', async () => {
    t = await createInProcess();
    const acme = await t.post('shared-key', payment(100));
    const globex = await t.post('shared-key', payment(200), { token: 'test_globex' });
    expect(acme.status).toBe(201);
    expect(globex.status).toBe(201);
    expect(globex.headers.get('idempotency-replay')).toBeNull();
    const acmeId = ((await acme.json()) as { id: string }).id;
    const globexId = ((await globex.json()) as { id: string }).id;
    expect(acmeId).not.toBe(globexId);
    expect((await t.getJson<{ count: number }>('/v1/ledger')).count).toBe(1);
    expect((await t.getJson<{ count: number }>('/v1/ledger', 'test_globex')).count).toBe(1);
    expect((await t.getJson<{ count: number }>('/v1/rail/charges', 'test_globex')).count).toBe(1);
    // The derived keys differ across callers, so the rail saw two instructions, not a replay.
    expect(await t.count('rail_charges')).toBe(2);
  });

  it("answers 404 to another caller's key and payment, exactly like a key or payment that does not exist", async () => {
    t = await createInProcess();
    const acme = await t.post('acme-only', payment());
    const id = ((await acme.json()) as { id: string }).id;
    const foreignKey = await t.get('/v1/idempotency-keys/acme-only', 'test_globex');
    const missingKey = await t.get('/v1/idempotency-keys/never-used', 'test_globex');
    expect(foreignKey.status).toBe(404);
    expect(await foreignKey.text()).toBe(await missingKey.text());
    expect((await t.get(`/v1/payments/${id}`, 'test_globex')).status).toBe(404);
    expect((await t.get('/v1/payments/pay_missing', 'test_globex')).status).toBe(404);
    expect((await t.get(`/v1/payments/${id}`)).status).toBe(200);
    // The foreign lookups changed nothing and did not block globex from using the key itself.
    expect((await t.post('acme-only', payment(), { token: 'test_globex' })).status).toBe(201);
  });

  it('reports a key with its state, recovery point, response status and retention window', async () => {
    t = await createInProcess({ ttlMs: 3_600_000 });
    const before = Date.now();
    await t.post('pay-1', payment());
    const answered = Date.now();
    const key = await t.getJson<Record<string, string | number>>('/v1/idempotency-keys/pay-1');
    expect(key).toMatchObject({ key: 'pay-1', state: 'finished', response_status: 201 });
    // The retention counts from the finish, which came after the admission and before the answer.
    const created = Date.parse(String(key['created_at']));
    const finished = Date.parse(String(key['expires_at'])) - 3_600_000;
    expect(created).toBeGreaterThanOrEqual(before);
    expect(finished).toBeGreaterThanOrEqual(created);
    expect(finished).toBeLessThanOrEqual(answered);
  });

  it('uses the caller map of --clients and refuses the demo tokens then', async () => {
    t = await createInProcess({ clients: { tok_one: 'one' } });
    expect((await t.post('pay-1', payment(), { token: 'tok_one' })).status).toBe(201);
    expect((await t.post('pay-1', payment(), { token: 'test_acme' })).status).toBe(401);
    expect(t.app.clients.ids).toEqual(['one']);
  });

  it('answers /healthz with the store dialect and /metrics in Prometheus text with request outcomes', async () => {
    t = await createInProcess({ metrics: 'open' });
    await t.post('pay-1', payment());
    await t.post('pay-1', payment());
    expect(await (await t.get('/healthz', null)).json()).toEqual({ status: 'ok', store: 'sqlite' });
    const metrics = await (await t.get('/metrics', null)).text();
    expect(metrics).toContain('oncely_requests_total{outcome="executed"} 1');
    expect(metrics).toContain('oncely_requests_total{outcome="replayed"} 1');
  });

  it('keeps /metrics off unless asked, and behind its own token when given one (a caller token does not open it)', async () => {
    t = await createInProcess();
    await t.post('pay-1', payment());
    expect((await t.get('/metrics', null)).status).toBe(404);
    expect((await t.get('/metrics')).status).toBe(404);
    await t.app.close(0);
    t = await createInProcess({ metrics: { token: 'metrics-scraper-token-1' } });
    await t.post('pay-1', payment());
    for (const token of [null, 'test_acme', 'metrics-scraper-token-', 'metrics-scraper-token-12']) {
      const refused = await t.get('/metrics', token);
      expect({ token, status: refused.status }).toEqual({ token, status: 401 });
      expect(refused.headers.get('content-type')).toBe('application/problem+json');
      expect(await refused.text()).not.toContain('oncely_requests_total');
    }
    const scraped = await t.get('/metrics', 'metrics-scraper-token-1');
    expect(scraped.status).toBe(200);
    expect(await scraped.text()).toContain('oncely_requests_total{outcome="executed"} 1');
  });

  it('answers 503 to every request once shutdown has begun', async () => {
    t = await createInProcess();
    const closing = t.app.close(0);
    expect((await t.post('pay-1', payment())).status).toBe(503);
    await closing;
  });

  it('fails closed when the store cannot be reached: 503 with Retry-After on payments, reads, the inbox and /healthz', async () => {
    const errors: unknown[] = [];
    t = await createInProcess({ onError: (error) => errors.push(error) });
    await t.app.store.close?.();
    for (const response of [
      await t.post('pay-1', payment()),
      await t.get('/v1/ledger'),
      await t.get('/v1/idempotency-keys/pay-1'),
      await t.get('/healthz', null),
    ]) {
      expect(response.status).toBe(503);
      expect(Number(response.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    }
    expect(errors).toHaveLength(3);
  });
});
