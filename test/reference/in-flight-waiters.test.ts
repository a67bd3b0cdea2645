/**
 * 100 duplicates waiting for one slow original (`slow:ext2:3000`), half on the original's instance
 * and half on another, hold no store connection each: while they wait, the connections in use stay
 * a handful and nothing queues for one (measured on the `pg` pools and in `pg_stat_activity`; on
 * SQLite, the store calls under way and the row loads). Then every duplicate gets the original's
 * `201`, replayed byte for byte, and the payment happened once.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postgresKeyStore } from '../../src/server/store/postgres.node.js';
import { sqliteKeyStore } from '../../src/server/store/sqlite.node.js';
import type { KeyStore } from '../../src/server/store/types.js';
import { canRunServerTests, requireServerUrl } from '../support/pg.js';
import { createInProcess, payment, type InProcess } from './in-process.js';

const DUPLICATES = 100;
const SLOW = 'slow:ext2:3000';
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** A store with its calls under way, row loads and admissions counted. */
interface Counted {
  readonly store: KeyStore;
  underway(): number;
  loads(): number;
  admitted(): number;
}

/** `store` counted (its primitives wrapped, not replaced, so nothing else changes). */
function counted(store: KeyStore): Counted {
  let underway = 0;
  let loads = 0;
  let admitted = 0;
  const track = <T>(call: Promise<T>): Promise<T> => {
    underway += 1;
    return call.finally(() => (underway -= 1));
  };
  const wrapped: KeyStore = {
    ...store,
    dialect: store.dialect,
    load: (clientId, key) => ((loads += 1), track(store.load(clientId, key))),
    transaction: (work) => track(store.transaction(work)),
    admit: (input, first) => store.admit(input, first).finally(() => (admitted += 1)),
  };
  return { store: wrapped, underway: () => underway, loads: () => loads, admitted: () => admitted };
}

interface Run {
  readonly original: Response;
  readonly duplicates: Response[];
  /** Requests (the original included) answered by the end of the measured window: none should be. */
  readonly answeredEarly: number;
}

/**
 * The original on `a`, then (once its rail call is under way) the duplicates alternately on `a`
 * and `b`; once every one of them is admitted (100 admissions of one key queue on its lock, which
 * takes a while), `sample` runs every 25 ms for a second, while they only wait.
 */
async function race(a: InProcess, b: InProcess, key: string, stores: readonly Counted[], sample: () => Promise<void>): Promise<Run> {
  let answered = 0;
  const original = a.post(key, payment(4200, key)).finally(() => (answered += 1));
  while ((await a.app.store.load('acme', key))?.recoveryPoint !== 'EXT2_SENT') await sleep(10);
  const sent = stores.reduce((sum, store) => sum + store.admitted(), 0);
  const duplicates = Array.from({ length: DUPLICATES }, (_, i) => (i % 2 === 0 ? a : b).post(key, payment(4200, key)).finally(() => (answered += 1)));
  while (stores.reduce((sum, store) => sum + store.admitted(), 0) < sent + DUPLICATES) await sleep(10);
  // The one watch of the key begins (one flag, one load of the row).
  await sleep(200);
  const until = performance.now() + 1000;
  while (performance.now() < until) {
    await sample();
    await sleep(25);
  }
  const answeredEarly = answered;
  return { original: await original, duplicates: await Promise.all(duplicates), answeredEarly };
}

/** Every duplicate got the original's answer as a replay, byte for byte; the payment ran once. */
async function expectReplayed(run: Run, a: InProcess): Promise<void> {
  expect(run.answeredEarly).toBe(0);
  expect(run.original.status).toBe(201);
  const body = await run.original.text();
  const answers = await Promise.all(run.duplicates.map(async (r) => [r.status, r.headers.get('idempotency-replay'), await r.text()]));
  expect(answers.filter(([status, replay, text]) => status === 201 && replay === 'true' && text === body)).toHaveLength(DUPLICATES);
  expect(await a.count('ledger_entries')).toBe(1);
  expect(await a.count('rail_charges')).toBe(1);
}

