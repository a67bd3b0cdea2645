/**
 * The app's own `pg.Pool` as the key store (`postgresKeyStore({ pool })`) on a real PostgreSQL
 * server, with `transaction: true`, through each framework edge on a loopback server: the app's
 * INSERT through `tx` and the stored key commit together, or neither does.
 *
 * The handler's pauses are gates the test opens (never sleeps), so each assertion is about an
 * order of events the test itself arranged.
 */
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import express from 'express';
import Fastify from 'fastify';
import { Hono } from 'hono';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { idempotent as expressIdempotent } from '../../../src/server/middleware/express.js';
import { idempotent as fastifyIdempotent } from '../../../src/server/middleware/fastify.js';
import type { GuardContext, GuardOptions } from '../../../src/server/middleware/guard.js';
import { idempotent as honoIdempotent } from '../../../src/server/middleware/hono.js';
import { postgresKeyStore } from '../../../src/server/postgres.js';
import type { KeyStore } from '../../../src/server/store/types.js';
import { canRunServerTests, requireServerUrl } from '../../support/pg.js';

/** What the route does for one request (`hold`: the request carried `x-hold: 1`). */
type Behaviour = (oncely: GuardContext, hold: boolean) => Promise<readonly [number, unknown]>;

interface App {
  readonly url: string;
  close(): Promise<void>;
}

