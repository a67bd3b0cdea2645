/**
 * The app's own ORM inside `transaction: true` (docs/orm.md), on a real PostgreSQL server:
 * Drizzle, Kysely and Knex each write the handler's order through their own query builder, run in
 * oncely's `tx`, behind oncely/express and oncely/hono. The order commits with the key and the
 * stored response, or neither does; past its lease the ORM's statements are refused.
 *
 * The handler's pauses are gates the test opens (never sleeps), so each assertion is about an
 * order of events the test itself arranged.
 */
import pg from 'pg';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { GuardContext, GuardOptions } from '../../src/server/middleware/guard.js';
import { postgresKeyStore } from '../../src/server/postgres.js';
import { canRunServerTests, requireServerUrl } from '../support/pg.js';
import { APPS, answer, gate, post, type App, type Behaviour, type Framework } from './apps.js';
import { ORDERS_DDL, RECIPES, type Orm } from './recipes.js';

// A real server (or a throwaway cluster): a `pg.Pool` cannot be PGlite. Under ONCELY_REQUIRE_PG=1
// canRunServerTests() is true and a missing server fails the file instead of skipping it.
const withPostgres = await canRunServerTests();
let url = '';
let admin: pg.Pool;
let schemas = 0;

beforeAll(async () => {
  if (!withPostgres) return;
  url = await requireServerUrl('orm recipes');
  admin = new pg.Pool({ connectionString: url, max: 2 });
});
afterAll(async () => admin?.end());

/** The error a statement failed with, under the ORM's own wrapper (Drizzle wraps it as `cause`). */
const rootCause = (error: unknown): unknown => {
  let inner = error;
  while (inner instanceof Error && inner.cause !== undefined) inner = inner.cause;
  return inner;
};

const CASES = (Object.keys(RECIPES) as Orm[]).flatMap((orm) => (Object.keys(APPS) as Framework[]).map((framework) => [orm, framework] as const));

