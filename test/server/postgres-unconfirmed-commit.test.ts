/**
 * No request is acknowledged on a commit no synchronous standby confirmed. A private primary waits
 * for a standby that never comes; when a commit that records the key (an admission with its first
 * local step, a later phase, the final response, a whole request's transaction, a plain
 * middleware's stored response) is waiting, the test cancels the wait (`pg_cancel_backend`):
 * PostgreSQL answers that COMMIT with success and a WARNING, the commit exists on this primary
 * alone, and a failover would lose it. The answer must be `503` + `Retry-After` (an unknown
 * outcome), on the store's own pipelined pool and on the app's `pg.Pool`; the retry, the primary
 * having survived, then finds the key and the work happened once.
 */
import type { AddressInfo } from 'node:net';
import express from 'express';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { idempotent } from '../../src/server/middleware/express.js';
import { postgresKeyStore } from '../../src/server/store/postgres.node.js';
import { eventually } from '../reference/serve-process.js';
import { canRunPrivateClusterTests } from '../support/pg.js';
import { startSyncPrimary, type SyncPrimary } from '../support/sync-standby.js';
import { createTestApp, type FakeExternal, type TestApp } from './fixtures.js';

/** A built-in store: every optional member of the contract present. */
type PgStore = ReturnType<typeof postgresKeyStore>;

// Without initdb the test cannot make a primary of its own; CI (ONCELY_REQUIRE_PG=1) must fail then.
const runnable = canRunPrivateClusterTests();
if (!runnable) console.warn('[pg harness] SKIPPING the unconfirmed-commit test: no initdb installed');

type PoolKind = 'own' | 'app';
const ORDERS = 'CREATE TABLE IF NOT EXISTS orders (key text NOT NULL)';

