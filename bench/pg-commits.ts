/**
 * PostgreSQL round trips and commits per first execution of a five-step operation (H1 local,
 * EXT1 external, H2 local, EXT2 external, final) through the idempotency handler: what a store
 * change may not increase. Commits are pg_stat_database's xact_commit delta of a database of the
 * script's own (created and dropped). A round trip is a burst of writes to a store connection's
 * socket after data came back on it.
 *
 * Usage: `node --import tsx bench/pg-commits.ts [operations = 200]` (`ONCELY_PG_URL`, else
 * `postgres://postgres@127.0.0.1:5432/test`, for the admin connection).
 *
 * @module
 */
import net from 'node:net';
import pg from 'pg';
import { createIdempotencyHandler } from '../src/server/index.js';
import type { IdempotentOperation } from '../src/server/index.js';
import { postgresKeyStore } from '../src/server/store/postgres.node.js';

const operations = Number(process.argv[2] ?? 200);
const url = process.env['ONCELY_PG_URL'] ?? 'postgres://postgres@127.0.0.1:5432/test';
const database = `oncely_pg_commits_${process.pid}`;
const admin = new pg.Client({ connectionString: url });
await admin.connect();
await admin.query(`CREATE DATABASE ${database}`);
const target = new URL(url);
target.pathname = `/${database}`;

// Round trips: a write to a socket after the socket last received data starts one.
let counting = false;
let roundTrips = 0;
const waiting = new WeakSet<net.Socket>();
const write = net.Socket.prototype.write;
net.Socket.prototype.write = function (this: net.Socket, ...args: unknown[]) {
  if (counting && !waiting.has(this)) {
    roundTrips += 1;
    waiting.add(this);
    this.once('data', () => waiting.delete(this));
  }
  return (write as (...a: unknown[]) => boolean).apply(this, args);
} as typeof write;

const local = (point: string, n: number) => ({
  kind: 'local' as const,
  point,
  run: async (ctx: { key: string }, tx: { run(sql: string, params?: readonly unknown[]): Promise<number> }) => {
    await tx.run(n === 1 ? 'INSERT INTO notes (key, step) VALUES ($1, 1)' : 'UPDATE notes SET step = $2 WHERE key = $1', n === 1 ? [ctx.key] : [ctx.key, n]);
    return { [`h${n}`]: n };
  },
});
const external = (n: number) => ({
  kind: 'external' as const,
  system: n,
  sent: `EXT${n}_SENT`,
  done: `EXT${n}_DONE`,
  call: async () => ({ outcome: 'done' as const, data: { [`ext${n}`]: `ref-${n}` } }),
  probe: async () => ({ outcome: 'done' as const, data: { [`ext${n}`]: `ref-${n}` } }),
});
const operation: IdempotentOperation<unknown> = {
  method: 'POST',
  path: '/v1/pay',
  parse: () => ({ ok: true, input: {} }),
  steps: [local('H1_DONE', 1), external(1), local('H2_DONE', 2), external(2)],
  final: {
    kind: 'final',
    run: async (ctx, tx) => {
      await tx.run('UPDATE notes SET step = 3 WHERE key = $1', [ctx.key]);
      return { status: 201, headers: { 'content-type': 'application/json' }, body: JSON.stringify(ctx.data) };
    },
  },
};
const commits = async (): Promise<number> =>
  Number((await admin.query<{ n: string }>('SELECT xact_commit::text AS n FROM pg_stat_database WHERE datname = $1', [database])).rows[0]!.n);
/**
 * Commits and round trips of `n` first executions by a store opened and closed around them: its
 * connections end, so their backends report their counts. What opening costs is the same for
 * every `n`, so the difference of two runs is what the executions cost.
 */
async function measure(n: number, prefix: string): Promise<{ commits: number; roundTrips: number }> {
  const store = postgresKeyStore({ connectionString: target.toString(), schema: 'oncely' });
  await store.migrate({ sqlite: '', postgres: 'CREATE TABLE IF NOT EXISTS notes (key text PRIMARY KEY, step int)' });
  const handler = createIdempotencyHandler({ store, operations: [operation], authenticate: () => 'acme' });
  await new Promise((resolve) => setTimeout(resolve, 1500));
  const c0 = await commits();
  roundTrips = 0;
  counting = true;
  for (let i = 0; i < n; i += 1) {
    const response = await handler.handle(
      new Request('http://oncely.test/v1/pay', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': `${prefix}-${i}` },
        body: '{}',
      }),
    );
    if (response?.status !== 201) throw new Error(`${prefix}-${i}: ${response?.status}`);
  }
  counting = false;
  const trips = roundTrips;
  await store.close();
  await new Promise((resolve) => setTimeout(resolve, 1500));
  return { commits: (await commits()) - c0, roundTrips: trips };
}
try {
  await measure(20, 'warm');
  const small = await measure(operations, 'a');
  const large = await measure(2 * operations, 'b');
  const per = (f: 'commits' | 'roundTrips'): string => ((large[f] - small[f]) / operations).toFixed(2);
  console.log(`${per('roundTrips')} round trips, ${per('commits')} commits per first execution (runs of ${operations} and ${2 * operations}, one at a time)`);
} finally {
  await admin.query(`DROP DATABASE ${database} WITH (FORCE)`);
  await admin.end();
}