describe.skipIf(!withPostgres).each(CASES)('%s through %s with transaction: true', (orm, framework) => {
  const recipe = RECIPES[orm];
  let schema: string;
  let pool: pg.Pool;
  let store: ReturnType<typeof postgresKeyStore>;
  let app: App | undefined;
  /** Attempts that reached the handler, numbered from 1. */
  let runs: number;

  beforeEach(async () => {
    schema = `oncely_t_orm_${process.pid}_${(schemas += 1)}`;
    // The app's pool, its tables in its own schema; the store is handed the same pool.
    pool = new pg.Pool({ connectionString: url, options: `-c search_path=${schema}`, max: 10 });
    store = postgresKeyStore({ pool, schema });
    await store.migrate?.({ postgres: ORDERS_DDL });
    runs = 0;
  });
  afterEach(async () => {
    await app?.close();
    app = undefined;
    await store.close?.();
    await pool.end();
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  });

  const start = async (behaviour: Behaviour, options: Partial<GuardOptions> = {}): Promise<string> => {
    app = await APPS[framework]({ store, transaction: true, ...options }, behaviour);
    return app.url;
  };
  /** The attempts whose order row committed, and the key's state and stored status. */
  const ledger = async (key: string) => ({
    orders: (await admin.query<{ attempt: number }>(`SELECT attempt FROM ${schema}.orders WHERE key = $1 ORDER BY attempt`, [key])).rows.map((r) => r.attempt),
    keys: (await admin.query(`SELECT state, response_status AS status FROM ${schema}.oncely_keys WHERE key = $1`, [key])).rows,
  });
  /** Counts the key's orders, INSERTs one and UPDATEs it, all through the ORM in the guard's transaction. */
  const order = async (oncely: GuardContext): Promise<readonly [number, unknown]> => {
    const attempt = (runs += 1);
    const before = await recipe.count(oncely.tx!, oncely.key);
    const row = await recipe.insert(oncely.tx!, { id: `ord_${oncely.key}_${attempt}`, key: oncely.key, attempt });
    const touched = await recipe.touch(oncely.tx!, oncely.key);
    return [201, { id: row.id, attempt: row.attempt, before, touched, dated: row.createdAt instanceof Date }];
  };
  const first = (attempt: number) => ({ id: `ord_k_${attempt}`, attempt, before: 0, touched: 1, dated: true });

  it('commits the order written through the ORM with the key and the stored response: none is visible before the 201', async () => {
    const inserted = gate();
    const proceed = gate();
    const base = await start(async (oncely) => {
      const result = await order(oncely);
      inserted.open();
      await proceed.reached;
      return result;
    });
    const pending = post(base, 'k');
    await inserted.reached;
    expect(await ledger('k')).toEqual({ orders: [], keys: [] });
    proceed.open();
    expect(await answer(await pending)).toEqual({ status: 201, replay: null, body: first(1) });
    expect(await ledger('k')).toEqual({ orders: [1], keys: [{ state: 'finished', status: 201 }] });
  });

  it('replays the stored response without running the handler again', async () => {
    const base = await start(order);
    expect(await answer(await post(base, 'k'))).toEqual({ status: 201, replay: null, body: first(1) });
    expect(await answer(await post(base, 'k'))).toEqual({ status: 201, replay: 'true', body: first(1) });
    expect(runs).toBe(1);
    expect(await ledger('k')).toEqual({ orders: [1], keys: [{ state: 'finished', status: 201 }] });
  });

  it('leaves no order and no key when the handler throws after writing; the retry runs afresh', async () => {
    let fail = true;
    const base = await start(async (oncely) => {
      const result = await order(oncely);
      if (fail) throw new Error('the handler fails after its write');
      return result;
    });
    const failed = await post(base, 'k');
    expect(failed.status).toBe(500);
    await failed.arrayBuffer();
    expect(await ledger('k')).toEqual({ orders: [], keys: [] });

    fail = false;
    expect(await answer(await post(base, 'k'))).toEqual({ status: 201, replay: null, body: first(2) });
    expect(await ledger('k')).toEqual({ orders: [2], keys: [{ state: 'finished', status: 201 }] });
  });

  it('refuses the ORM’s statements once the lease has passed mid-handler, and commits nothing of that attempt', async () => {
    const held = gate();
    const proceed = gate();
    let fencedOut: unknown;
    const base = await start(
      async (oncely, hold) => {
        if (!hold) return order(oncely);
        const attempt = (runs += 1);
        await recipe.insert(oncely.tx!, { id: `ord_early_${attempt}`, key: oncely.key, attempt });
        held.open();
        await proceed.reached;
        try {
          await recipe.insert(oncely.tx!, { id: `ord_late_${attempt}`, key: oncely.key, attempt });
        } catch (error) {
          fencedOut = error; // an app that logs and answers anyway
        }
        return [201, { attempt }];
      },
      { leaseMs: 300, onError: () => undefined },
    );
    const late = post(base, 'k', { 'x-hold': '1' });
    await held.reached;
    // The duplicate waits out the first attempt's lease, then takes the key over and runs.
    let duplicate = await post(base, 'k');
    while (duplicate.status === 409) {
      await duplicate.arrayBuffer();
      await new Promise((resolve) => setTimeout(resolve, 50));
      duplicate = await post(base, 'k');
    }
    expect(await answer(duplicate)).toEqual({ status: 201, replay: null, body: first(2) });

    proceed.open();
    expect((await late).status).toBe(409);
    expect(rootCause(fencedOut)).toMatchObject({ name: 'LeaseLostError' });
    // Neither the write before the lease passed nor the refused one committed.
    expect(await ledger('k')).toEqual({ orders: [2], keys: [{ state: 'finished', status: 201 }] });
  });

  it('runs 100 identical concurrent POSTs once: one order, the rest get the replay or 409', { timeout: 60_000 }, async () => {
    const base = await start(order);
    const answers = await Promise.all(Array.from({ length: 100 }, async () => answer(await post(base, 'k'))));
    const original = answers.filter((a) => a.status === 201 && a.replay === null);
    const replays = answers.filter((a) => a.status === 201 && a.replay === 'true');
    const inFlight = answers.filter((a) => a.status === 409);
    expect(original).toEqual([{ status: 201, replay: null, body: first(1) }]);
    expect(replays.every((a) => JSON.stringify(a.body) === JSON.stringify(first(1)))).toBe(true);
    expect(original.length + replays.length + inFlight.length).toBe(100);
    expect(runs).toBe(1);
    expect(await ledger('k')).toEqual({ orders: [1], keys: [{ state: 'finished', status: 201 }] });
  });
});
