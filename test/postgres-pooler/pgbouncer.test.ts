/**
 * PostgreSQL behind PgBouncer (issue 40), in transaction and in session pool mode, both with
 * `ignore_startup_parameters = extra_float_digits,options` (a startup `-c search_path=…` is dropped):
 *
 * - two `oncely serve` instances on one schema through PgBouncer, with a direct LISTEN URL;
 * - two Express apps (`oncely/express`, `transaction: true`) each on its own `pg.Pool` through
 *   PgBouncer, on another schema, with the store's defaults otherwise;
 *
 * 300 payments each, at concurrency 30, every other one duplicated on the other instance 100 ms
 * after the original (which is slowed so the duplicate finds it in flight): every answer final
 * (no 5xx), one payment and one ledger entry per key, in the configured schema and none in
 * `public`, and each cross-instance duplicate answered within 600 ms of its original (or before it:
 * a duplicate woken by the original's commit may answer before the original's own response is out).
 */
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import express from 'express';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { idempotent } from '../../src/server/middleware/express.js';
import { postgresKeyStore } from '../../src/server/postgres.js';
import { canRunPgBouncerTests, startPgBouncer, type PoolMode } from '../support/pgbouncer.js';
import { postPayment, spawnServe, type Served } from '../reference/serve-process.js';

const withBouncer = await canRunPgBouncerTests();
const run = randomBytes(3).toString('hex');
const PAYMENTS = 300;
const CONCURRENCY = 30;
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

interface Outcome {
  readonly key: string;
  readonly original: { status: number; replay: string | null; at: number };
  readonly duplicate?: { status: number; replay: string | null; at: number };
}

type Post = (target: 0 | 1, key: string) => Promise<Response | undefined>;

/** 300 keys through `post`: the original to instance 0, every other key duplicated to instance 1. */
async function load(post: Post, prefix: string): Promise<Outcome[]> {
  const outcomes: Outcome[] = [];
  let next = 0;
  const one = async (key: string, duplicated: boolean): Promise<Outcome> => {
    const t0 = performance.now();
    const answer = async (target: 0 | 1) => {
      const response = await post(target, key);
      await response?.arrayBuffer();
      return { status: response?.status ?? 0, replay: response?.headers.get('idempotency-replay') ?? null, at: performance.now() - t0 };
    };
    const original = answer(0);
    if (!duplicated) return { key, original: await original };
    await sleep(100);
    const duplicate = await answer(1);
    return { key, original: await original, duplicate };
  };
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < PAYMENTS) {
        const i = next++;
        outcomes.push(await one(`${prefix}-${i}`, i % 2 === 0));
      }
    }),
  );
  return outcomes;
}

/** The load's verdicts, each with the keys that broke it. */
function judge(outcomes: Outcome[]) {
  const late = outcomes.filter((o) => o.duplicate && o.duplicate.at - o.original.at > 600);
  console.info(
    `[pgbouncer] slowest duplicate after its original: ${Math.max(...outcomes.filter((o) => o.duplicate).map((o) => o.duplicate!.at - o.original.at)).toFixed(0)} ms`,
  );
  return {
    originals: outcomes.filter((o) => o.original.status !== 201).map((o) => `${o.key}: ${o.original.status}`),
    // Whichever of the pair the database admitted first runs; the other is its replay.
    duplicates: outcomes
      .filter((o) => o.duplicate && (o.duplicate.status !== 201 || (o.original.replay === 'true') === (o.duplicate.replay === 'true')))
      .map((o) => `${o.key}: ${o.duplicate!.status}, replays ${o.original.replay} ${o.duplicate!.replay}`),
    late: late.map((o) => `${o.key}: +${(o.duplicate!.at - o.original.at).toFixed(0)} ms`),
  };
}

async function inspect(direct: string, sql: string, params: unknown[] = []): Promise<Record<string, unknown>[]> {
  const client = new pg.Client({ connectionString: direct });
  await client.connect();
  try {
    return (await client.query(sql, params)).rows;
  } finally {
    await client.end();
  }
}

