import { afterEach, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from './fixtures.js';

let app: TestApp;
afterEach(async () => {
  await app.store.close();
});

describe('createIdempotencyHandler: the response matrix', () => {
  it('executes a first request once and echoes the Idempotency-Key', async () => {
    app = await createTestApp();
    const response = await app.post({ amount: 1250 }, { key: 'k-first' });
    expect(response.status).toBe(201);
    expect(response.headers.get('idempotency-key')).toBe('k-first');
    expect(response.headers.get('idempotency-replay')).toBeNull();
    expect(await app.count('ledger')).toBe(1);
    expect(app.rail.applied.size).toBe(1);
  });

  it('replays a finished key byte-identically with Idempotency-Replay: true', async () => {
    app = await createTestApp();
    const first = await app.post({ amount: 1250 });
    const firstBody = await first.text();
    const again = await app.post({ amount: 1250 });
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotency-replay')).toBe('true');
    expect(again.headers.get('content-type')).toBe('application/json');
    expect(await again.text()).toBe(firstBody);
    expect(await app.count('ledger')).toBe(1);
    expect(app.rail.calls).toBe(1);
  });

  it('answers 409 with Retry-After while the same key is in flight', async () => {
    app = await createTestApp({ leaseMs: 5000 });
    let open!: () => void;
    app.rail.gate = new Promise((resolve) => (open = resolve));
    const first = app.post({ amount: 10 });
    while (app.rail.calls === 0) await new Promise((r) => setTimeout(r, 5));
    const second = await app.post({ amount: 10 });
    expect(second.status).toBe(409);
    expect(second.headers.get('content-type')).toBe('application/problem+json');
    expect(Number(second.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(Number(second.headers.get('retry-after'))).toBeLessThanOrEqual(5);
    expect((await second.json()).type).toBe('https://oncely.dev/problems/key-in-flight');
    open();
    expect((await first).status).toBe(201);
    expect(await app.count('ledger')).toBe(1);
  });

  it('answers 422 to the same key with another body, and keeps the original intact', async () => {
    app = await createTestApp();
    const original = await app.post({ amount: 10 });
    const originalBody = await original.text();
    const reused = await app.post({ amount: 11 });
    expect(reused.status).toBe(422);
    expect((await reused.json()).type).toBe('https://oncely.dev/problems/key-reused');
    const replay = await app.post({ amount: 10 });
    expect(await replay.text()).toBe(originalBody);
    expect(await app.count('ledger')).toBe(1);
  });
});
