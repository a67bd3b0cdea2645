import { afterEach, describe, expect, it } from 'vitest';
import { createInProcess, payment, type InProcess } from './in-process.js';

let t: InProcess;
afterEach(async () => {
  await t.app.close(0);
});

const fastPark = { baseMs: 20, maxMs: 40 };
const settle = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function keyState(key: string): Promise<{ state: string; recovery_point: string | null }> {
  return t.getJson(`/v1/idempotency-keys/${key}`);
}

describe('reference app in-process: unknown outcomes and recovery', () => {
  it.each([
    ['the rail applied it and the reply was lost', 'timeout:ext2:1:1', 1],
    ['the rail never got it', 'lost:ext2:1:1', 0],
  ])('answers 202 when the rail call times out (%s), then completes on retry with one charge', async (_name, faults, chargedBefore) => {
    t = await createInProcess({ faults });
    const unknown = await t.post('pay-1', payment());
    expect(unknown.status).toBe(202);
    expect(((await unknown.json()) as { type: string }).type).toBe('https://oncely.dev/problems/outcome-unknown');
    expect(Number(unknown.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(await keyState('pay-1')).toMatchObject({ state: 'started', recovery_point: 'EXT2_SENT' });
    expect(await t.count('rail_charges')).toBe(chargedBefore);
    expect(await t.count('ledger_entries')).toBe(0);

    const retry = await t.post('pay-1', payment());
    expect(retry.status).toBe(201);
    expect((await t.getJson<{ count: number }>('/v1/rail/charges')).count).toBe(1);
    expect((await t.getJson<{ count: number }>('/v1/ledger')).count).toBe(1);
    expect(await t.steps('H1', 'pay-1')).toBe(1);
    expect(await t.steps('H2', 'pay-1')).toBe(1);
  });

  it('answers 202 when the risk check times out and completes on retry without re-running H1', async () => {
    t = await createInProcess({ faults: 'timeout:ext1:1:1' });
    expect((await t.post('pay-1', payment())).status).toBe(202);
    expect(await keyState('pay-1')).toMatchObject({ recovery_point: 'EXT1_SENT' });
    expect((await t.post('pay-1', payment())).status).toBe(201);
    expect(await t.count('risk_checks')).toBe(1);
    expect(await t.steps('H1', 'pay-1')).toBe(1);
  });

  it('keeps answering 202 while the probe stays inconclusive, never calling the rail blindly', async () => {
    t = await createInProcess({ faults: 'lost:ext2:1:1,probe-timeout:ext2:1:2' });
    expect((await t.post('pay-1', payment())).status).toBe(202);
    expect((await t.post('pay-1', payment())).status).toBe(202);
    expect((await t.post('pay-1', payment())).status).toBe(202);
    // Two inconclusive probes: the rail was never called a second time.
    expect(await t.count('rail_charges')).toBe(0);
    expect((await t.post('pay-1', payment())).status).toBe(201);
    expect((await t.getJson<{ count: number }>('/v1/rail/charges')).count).toBe(1);
  });

  it.each([
    ['applied then reply lost', 'timeout:ext2:1:1'],
    ['never delivered', 'lost:ext2:1:1'],
  ])('lets the recovery worker alone complete a parked payment (%s) with no client retry', async (_name, faults) => {
    t = await createInProcess({ faults, parkBackoff: fastPark, metrics: 'open' });
    expect((await t.post('pay-1', payment())).status).toBe(202);
    await settle(60);
    const pass = await t.app.worker.runOnce();
    expect(pass.finished).toBe(1);
    expect(await keyState('pay-1')).toMatchObject({ state: 'finished' });
    const replay = await t.post('pay-1', payment());
    expect(replay.status).toBe(201);
    expect(replay.headers.get('idempotency-replay')).toBe('true');
    expect((await t.getJson<{ count: number }>('/v1/rail/charges')).count).toBe(1);
    expect((await t.getJson<{ count: number }>('/v1/ledger')).count).toBe(1);
    expect(await t.steps('H2', 'pay-1')).toBe(1);
    expect(await (await t.get('/metrics', null)).text()).toContain('oncely_recoveries_total 1');
  });

  it('lets the recovery worker finish a payment released after a transient failure', async () => {
    t = await createInProcess({ faults: 'unavailable:ext2:1:1', parkBackoff: fastPark });
    expect((await t.post('pay-1', payment())).status).toBe(503);
    const pass = await t.app.worker.runOnce();
    expect(pass.finished).toBe(1);
    expect((await t.getJson<{ count: number }>('/v1/ledger')).count).toBe(1);
  });

  it('records a declined payment found by a probe after a lost reply as the stored 402', async () => {
    t = await createInProcess({ faults: 'timeout:ext2:1:1' });
    expect((await t.post('big-1', payment(2_000_000))).status).toBe(202);
    const retry = await t.post('big-1', payment(2_000_000));
    expect(retry.status).toBe(402);
    expect((await t.getJson<{ count: number }>('/v1/rail/charges')).count).toBe(0);
    expect((await t.getJson<{ count: number }>('/v1/ledger')).count).toBe(0);
  });

  it('fences an owner whose lease ran out inside the rail call: the retry that took over finishes, one charge, one ledger entry', async () => {
    // Lease 300 ms, rail 800 ms: the first owner's lease expires while it waits on the rail.
    t = await createInProcess({ leaseMs: 300, faults: 'slow:ext2:800', metrics: 'open' });
    const slowOwner = t.post('pay-1', payment());
    for (let i = 0; i < 300; i += 1) {
      const row = await t.app.store.load('acme', 'pay-1');
      if (row?.recoveryPoint === 'EXT2_SENT' && (row.leaseRemainingMs ?? 0) <= 0) break;
      await settle(10);
    }
    const takeover = await t.post('pay-1', payment());
    const stale = await slowOwner;
    expect(takeover.status).toBe(201);
    // The first owner's EXT2_DONE commit was refused by the fence: it answers "in flight", not a result.
    expect(stale.status).toBe(409);
    expect((await t.getJson<{ count: number }>('/v1/rail/charges')).count).toBe(1);
    expect((await t.getJson<{ count: number }>('/v1/ledger')).count).toBe(1);
    expect(await t.steps('H3', 'pay-1')).toBe(1);
    expect(await (await t.get('/metrics', null)).text()).toMatch(/oncely_leases_lost_total 1/);
  });

  it('reaps a finished key after its retention window: the lookup is 404 and the payment record stays', async () => {
    t = await createInProcess({ leaseMs: 100, ttlMs: 200, metrics: 'open' });
    expect((await t.post('short-lived', payment())).status).toBe(201);
    expect((await t.get('/v1/idempotency-keys/short-lived')).status).toBe(200);
    await settle(250);
    expect(await t.app.reaper.runOnce()).toBe(1);
    expect((await t.get('/v1/idempotency-keys/short-lived')).status).toBe(404);
    expect((await t.getJson<{ count: number }>('/v1/ledger')).count).toBe(1);
    expect(await (await t.get('/metrics', null)).text()).toContain('oncely_keys_reaped_total 1');
  });
});
