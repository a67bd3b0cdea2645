/**
 * Starts one peer's server on 127.0.0.1 and prints `peer NAME listening on http://HOST:PORT`.
 *
 * Usage: `node --import tsx bench/peers/serve.ts <peer>`, configured by environment:
 * `BENCH_APP_DB` (the peers' app database), `BENCH_ONCELY_DB` (oncely's store: a SQLite path or
 * a `postgres://` URL), `BENCH_PG_SCHEMA`, `BENCH_NS` (key prefix), `BENCH_WORK_MS`,
 * `BENCH_HOLD_MS`, `BENCH_LEASE_MS` (oncely's lease, and Powertools' emulated Lambda timeout),
 * `BENCH_REDIS_URL`. `unguarded-postgres` keeps its charges in PostgreSQL (`BENCH_ONCELY_DB`,
 * `BENCH_PG_SCHEMA`), the baseline for oncely on PostgreSQL. `oncely-nostore` is oncely over a
 * store that writes nothing (`nostore.ts`): what the layer costs without its database.
 * `recipe-sqlite` and `recipe-postgres` are the design article's recipe written by hand
 * (`recipe.ts`), on the file or schema oncely's store would use. `statements-postgres` sends the
 * statements of oncely's first execution with nothing else (`statements-pg.ts`): the SQL's bound from Node. `oncely-express` and
 * `oncely-express-tx` are oncely's Express middleware in front of the Express peers' route
 * (`oncely-express.ts`), its key store on `BENCH_ONCELY_DB` (a SQLite path); `-tx` runs it with
 * `transaction: true` and charges through `req.oncely.tx`. `oncely-express-pg`, `oncely-express-pg-tx`
 * and `unguarded-express-pg` are the same on PostgreSQL with the app's `pg.Pool` (`express-pg.ts`;
 * `BENCH_ONCELY_DB` a `postgres://` URL, `BENCH_PG_SCHEMA`).
 *
 * @module
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import type express from 'express';
import { expressIdempotencyApp, nodeIdempotency, powertools, unguardedExpress, type PeerContext } from './express-peers.js';
import { createOncelyPeer } from './oncely-app.js';
import { expressPg } from './express-pg.js';
import { floorExpressPg } from './floor-express-pg.js';
import { oncelyExpress } from './oncely-express.js';
import { CHARGE_SQL, COUNT_SQL, EXECUTIONS_DDL, chargeParams, newPayment, openAppDb, parsePayment, receiptWork, runPayment, toCount } from './payment.js';

/** Every server this entry can start. */
export const PEERS = [
  'oncely-sqlite',
  'oncely-postgres',
  'oncely-nostore',
  'oncely-express',
  'oncely-express-tx',
  'oncely-express-pg',
  'oncely-express-pg-tx',
  'floor-express-pg-tx',
  'node-idempotency-memory',
  'node-idempotency-redis',
  'express-idempotency',
  'powertools-redis',
  'powertools-redis-unvalidated',
  'unguarded',
  'unguarded-postgres',
  'unguarded-express',
  'unguarded-express-pg',
  'recipe-sqlite',
  'recipe-postgres',
  'statements-postgres',
  'trivial',
] as const;

/** One of {@link PEERS}. */
export type PeerName = (typeof PEERS)[number];

const env = (name: string, fallback: string): string => process.env[name] ?? fallback;
const peer = process.argv[2] as PeerName;
if (!PEERS.includes(peer)) {
  console.error(`usage: serve.ts <${PEERS.join('|')}>`);
  process.exit(2);
}
const work = { workMs: Number(env('BENCH_WORK_MS', '0')), holdMs: Number(env('BENCH_HOLD_MS', '0')) };
const leaseMs = Number(env('BENCH_LEASE_MS', '10000'));

function announce(port: number): void {
  console.log(`peer ${peer} listening on http://127.0.0.1:${port}`);
}

type FetchHandler = (request: Request) => Response | Promise<Response>;

function serveFetch(fetch: FetchHandler): void {
  const server = serve({ fetch, port: 0, hostname: '127.0.0.1' }, (info) => announce(info.port));
  process.on('SIGTERM', () => server.close(() => process.exit(0)));
}

function serveExpress(app: express.Express): void {
  const server: Server = createServer(app);
  server.listen(0, '127.0.0.1', () => announce((server.address() as AddressInfo).port));
  // Idle keep-alive connections would hold `close` open, and the exit that writes a --cpu-prof file with it.
  process.on('SIGTERM', () => (server.close(() => process.exit(0)), server.closeAllConnections()));
}