describe.skipIf(!withBouncer).each(['transaction', 'session'] as PoolMode[])('PostgreSQL through PgBouncer in %s mode (startup options ignored)', (mode) => {
  const schemas: string[] = [];
  let direct: string | undefined;
  afterAll(async () => {
    if (direct === undefined) return;
    for (const schema of schemas) await inspect(direct, `DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  });

  it('two oncely serve instances: 300 payments, cross-instance duplicates, effects in the configured schema', { timeout: 120_000 }, async () => {
    const bouncer = await startPgBouncer(mode);
    direct = bouncer.direct;
    const schema = `oncely_t_pooler_serve_${mode}_${run}`;
    schemas.push(schema);
    const common = ['--db', bouncer.url, '--pg-schema', schema, '--pg-listen-url', bouncer.direct, '--in-flight-wait', '8s', '--quiet'];
    const served: Served[] = [];
    try {
      served.push(await spawnServe([...common, '--faults', 'slow:ext2:300']));
      served.push(await spawnServe(common));
      const prefix = `serve-${mode}-${run}`;
      const verdict = judge(await load((target, key) => postPayment(served[target]!.url, key), prefix));
      expect(verdict, bouncer.log().slice(-2000)).toEqual({ originals: [], duplicates: [], late: [] });
      const [effects] = await inspect(
        bouncer.direct,
        `SELECT (SELECT count(*)::int FROM ${schema}.payments WHERE idempotency_key LIKE $1) AS payments,
                (SELECT count(DISTINCT idempotency_key)::int FROM ${schema}.payments WHERE idempotency_key LIKE $1) AS keys,
                (SELECT count(*)::int FROM ${schema}.ledger_entries WHERE idempotency_key LIKE $1) AS ledger,
                to_regclass('public.payments') IS NOT NULL AS public_payments`,
        [`${prefix}-%`],
      );
      expect(effects).toMatchObject({ payments: PAYMENTS, keys: PAYMENTS, ledger: PAYMENTS });
      if (effects!['public_payments']) {
        const [stray] = await inspect(bouncer.direct, `SELECT count(*)::int AS n FROM public.payments WHERE idempotency_key LIKE $1`, [`${prefix}-%`]);
        expect(stray).toEqual({ n: 0 });
      }
      // The startup line says how instances on other hosts are heard.
      for (const s of served) expect(s.lines.join('\n')).toMatch(/wake-ups: LISTEN on a direct connection/);
      for (const s of served) expect(s.stderr).toEqual([]);
    } finally {
      await Promise.all(served.map((s) => s.stop()));
      await bouncer.stop();
    }
  });

  it('two Express apps with transaction: true, each on its own pg.Pool: 300 payments, cross-instance duplicates', { timeout: 120_000 }, async () => {
    const bouncer = await startPgBouncer(mode);
    direct = bouncer.direct;
    const schema = `oncely_t_pooler_express_${mode}_${run}`;
    schemas.push(schema);
    const pools: pg.Pool[] = [];
    const closers: Array<() => Promise<unknown>> = [];
    try {
      const urls: string[] = [];
      for (const slow of [300, 0]) {
        const pool = new pg.Pool({ connectionString: bouncer.url, max: 10 });
        pool.on('error', () => undefined);
        pools.push(pool);
        const store = postgresKeyStore({ pool, schema, listenUrl: bouncer.direct });
        closers.push(() => store.close());
        urls.push('');
        const app = express();
        app.use(express.json());
        app.post('/v1/payments', idempotent({ store, transaction: true, inFlightWaitMs: 8000, clientId: () => 'acme' }), async (req, res, next) => {
          try {
            const tx = req.oncely!.tx!;
            await tx.run('INSERT INTO payments (key, amount) VALUES ($1, $2)', [req.oncely!.key, req.body.amount]);
            if (slow) await sleep(slow);
            await tx.run('INSERT INTO ledger (key, amount) VALUES ($1, $2)', [req.oncely!.key, req.body.amount]);
            res.status(201).json({ paid: req.body.amount });
          } catch (error) {
            next(error);
          }
        });
        const server = app.listen(0, '127.0.0.1');
        await new Promise((resolve) => server.once('listening', resolve));
        closers.push(() => new Promise((resolve) => server.close(resolve)));
        urls[urls.length - 1] = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/payments`;
      }
      // Migrations of both instances at the same moment, through the pooler.
      const ddl = {
        sqlite: '',
        postgres:
          'CREATE TABLE IF NOT EXISTS payments (key text NOT NULL, amount int NOT NULL); CREATE TABLE IF NOT EXISTS ledger (key text NOT NULL, amount int NOT NULL)',
      };
      await Promise.all(pools.map((pool) => postgresKeyStore({ pool, schema }).migrate(ddl)));
      const prefix = `express-${mode}-${run}`;
      const post: Post = (target, key) =>
        fetch(urls[target]!, {
          method: 'POST',
          headers: { 'idempotency-key': key, 'content-type': 'application/json' },
          body: JSON.stringify({ amount: 1250 }),
        }).catch(() => undefined);
      const verdict = judge(await load(post, prefix));
      expect(verdict, bouncer.log().slice(-2000)).toEqual({ originals: [], duplicates: [], late: [] });
      const [effects] = await inspect(
        bouncer.direct,
        `SELECT (SELECT count(*)::int FROM ${schema}.payments WHERE key LIKE $1) AS payments,
                (SELECT count(DISTINCT key)::int FROM ${schema}.payments WHERE key LIKE $1) AS keys,
                (SELECT count(*)::int FROM ${schema}.ledger WHERE key LIKE $1) AS ledger,
                to_regclass('public.ledger') IS NOT NULL AS public_ledger`,
        [`${prefix}-%`],
      );
      expect(effects).toEqual({ payments: PAYMENTS, keys: PAYMENTS, ledger: PAYMENTS, public_ledger: false });
    } finally {
      for (const close of closers.reverse()) await close().catch(() => undefined);
      await Promise.all(pools.map((pool) => pool.end()));
      await bouncer.stop();
    }
  });
});
