/**
 * `createInFlight` over a store that offers `watch` (a SQLite store with a scripted watch): a
 * waiter is woken by the store's notification without polling, never misses an end committed
 * before the watch began, and polls when the store cannot watch or stops listening. The same
 * across two PostgreSQL stores (real LISTEN/NOTIFY) is in `store/postgres-listen.test.ts`.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createInFlight } from '../../src/server/in-flight.js';
import { sqliteKeyStore } from '../../src/server/store/sqlite.node.js';
import { WatchEvent, type KeyStore, type Lease } from '../../src/server/store/types.js';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const RESPONSE = { status: 201, headers: { 'content-type': 'application/json' }, body: '{"id":"pay_1"}' };

interface Scripted {
  readonly store: KeyStore;
  /** Row loads so far. */
  loads(): number;
  /** Watches begun so far. */
  watches(): number;
  /** Watches still active (begun, not stopped). */
  active(): number;
  /** Tells every active watcher `event`. */
  tell(event: WatchEvent): void;
  /** A row owned elsewhere (its lease held by "another instance"). */
  startElsewhere(key: string): Promise<Lease>;
}

/**
 * A SQLite store whose `watch` resolves after `delayMs` (rejects when `fails`), counting loads;
 * ends are reported only when the test says so (`tell`), as a store's notification would be.
 */
function scripted(options: { readonly watch: boolean; readonly fails?: boolean; readonly delayMs?: number }): Scripted {
  const inner = sqliteKeyStore({ path: ':memory:' });
  let loads = 0;
  let watches = 0;
  const listeners = new Set<(event: WatchEvent) => void>();
  const store: KeyStore = {
    ...inner,
    dialect: inner.dialect,
    load: (clientId, key) => {
      loads += 1;
      return inner.load(clientId, key);
    },
    ...(options.watch
      ? {
          async watch(_clientId: string, _key: string, listener: (event: WatchEvent) => void) {
            watches += 1;
            await sleep(options.delayMs ?? 0);
            if (options.fails) throw new Error('cannot listen');
            listeners.add(listener);
            return () => void listeners.delete(listener);
          },
        }
      : {}),
  };
  return {
    store,
    loads: () => loads,
    watches: () => watches,
    active: () => listeners.size,
    tell: (event) => {
      for (const listener of [...listeners]) listener(event);
    },
    async startElsewhere(key) {
      await inner.migrate();
      const admitted = await inner.admit({
        clientId: 'acme',
        key,
        requestHash: 'h',
        endpoint: 'POST /v1/payments',
        requestBody: '{}',
        leaseMs: 10_000,
        ttlMs: 60_000,
      });
      if (!admitted.owned) throw new Error(`${key} is not new`);
      return admitted.lease;
    },
  };
}

let opened: Scripted | undefined;
afterEach(async () => {
  await opened?.store.close?.();
  opened = undefined;
});

/** Resolves to how long `promise` took, in ms. */
async function timed(promise: Promise<void>): Promise<number> {
  const t0 = performance.now();
  await promise;
  return performance.now() - t0;
}

describe('createInFlight over a store that can watch', () => {
  it("wakes a waiter on the store's notification, loading the row once after the watch began and once per notification, never polling", async () => {
    const s = (opened = scripted({ watch: true }));
    const lease = await s.startElsewhere('k1');
    const waited = timed(createInFlight(s.store, 10_000).wait('acme', 'k1', 5000));
    // A poll would have loaded the row at 50, 150 and 350 ms.
    await sleep(600);
    expect(s.loads()).toBe(1);
    await s.store.write(lease, { kind: 'finish', response: RESPONSE });
    s.tell(WatchEvent.Ended);
    expect(await waited).toBeLessThan(4000);
    expect(s.loads()).toBe(2);
    expect(s.active()).toBe(0);
  });

  it('keeps waiting after a notification that finds the owner still working', async () => {
    const s = (opened = scripted({ watch: true }));
    const lease = await s.startElsewhere('k1');
    let woken = false;
    const waited = createInFlight(s.store, 10_000)
      .wait('acme', 'k1', 5000)
      .then(() => void (woken = true));
    await sleep(100);
    s.tell(WatchEvent.Ended);
    await sleep(200);
    expect(woken).toBe(false);
    await s.store.write(lease, { kind: 'finish', response: RESPONSE });
    s.tell(WatchEvent.Ended);
    await waited;
    expect(s.loads()).toBe(3);
  });

  it('shares one watch among all the waiters of a key and wakes them all', async () => {
    const s = (opened = scripted({ watch: true }));
    const lease = await s.startElsewhere('k1');
    const inFlight = createInFlight(s.store, 10_000);
    const waits = Array.from({ length: 50 }, () => inFlight.wait('acme', 'k1', 5000));
    await sleep(100);
    expect([s.watches(), s.active()]).toEqual([1, 1]);
    await s.store.write(lease, { kind: 'finish', response: RESPONSE });
    s.tell(WatchEvent.Ended);
    await Promise.all(waits);
    expect(s.loads()).toBe(2);
  });

  it('does not miss an end committed before the watch began: the row is loaded once it has', async () => {
    const s = (opened = scripted({ watch: true, delayMs: 300 }));
    const lease = await s.startElsewhere('k1');
    const waited = timed(createInFlight(s.store, 10_000).wait('acme', 'k1', 5000));
    await s.store.write(lease, { kind: 'finish', response: RESPONSE });
    // No notification: the end happened before the store listened.
    expect(await waited).toBeLessThan(4000);
    expect(s.loads()).toBe(1);
  });

  // Each case: the store, what happens while the waiter waits, and the loads it must have polled.
  const pollCases: [string, Parameters<typeof scripted>[0], (s: Scripted) => Promise<void>, number][] = [
    ['when the store cannot watch now', { watch: true, fails: true }, () => sleep(400), 2],
    [
      'once the store stops listening',
      { watch: true },
      async (s) => {
        await sleep(100);
        s.tell(WatchEvent.Lost);
        await sleep(400);
      },
      3,
    ],
    ['of a store without watch', { watch: false }, () => sleep(400), 2],
  ];
  it.each(pollCases)('polls the row %s', async (_, how, meanwhile, loads) => {
    const s = (opened = scripted(how));
    const lease = await s.startElsewhere('k1');
    const waited = timed(createInFlight(s.store, 10_000).wait('acme', 'k1', 5000));
    await meanwhile(s);
    expect(s.loads()).toBeGreaterThanOrEqual(loads);
    await s.store.write(lease, { kind: 'finish', response: RESPONSE });
    expect(await waited).toBeLessThan(4000);
  });

  it('stops the watch when its last waiter runs out of time', async () => {
    const s = (opened = scripted({ watch: true }));
    await s.startElsewhere('k1');
    const inFlight = createInFlight(s.store, 10_000);
    await Promise.all([inFlight.wait('acme', 'k1', 150), inFlight.wait('acme', 'k1', 300)]);
    expect([s.watches(), s.active()]).toEqual([1, 0]);
  });

  it('needs no watch for a key running in this process: its end wakes the waiters', async () => {
    const s = (opened = scripted({ watch: true }));
    await s.startElsewhere('k1');
    const inFlight = createInFlight(s.store, 10_000);
    const end = inFlight.begin('acme', 'k1');
    const waited = timed(inFlight.wait('acme', 'k1', 5000));
    await sleep(100);
    end();
    expect(await waited).toBeLessThan(4000);
    expect([s.watches(), s.loads()]).toEqual([0, 0]);
  });
});