/** The Express peers, on the app database `ctx.db`. */
async function expressPeer(ctx: PeerContext): Promise<express.Express> {
  switch (peer) {
    case 'oncely-express':
    case 'oncely-express-tx': {
      const wait = process.env['BENCH_IN_FLIGHT_WAIT_MS'];
      return oncelyExpress(ctx, {
        path: env('BENCH_ONCELY_DB', ':memory:'),
        leaseMs,
        transaction: peer === 'oncely-express-tx',
        ...(wait === undefined ? {} : { inFlightWaitMs: Number(wait) }),
      });
    }
    case 'oncely-express-pg':
    case 'oncely-express-pg-tx':
    case 'unguarded-express-pg': {
      const wait = process.env['BENCH_IN_FLIGHT_WAIT_MS'];
      const oncely = { transaction: peer === 'oncely-express-pg-tx', leaseMs, ...(wait === undefined ? {} : { inFlightWaitMs: Number(wait) }) };
      return expressPg(ctx, {
        url: env('BENCH_ONCELY_DB', ''),
        schema: env('BENCH_PG_SCHEMA', 'bench'),
        oncely: peer === 'unguarded-express-pg' ? null : oncely,
      });
    }
    case 'floor-express-pg-tx':
      return floorExpressPg(ctx, env('BENCH_ONCELY_DB', ''), env('BENCH_PG_SCHEMA', 'bench'));
    case 'node-idempotency-memory':
    case 'node-idempotency-redis':
      return nodeIdempotency(ctx, peer === 'node-idempotency-redis' ? 'redis' : 'memory');
    case 'express-idempotency':
      return expressIdempotencyApp(ctx);
    case 'powertools-redis':
    case 'powertools-redis-unvalidated':
      return powertools(ctx, peer === 'powertools-redis');
    default:
      return unguardedExpress(ctx);
  }
}

if (peer === 'oncely-sqlite' || peer === 'oncely-postgres' || peer === 'oncely-nostore') {
  const pgSchema = process.env['BENCH_PG_SCHEMA'];
  const db = peer === 'oncely-nostore' ? 'nostore' : env('BENCH_ONCELY_DB', ':memory:');
  const wait = process.env['BENCH_IN_FLIGHT_WAIT_MS'];
  const app = await createOncelyPeer({ db, work, leaseMs, ...(pgSchema ? { pgSchema } : {}), ...(wait === undefined ? {} : { inFlightWaitMs: Number(wait) }) });
  serveFetch((request) => app.fetch(request));
} else if (peer === 'unguarded-postgres') {
  // The same payment work with its charge in PostgreSQL, the way an app without a layer writes it:
  // one INSERT per payment on a pool of the size oncely's store uses.
  const { default: pg } = await import('pg');
  const schema = env('BENCH_PG_SCHEMA', 'bench');
  const pool = new pg.Pool({ connectionString: env('BENCH_ONCELY_DB', ''), max: 10, options: `-c search_path=${schema}` });
  await pool.query(`CREATE SCHEMA IF NOT EXISTS ${schema}; SET search_path = ${schema}; ${EXECUTIONS_DDL}`);
  serveFetch(async (request) => {
    if (request.method === 'GET') return Response.json(toCount((await pool.query(COUNT_SQL)).rows[0]));
    const input = parsePayment(await request.json().catch(() => null));
    if (typeof input === 'string') return Response.json({ error: input }, { status: 400 });
    const payment = newPayment(input);
    await pool.query(CHARGE_SQL, chargeParams(payment));
    await receiptWork(input, work);
    return Response.json(payment, { status: 201 });
  });
} else if (peer === 'recipe-sqlite') {
  const { sqliteRecipe } = await import('./recipe.js');
  serveFetch(sqliteRecipe(env('BENCH_ONCELY_DB', ':memory:'), work).fetch);
} else if (peer === 'recipe-postgres') {
  const [{ default: pg }, { postgresRecipe }] = await Promise.all([import('pg'), import('./recipe.js')]);
  const schema = env('BENCH_PG_SCHEMA', 'bench');
  const pool = new pg.Pool({ connectionString: env('BENCH_ONCELY_DB', ''), max: 10, options: `-c search_path=${schema}` });
  await pool.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
  serveFetch((await postgresRecipe(pool, work)).fetch);
} else if (peer === 'statements-postgres') {
  const [{ default: pg }, { statementsApp }] = await Promise.all([import('pg'), import('./statements-pg.js')]);
  const schema = env('BENCH_PG_SCHEMA', 'bench');
  const pool = new pg.Pool({
    connectionString: env('BENCH_ONCELY_DB', ''),
    max: 10,
    options: `-c search_path=${schema}`,
    pipeline: true,
  } as import('pg').PoolConfig);
  serveFetch((await statementsApp(pool, env('BENCH_ONCELY_DB', ''), schema, work, leaseMs)).fetch);
} else if (peer === 'trivial') {
  serveFetch(() => new Response('ok'));
} else {
  const db = openAppDb(env('BENCH_APP_DB', ':memory:'));
  if (peer === 'unguarded') {
    // The same payment work on the same HTTP stack as oncely (@hono/node-server), with no idempotency layer.
    serveFetch(async (request) => {
      if (request.method === 'GET') return Response.json(db.count());
      const input = parsePayment(await request.json().catch(() => null));
      if (typeof input === 'string') return Response.json({ error: input }, { status: 400 });
      return Response.json(await runPayment(input, db, work), { status: 201 });
    });
  } else {
    const ctx: PeerContext = {
      db,
      work,
      namespace: env('BENCH_NS', `bench-${process.pid}`),
      redisUrl: env('BENCH_REDIS_URL', 'redis://127.0.0.1:6379'),
      inProgressMs: leaseMs,
    };
    serveExpress(await expressPeer(ctx));
  }
}