/** The same route in each framework: the handler unchanged plus one `idempotent()`. */
const APPS = {
  async express(options: GuardOptions, behaviour: Behaviour): Promise<App> {
    const app = express();
    app.use(express.json());
    app.post('/orders', expressIdempotent({ ...options, clientId: () => 'acme' }), async (req, res, next) => {
      try {
        const [status, body] = await behaviour(req.oncely!, req.headers['x-hold'] === '1');
        res.status(status).json(body);
      } catch (error) {
        next(error);
      }
    });
    const server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    const { port } = server.address() as AddressInfo;
    return { url: `http://127.0.0.1:${port}`, close: () => new Promise((resolve) => server.close(() => resolve())) };
  },
  async hono(options: GuardOptions, behaviour: Behaviour): Promise<App> {
    const app = new Hono();
    app.post('/orders', honoIdempotent({ ...options, clientId: () => 'acme' }), async (c) => {
      const [status, body] = await behaviour(c.get('oncely'), c.req.header('x-hold') === '1');
      return c.json(body, status as 201);
    });
    const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' });
    await new Promise((resolve) => server.once('listening', resolve));
    const { port } = server.address() as AddressInfo;
    return { url: `http://127.0.0.1:${port}`, close: () => new Promise((resolve) => server.close(() => resolve())) };
  },
  async fastify(options: GuardOptions, behaviour: Behaviour): Promise<App> {
    const app = Fastify();
    app.post('/orders', fastifyIdempotent({ ...options, clientId: () => 'acme' }), async (request, reply) => {
      const [status, body] = await behaviour(request.oncely!, request.headers['x-hold'] === '1');
      return reply.code(status).send(body);
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = app.server.address() as AddressInfo;
    return { url: `http://127.0.0.1:${port}`, close: () => app.close() };
  },
};
type Framework = keyof typeof APPS;

/** A promise and its resolver: a point in the handler the test waits for, or lets it past. */
function gate(): { readonly reached: Promise<void>; open(): void } {
  let open!: () => void;
  const reached = new Promise<void>((resolve) => (open = resolve));
  return { reached, open };
}

// A real server (or a throwaway cluster): a `pg.Pool` cannot be PGlite. Under ONCELY_REQUIRE_PG=1
// canRunServerTests() is true and a missing server fails the file instead of skipping it.
const withPostgres = await canRunServerTests();
let url = '';
let admin: pg.Pool;
let schemas = 0;

beforeAll(async () => {
  if (!withPostgres) return;
  url = await requireServerUrl('adapter pool');
  admin = new pg.Pool({ connectionString: url, max: 2 });
});
afterAll(async () => admin?.end());

describe.skipIf(!withPostgres).each(Object.keys(APPS) as Framework[])('%s with the app’s own pg.Pool and transaction: true', (framework) => {
  let schema: string;
  let pool: pg.Pool;
  let store: KeyStore;
  let app: App | undefined;
  /** Attempts that reached the handler, numbered from 1. */
  let runs: number;

  beforeEach(async () => {
    schema = `oncely_t_adapter_pool_${process.pid}_${(schemas += 1)}`;
    // The app's pool, its tables in its own schema; the store is handed the same pool.
    pool = new pg.Pool({ connectionString: url, options: `-c search_path=${schema}`, max: 10 });
    store = postgresKeyStore({ pool, schema });
    await store.migrate?.({ sqlite: '', postgres: 'CREATE TABLE IF NOT EXISTS orders (key text NOT NULL, attempt integer NOT NULL)' });
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
  const post = (base: string, key: string, headers: Record<string, string> = {}): Promise<Response> =>
    fetch(`${base}/orders`, {
      method: 'POST',
      headers: { 'idempotency-key': key, 'content-type': 'application/json', ...headers },
      body: '{"item":"espresso"}',
    });
  /** The attempts whose order row committed, and the key's state and stored status. */
  const ledger = async (key: string) => ({
    orders: (await admin.query<{ attempt: number }>(`SELECT attempt FROM ${schema}.orders WHERE key = $1 ORDER BY attempt`, [key])).rows.map(
      (row) => row.attempt,
    ),
    keys: (await admin.query(`SELECT state, response_status AS status FROM ${schema}.oncely_keys WHERE key = $1`, [key])).rows,
  });
  /** INSERTs the order through the guard's transaction and answers `status` with the attempt. */
  const insert = async (oncely: GuardContext, status = 201): Promise<readonly [number, unknown]> => {
    const attempt = (runs += 1);
    await oncely.tx!.run('INSERT INTO orders (key, attempt) VALUES ($1, $2)', [oncely.key, attempt]);
    return [status, { attempt }];
  };

  it('commits the key, the order and the stored response together: none is visible while the handler runs, all after the 201', async () => {
    const inserted = gate();
    const proceed = gate();
    const base = await start(async (oncely) => {
      const answer = await insert(oncely);
      inserted.open();
      await proceed.reached;
      return answer;
    });
    const pending = post(base, 'k-commit');
    await inserted.reached;
    // The INSERT ran inside the transaction that admitted the key and will store the response:
    // nothing of it is committed yet, not even the key (one transaction, one commit).
    expect(await ledger('k-commit')).toEqual({ orders: [], keys: [] });
    proceed.open();
    const response = await pending;
    expect({ status: response.status, body: await response.json() }).toEqual({ status: 201, body: { attempt: 1 } });
    expect(await ledger('k-commit')).toEqual({ orders: [1], keys: [{ state: 'finished', status: 201 }] });

    const replay = await post(base, 'k-commit');
    expect({ status: replay.status, replay: replay.headers.get('idempotency-replay'), body: await replay.json() }).toEqual({
      status: 201,
      replay: 'true',
      body: { attempt: 1 },
    });
    expect(runs).toBe(1);
  });

  it('leaves neither the order nor the key when the handler INSERTs and answers 500; the retry runs afresh', async () => {
    let status = 500;
    const base = await start((oncely) => insert(oncely, status));
    const failed = await post(base, 'k-500');
    expect(failed.status).toBe(500);
    await failed.arrayBuffer();
    expect(await ledger('k-500')).toEqual({ orders: [], keys: [] });

    status = 201;
    const retried = await post(base, 'k-500');
    expect({ status: retried.status, replay: retried.headers.get('idempotency-replay'), body: await retried.json() }).toEqual({
      status: 201,
      replay: null,
      body: { attempt: 2 },
    });
    expect(await ledger('k-500')).toEqual({ orders: [2], keys: [{ state: 'finished', status: 201 }] });
  });

  it('commits nothing from an attempt whose lease a duplicate took over, even when its handler swallows the failure', async () => {
    const held = gate();
    const proceed = gate();
    let fencedOut: unknown;
    const reported: unknown[] = [];
    const base = await start(
      async (oncely, hold) => {
        if (!hold) return insert(oncely);
        const attempt = (runs += 1);
        held.open();
        await proceed.reached;
        try {
          await oncely.tx!.run('INSERT INTO orders (key, attempt) VALUES ($1, $2)', [oncely.key, attempt]);
        } catch (error) {
          fencedOut = error; // an app that logs and answers anyway
        }
        return [201, { attempt }];
      },
      { leaseMs: 300, onError: (error) => reported.push(error) },
    );
    const first = post(base, 'k-lost', { 'x-hold': '1' });
    await held.reached;
    // The duplicate waits out the first attempt's lease, then takes the key over and runs.
    let duplicate = await post(base, 'k-lost');
    while (duplicate.status === 409) {
      await duplicate.arrayBuffer();
      await new Promise((resolve) => setTimeout(resolve, 50));
      duplicate = await post(base, 'k-lost');
    }
    expect({ status: duplicate.status, body: await duplicate.json() }).toEqual({ status: 201, body: { attempt: 2 } });

    proceed.open();
    const late = await first;
    // The first attempt's 201 is not passed on: nothing of it committed.
    expect(late.status).toBe(409);
    await late.arrayBuffer();
    // Its INSERT was refused before it reached the table, and the app is told why.
    expect(fencedOut).toMatchObject({ name: 'LeaseLostError' });
    expect(reported).toEqual([expect.objectContaining({ message: expect.stringContaining('the lease ran out') })]);
    expect(await ledger('k-lost')).toEqual({ orders: [2], keys: [{ state: 'finished', status: 201 }] });
    const replay = await post(base, 'k-lost');
    expect({ status: replay.status, replay: replay.headers.get('idempotency-replay'), body: await replay.json() }).toEqual({
      status: 201,
      replay: 'true',
      body: { attempt: 2 },
    });
    expect(runs).toBe(2);
  });

  it('holds duplicates while the original’s one transaction is open, here and on another instance; another body is 409 until it commits, then 422', async () => {
    const inserted = gate();
    const proceed = gate();
    const base = await start(async (oncely, hold) => {
      const answer = await insert(oncely);
      if (hold) {
        inserted.open();
        await proceed.reached;
      }
      return answer;
    });
    // Another instance: its own pool and store on the same schema.
    const otherPool = new pg.Pool({ connectionString: url, options: `-c search_path=${schema}`, max: 10 });
    const otherStore = postgresKeyStore({ pool: otherPool, schema });
    const other = await APPS[framework]({ store: otherStore, transaction: true }, (oncely) => insert(oncely));
    const reuse = (at: string, prefer: string) =>
      fetch(`${at}/orders`, {
        method: 'POST',
        headers: { 'idempotency-key': 'k-held', 'content-type': 'application/json', prefer },
        body: '{"item":"tea"}',
      });
    try {
      const original = post(base, 'k-held', { 'x-hold': '1' });
      await inserted.reached;
      // Another body while the original's transaction is open: its fingerprint is not visible
      // yet; with no wait left it is in flight (here at once; there after the database's wait).
      const here = await reuse(base, 'wait=0');
      const startedThere = Date.now();
      const there = await reuse(other.url, 'wait=1');
      expect([here.status, there.status]).toEqual([409, 409]);
      expect(Date.now() - startedThere).toBeGreaterThanOrEqual(900);
      expect([here.headers.get('retry-after'), there.headers.get('retry-after')]).toEqual(['1', '1']);
      await Promise.all([here.arrayBuffer(), there.arrayBuffer()]);
      // The same body, three times here and once there, waits for the original's commit and gets
      // its replay (the waiters here, woken together, each get it within their wait).
      const sameHere = [post(base, 'k-held'), post(base, 'k-held'), post(base, 'k-held')];
      const sameThere = post(other.url, 'k-held');
      await new Promise((resolve) => setTimeout(resolve, 200));
      proceed.open();
      const answers = await Promise.all(
        [original, ...sameHere, sameThere].map(async (r) => {
          const response = await r;
          return { status: response.status, replay: response.headers.get('idempotency-replay'), body: (await response.json()) as unknown };
        }),
      );
      const replayed = { status: 201, replay: 'true', body: { attempt: 1 } };
      expect(answers).toEqual([{ status: 201, replay: null, body: { attempt: 1 } }, replayed, replayed, replayed, replayed]);
      // Committed now: another body is the 422 it always was.
      const reused = await reuse(other.url, 'wait=0');
      expect(reused.status).toBe(422);
      await reused.arrayBuffer();
      expect(runs).toBe(1);
      expect(await ledger('k-held')).toEqual({ orders: [1], keys: [{ state: 'finished', status: 201 }] });
    } finally {
      await other.close();
      await otherStore.close();
      await otherPool.end();
    }
  });

  it('gives the handler’s statements the session’s own lock timeout (the admission’s bound is put back)', async () => {
    const appPool = new pg.Pool({ connectionString: url, options: `-c search_path=${schema}`, max: 2 });
    // Set on the session after connecting, as an app's pool hook does (not the role's default).
    appPool.on('connect', (client) => void client.query("SET lock_timeout = '7s'"));
    const appStore = postgresKeyStore({ pool: appPool, schema });
    const seen: string[] = [];
    const other = await APPS[framework]({ store: appStore, transaction: true }, async (oncely) => {
      const row = await oncely.tx!.get<{ v: string }>('SELECT current_setting($1) AS v', ['lock_timeout']);
      seen.push(row!.v);
      return insert(oncely);
    });
    try {
      const response = await post(other.url, 'k-timeout');
      expect(response.status).toBe(201);
      await response.arrayBuffer();
      expect(seen).toEqual(['7s']);
    } finally {
      await other.close();
      await appStore.close();
      await appPool.end();
    }
  });

  it('runs 100 identical concurrent POSTs once: the rest get the replay or 409', { timeout: 60_000 }, async () => {
    const base = await start((oncely) => insert(oncely));
    const answers = await Promise.all(
      Array.from({ length: 100 }, async () => {
        const response = await post(base, 'k-100');
        return { status: response.status, replay: response.headers.get('idempotency-replay'), body: (await response.json()) as unknown };
      }),
    );
    const original = answers.filter((answer) => answer.status === 201 && answer.replay === null);
    const replays = answers.filter((answer) => answer.status === 201 && answer.replay === 'true');
    const inFlight = answers.filter((answer) => answer.status === 409);
    expect(original).toEqual([{ status: 201, replay: null, body: { attempt: 1 } }]);
    expect(replays.every((answer) => JSON.stringify(answer.body) === '{"attempt":1}')).toBe(true);
    expect(original.length + replays.length + inFlight.length).toBe(100);
    expect(runs).toBe(1);
    expect(await ledger('k-100')).toEqual({ orders: [1], keys: [{ state: 'finished', status: 201 }] });
  });
});