describe.skipIf(!runnable)('a request whose commit waits for a standby and the wait is cancelled', () => {
  let primary: SyncPrimary;
  const pools: pg.Pool[] = [];
  const stores: PgStore[] = [];
  let schemas = 0;
  beforeAll(async () => {
    primary = await startSyncPrimary();
  });
  afterEach(() => primary.waitForStandby(false));
  afterAll(async () => {
    await Promise.all(stores.map((store) => store.close()));
    await Promise.all(pools.map((pool) => pool.end()));
    await primary?.destroy();
  });

  /** A store in a fresh schema, on its own pool or on an app's `pg.Pool` (not pipelined: batches). */
  const storeOn = (kind: PoolKind): PgStore & { readonly schema: string } => {
    const schema = `oncely_unconfirmed_${kind}_${(schemas += 1)}`;
    let store: PgStore;
    if (kind === 'own') store = postgresKeyStore({ connectionString: primary.url, schema });
    else {
      const pool = new pg.Pool({ connectionString: primary.url, options: `-c search_path=${schema}`, max: 6 });
      pools.push(pool);
      store = postgresKeyStore({ pool, schema });
    }
    stores.push(store);
    return Object.assign(store, { schema });
  };
  /** `pending`, its commits' waits cancelled while it runs: its response. */
  const cancelling = async (pending: Promise<Response>): Promise<Response> => {
    const cancelled = primary.abandonWaits('cancel', pending);
    const response = await pending;
    expect(await cancelled).toBeGreaterThanOrEqual(1);
    return response;
  };
  const unknownOutcome = async (response: Response) => {
    await response.arrayBuffer();
    return { status: response.status, retryAfter: Number(response.headers.get('retry-after')) >= 1 };
  };

  describe.each(['own', 'app'] as const)('the handler’s steps, the store on the %s pool', (kind) => {
    let app: TestApp;
    /** Holds `system`'s next call until the returned function is called. */
    const hold = (system: FakeExternal): (() => void) => {
      let open!: () => void;
      system.gate = new Promise<void>((resolve) => (open = resolve));
      return () => {
        system.gate = undefined;
        open();
      };
    };
    /**
     * The same payment retried, commits confirmed again, until it is answered: the key held by a
     * lease nobody works under is `409` until that lease ends, then taken over; the work ran once.
     */
    const retriedOnce = async (key: string) => {
      const statuses = new Set<number>();
      expect(
        await eventually(async () => {
          const retried = await app.post({ amount: 5 }, { key });
          await retried.arrayBuffer();
          statuses.add(retried.status);
          return retried.status === 201;
        }, 15_000),
      ).toBe(true);
      expect([...statuses].filter((status) => status !== 409 && status !== 201)).toEqual([]);
      expect(app.rail.applied.size).toBe(1);
      expect(await app.count('ledger', 'key = $1', [key])).toBe(1);
      expect(await app.count('step_runs', 'key = $1 AND step = $2', [key, 'H1_DONE'])).toBe(1);
    };

    it('answers 503 + Retry-After when the admission’s commit (with the first local step) is cancelled', async () => {
      app = await createTestApp({ store: storeOn(kind), leaseMs: 1000 });
      await primary.waitForStandby(true);
      const response = await cancelling(app.post({ amount: 5 }, { key: 'k-admit' }));
      expect(await unknownOutcome(response)).toEqual({ status: 503, retryAfter: true });
      await primary.waitForStandby(false);
      await retriedOnce('k-admit');
    });

    it('answers 503 + Retry-After when a later phase’s commit (commitPhase) is cancelled', async () => {
      app = await createTestApp({ store: storeOn(kind), leaseMs: 1000 });
      const open = hold(app.risk);
      const pending = app.post({ amount: 5 }, { key: 'k-phase' });
      expect(await eventually(() => app.risk.calls === 1)).toBe(true);
      await primary.waitForStandby(true);
      open();
      expect(await unknownOutcome(await cancelling(pending))).toEqual({ status: 503, retryAfter: true });
      expect(app.rail.calls).toBe(0);
      await primary.waitForStandby(false);
      await retriedOnce('k-phase');
    });

    it('does not replay a key whose commit was cancelled while no standby has it: 503 until one confirms, then the replay', async () => {
      app = await createTestApp({ store: storeOn(kind), leaseMs: 1000 });
      const open = hold(app.rail);
      const pending = app.post({ amount: 5 }, { key: 'k-replay' });
      expect(await eventually(() => app.rail.calls === 1)).toBe(true);
      await primary.waitForStandby(true);
      open();
      expect(await unknownOutcome(await cancelling(pending))).toEqual({ status: 503, retryAfter: true });
      // Finished on this primary, which no standby confirms yet: replaying it would acknowledge
      // what a failover loses. The retry's own wait for the standby is cancelled in turn.
      const retry = await cancelling(app.post({ amount: 5 }, { key: 'k-replay' }));
      expect(await unknownOutcome(retry)).toEqual({ status: 503, retryAfter: true });
      await primary.waitForStandby(false);
      const replay = await app.post({ amount: 5 }, { key: 'k-replay' });
      expect([replay.status, replay.headers.get('idempotency-replay')]).toEqual([201, 'true']);
      expect(app.rail.applied.size).toBe(1);
    });

    it('answers 503 + Retry-After when the final response’s commit (finish) is cancelled', async () => {
      app = await createTestApp({ store: storeOn(kind), leaseMs: 1000 });
      const open = hold(app.rail);
      const pending = app.post({ amount: 5 }, { key: 'k-finish' });
      expect(await eventually(() => app.rail.calls === 1)).toBe(true);
      await primary.waitForStandby(true);
      open();
      expect(await unknownOutcome(await cancelling(pending))).toEqual({ status: 503, retryAfter: true });
      await primary.waitForStandby(false);
      await retriedOnce('k-finish');
    });
  });

  describe.each(['own', 'app'] as const)('Express with idempotent(), the store on the %s pool', (kind) => {
    let close: (() => Promise<void>) | undefined;
    afterEach(async () => {
      await close?.();
      close = undefined;
    });
    /** The app: each run INSERTs an order (through the guard's transaction when it has one), then every commit waits. */
    const start = async (transaction: boolean) => {
      const store = storeOn(kind);
      await store.migrate({ sqlite: '', postgres: ORDERS });
      let runs = 0;
      let waiting = false;
      const reported: unknown[] = [];
      const app = express();
      app.use(express.json());
      app.post('/orders', idempotent({ store, transaction, clientId: () => 'acme', onError: (error) => reported.push(error) }), async (req, res, next) => {
        try {
          const run = (runs += 1);
          const key = req.oncely!.key;
          if (req.oncely!.tx) await req.oncely!.tx.run('INSERT INTO orders (key) VALUES ($1)', [key]);
          else await primary.query(`INSERT INTO ${store.schema}.orders (key) VALUES ($1)`, [key]);
          if (run === 1) {
            await primary.waitForStandby(true);
            waiting = true;
          }
          res.status(201).json({ run });
        } catch (error) {
          next(error);
        }
      });
      const server = app.listen(0, '127.0.0.1');
      await new Promise((resolve) => server.once('listening', resolve));
      close = () => new Promise((resolve) => server.close(() => resolve()));
      const { port } = server.address() as AddressInfo;
      const post = () =>
        fetch(`http://127.0.0.1:${port}/orders`, { method: 'POST', headers: { 'idempotency-key': 'k-mw', 'content-type': 'application/json' }, body: '{}' });
      const orders = async () => (await primary.query(`SELECT key FROM ${store.schema}.orders`)).length;
      return { post, orders, reported, runs: () => runs, waiting: () => waiting };
    };

    /** The retry, the primary having survived and with it the commit: answered from it, nothing runs again. */
    const replayed = async (app: Awaited<ReturnType<typeof start>>) => {
      const retried = await app.post();
      expect({ status: retried.status, replay: retried.headers.get('idempotency-replay'), body: await retried.json() }).toEqual({
        status: 201,
        replay: 'true',
        body: { run: 1 },
      });
      expect([app.runs(), await app.orders()]).toEqual([1, 1]);
    };

    it('answers 503 + Retry-After when the whole request’s commit is cancelled (transaction: true: beginRequest → commit)', async () => {
      const app = await start(true);
      const first = app.post();
      // The handler turns the waits on, then answers: the commit of its work and its answer waits.
      expect(await eventually(app.waiting)).toBe(true);
      expect(await unknownOutcome(await cancelling(first))).toEqual({ status: 503, retryAfter: true });
      await primary.waitForStandby(false);
      await replayed(app);
    });

    it('delivers the handler’s answer and reports CommitUnconfirmedError when storing it is cancelled (plain mode: its effect committed apart)', async () => {
      const app = await start(false);
      const first = app.post();
      expect(await eventually(app.waiting)).toBe(true);
      // The effect happened before the store was asked to record it: a 503 would invite a retry that
      // runs it again wherever the stored response is lost. The failure goes to onError.
      const response = await cancelling(first);
      expect({ status: response.status, body: await response.json() }).toEqual({ status: 201, body: { run: 1 } });
      expect(app.reported.map((error) => (error as Error).name)).toEqual(['CommitUnconfirmedError']);
      await primary.waitForStandby(false);
      await replayed(app);
    });
  });
});