describe.skipIf(!(await canRunServerTests()))('100 waiting duplicates on PostgreSQL', () => {
  const schema = `oncely_t_waiters_${process.pid}`;
  const names = { a: `oncely_t_waiters_a_${process.pid}`, b: `oncely_t_waiters_b_${process.pid}` };
  let url: string;
  let admin: pg.Client;
  const pools: Record<'a' | 'b', pg.Pool> = {} as Record<'a' | 'b', pg.Pool>;
  const stores: Counted[] = [];
  let a: InProcess;
  let b: InProcess;

  beforeAll(async () => {
    url = await requireServerUrl('waiters');
    admin = new pg.Client({ connectionString: url });
    await admin.connect();
    for (const side of ['a', 'b'] as const) {
      // The stores' pools, passed in so that the test can read them: 10 connections, as by default.
      pools[side] = new pg.Pool({ connectionString: url, application_name: names[side], max: 10 });
    }
    stores.push(counted(postgresKeyStore({ pool: pools.a, schema })), counted(postgresKeyStore({ pool: pools.b, schema })));
    a = await createInProcess({ store: stores[0]!.store, faults: SLOW, leaseMs: 10_000, inFlightWaitMs: 8000 });
    b = await createInProcess({ store: stores[1]!.store, leaseMs: 10_000, inFlightWaitMs: 8000 });
  });
  afterAll(async () => {
    await Promise.all([a?.app.close(0), b?.app.close(0)]);
    await Promise.all(Object.values(pools).map((pool) => pool.end()));
    await admin?.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin?.end();
  });

  it('hold no connection each while they wait (pools of 10: none queued, at most 2 in use), then all get the original 201 replayed', async () => {
    const most = { inUse: 0, queued: 0, active: 0, open: 0 };
    const run = await race(a, b, 'waiters-pg', stores, async () => {
      for (const pool of Object.values(pools)) {
        most.inUse = Math.max(most.inUse, pool.totalCount - pool.idleCount);
        most.queued = Math.max(most.queued, pool.waitingCount);
      }
      const { rows } = await admin.query<{ active: number; open: number }>(
        `SELECT count(*) FILTER (WHERE state <> 'idle')::int AS active, count(*)::int AS open
           FROM pg_stat_activity WHERE application_name = ANY($1)`,
        [Object.values(names)],
      );
      most.active = Math.max(most.active, rows[0]!.active);
      most.open = Math.max(most.open, rows[0]!.open);
    });
    console.info(
      `[waiters] ${DUPLICATES} waiting on PostgreSQL: at most ${most.inUse} pooled connections in use, ${most.queued} queued; ${most.active} busy of ${most.open} open in pg_stat_activity`,
    );
    // One waiter per connection would fill both pools (20 in use) and queue the other 80.
    expect(most.queued).toBe(0);
    expect(most.inUse).toBeLessThanOrEqual(2);
    expect(most.active).toBeLessThanOrEqual(2);
    await expectReplayed(run, a);
  });
});

describe('100 waiting duplicates on SQLite (two instances on one file)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'oncely-waiters-'));
  const stores = { a: counted(sqliteKeyStore({ path: join(dir, 'keys.db') })), b: counted(sqliteKeyStore({ path: join(dir, 'keys.db') })) };
  let a: InProcess;
  let b: InProcess;
  beforeAll(async () => {
    a = await createInProcess({ store: stores.a.store, faults: SLOW, leaseMs: 10_000, inFlightWaitMs: 8000 });
    b = await createInProcess({ store: stores.b.store, leaseMs: 10_000, inFlightWaitMs: 8000 });
  });
  afterAll(async () => {
    await Promise.all([a?.app.close(0), b?.app.close(0)]);
    rmSync(dir, { recursive: true, force: true });
  });

  it('make no store call each while they wait (one shared poll of the row on the other instance), then all get the original 201 replayed', async () => {
    let most = 0;
    let loadsFrom = -1;
    let loadsTo = 0;
    const run = await race(a, b, 'waiters-sqlite', [stores.a, stores.b], async () => {
      if (loadsFrom < 0) loadsFrom = stores.b.loads();
      loadsTo = stores.b.loads();
      most = Math.max(most, stores.a.underway() + stores.b.underway());
    });
    const loads = loadsTo - loadsFrom;
    console.info(`[waiters] ${DUPLICATES} waiting on SQLite: at most ${most} store calls under way, ${loads} row loads by the other instance in 1 s`);
    expect(most).toBeLessThanOrEqual(2);
    // A poll per waiter (50 on b, 500 ms apart at best) would load the row 100 times in 1 s.
    expect(loads).toBeLessThanOrEqual(5);
    await expectReplayed(run, a);
  });
});
