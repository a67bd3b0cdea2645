/**
 * The reference server (`oncely serve`) on PostgreSQL, in one run next to SQLite:
 *
 * - first execution (a fresh key per request: the full five-step payment) and replay (one
 *   finished key), req/s and p99, on SQLite, on PostgreSQL with one instance, and on PostgreSQL
 *   with four instances sharing the database (one autocannon per instance, the same total
 *   connections: req/s summed, p99 the worst instance's), and on one instance whose sessions run
 *   `synchronous_commit=off` (how much of PostgreSQL's cost is the WAL flush of each phase commit);
 * - first-execution throughput with 1 000 000 finished keys stored vs an empty key table, the two
 *   servers alternated round by round (goal ≥ 0.9×). The keys are written straight into the
 *   key table in one statement, shaped like rows the handler finishes.
 *
 * Every measurement is alternated with the others round by round, so a noisy stretch of the
 * shared machine hits all of them. PostgreSQL: `ONCELY_PG_URL`, else
 * `postgres://postgres@127.0.0.1:5432/test`; each server gets its own schema, dropped at the end.
 *
 * Usage: `npx tsx bench/postgres.ts` (env: BENCH_ROUNDS, BENCH_LOAD_SECONDS, BENCH_CONNECTIONS,
 * BENCH_SCALE_KEYS, BENCH_QUICK=1). Prints a table and writes bench/results/postgres.json.
 *
 * @module
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { postgresKeyStore } from '../src/server/store/postgres.node.js';
import { CONNECTIONS, LOAD_SECONDS, QUICK, ROUNDS, figure, type Figure } from './lib/figures.js';
import { runLoad, type LoadResult } from './lib/load.js';
import { ROOT, TSX, startServer, type ServerProcess } from './lib/proc.js';
import { alternate, ratios } from './lib/stats.js';

const PG_URL = process.env['ONCELY_PG_URL'] ?? 'postgres://postgres@127.0.0.1:5432/test';
const KEYS = Number(process.env['BENCH_SCALE_KEYS'] ?? (QUICK ? 200_000 : 1_000_000));
const RUN = `b${process.pid}`;
const body = JSON.stringify({ amount: 1250, currency: 'EUR', reference: 'bench-postgres' });
const auth = { authorization: 'Bearer test_acme' };

const admin = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 3000 });
try {
  await admin.connect();
} catch (error) {
  console.error(`bench/postgres.ts: PostgreSQL does not answer at ${PG_URL}: ${(error as Error).message}`);
  process.exit(1);
}

const servers: ServerProcess[] = [];
const schemas: string[] = [];
const dir = mkdtempSync(join(tmpdir(), 'oncely-bench-pg-'));

async function serve(db: string, schema?: string): Promise<ServerProcess> {
  const args = [...TSX, join(ROOT, 'src/cli/main.ts'), 'serve', '--port', '0', '--db', db, '--quiet', '--reaper-interval', '0'];
  const server = await startServer(schema ? [...args, '--pg-schema', schema] : args);
  servers.push(server);
  return server;
}

async function post(url: string, key: string): Promise<number> {
  const response = await fetch(`${url}/v1/payments`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json', 'idempotency-key': key },
    body,
  });
  await response.arrayBuffer();
  return response.status;
}

const newSchema = (name: string): string => {
  const schema = `oncely_bench_${name}_${RUN}`;
  schemas.push(schema);
  return schema;
};

// Targets: each is one or more server URLs sharing one database.
const sqlite = [await serve(join(dir, 'sqlite.db'))];
const pgSchema = newSchema('one');
const pgOne = [await serve(PG_URL, pgSchema)];
// The same with commits acknowledged before their WAL flush: roughly SQLite's synchronous=NORMAL,
// to show how much of the gap is the per-commit fsync of the other rows (never a production setting
// for this table: a crash could lose an acknowledged recovery point).
const asyncSchema = newSchema('async');
const pgAsync = [await serve(`${PG_URL}?options=${encodeURIComponent('-c synchronous_commit=off')}`, asyncSchema)];
const fourSchema = newSchema('four');
const pgFour = [await serve(PG_URL, fourSchema)];
pgFour.push(...(await Promise.all([1, 2, 3].map(() => serve(PG_URL, fourSchema)))));

// The scale pair: an empty key table and one holding KEYS finished keys.
const emptySchema = newSchema('empty');
const seededSchema = newSchema('seeded');
for (const schema of [emptySchema, seededSchema]) {
  const store = postgresKeyStore({ connectionString: PG_URL, schema });
  await store.migrate();
  await store.close();
}
const seedStarted = Date.now();
const response = JSON.stringify({
  id: 'pay_seed',
  status: 'succeeded',
  amount: 1250,
  currency: 'EUR',
  reference: 'seed',
  created_at: '2026-12-02T00:00:00.000Z',
});
await admin.query(
  `INSERT INTO ${seededSchema}.oncely_keys (client_id, key, request_hash, endpoint, request_body, state, recovery_point, data,
     response_status, response_headers, response_body, created_at, expires_at)
   SELECT 'acme', 'seed-' || lpad(i::text, 8, '0') || '-' || md5(i::text), md5(i::text) || md5((i + 1)::text), 'POST /v1/payments', $2,
          'finished', 'EXT2_DONE', '{"charge":"ch_seed"}', 201, '{"content-type":"application/json"}', $3,
          now() - i * interval '50 milliseconds', now() + interval '24 hours' - i * interval '50 milliseconds'
     FROM generate_series(1, $1::int) AS i`,
  [KEYS, body, response],
);
await admin.query(`ANALYZE ${seededSchema}.oncely_keys`);
const seedMs = Date.now() - seedStarted;
const stored = Number((await admin.query<{ n: string }>(`SELECT count(*) AS n FROM ${seededSchema}.oncely_keys`)).rows[0]!.n);
console.error(`postgres bench: ${stored} keys seeded in ${seedMs} ms`);
const empty = [await serve(PG_URL, emptySchema)];
const seeded = [await serve(PG_URL, seededSchema)];

const targets = { sqlite, 'postgres-1': pgOne, 'postgres-4': pgFour, 'postgres-async': pgAsync } as const;
for (const [name, group] of Object.entries(targets)) {
  if ((await post(group[0]!.url, `replay-${name}`)) !== 201) throw new Error(`${name}: warm-up payment failed`);
}

/** One load over a group: one autocannon per server, the connections split between them. */
const loadOver = (group: readonly ServerProcess[], mode: 'fresh' | 'fixed', key?: string) => async (): Promise<LoadResult> => {
  const share = (i: number): number => Math.floor(CONNECTIONS / group.length) + (i < CONNECTIONS % group.length ? 1 : 0);
  const runs = await Promise.all(
    group.map((server, i) =>
      runLoad({
        url: `${server.url}/v1/payments`,
        method: 'POST',
        body,
        keyMode: mode,
        keyPrefix: `pg-${i}`,
        headers: key ? { ...auth, 'idempotency-key': key } : auth,
        connections: Math.max(1, share(i)),
        durationSec: LOAD_SECONDS,
      }),
    ),
  );
  const statuses: Record<string, number> = {};
  for (const run of runs) for (const [status, n] of Object.entries(run.statuses)) statuses[status] = (statuses[status] ?? 0) + n;
  return {
    rps: runs.reduce((sum, run) => sum + run.rps, 0),
    p50: Math.max(...runs.map((run) => run.p50)),
    p99: Math.max(...runs.map((run) => run.p99)),
    requests: runs.reduce((sum, run) => sum + run.requests, 0),
    errors: runs.reduce((sum, run) => sum + run.errors, 0),
    non2xx: runs.reduce((sum, run) => sum + run.non2xx, 0),
    statuses,
  };
};

const measurements: Record<string, () => Promise<LoadResult>> = {};
for (const [name, group] of Object.entries(targets)) {
  measurements[`${name}.first`] = loadOver(group, 'fresh');
  measurements[`${name}.replay`] = loadOver(group, 'fixed', `replay-${name}`);
}
measurements['scale.empty'] = loadOver(empty, 'fresh');
measurements['scale.seeded'] = loadOver(seeded, 'fresh');

const started = Date.now();
const loads = await alternate(ROUNDS, measurements);
await Promise.all(servers.map((server) => server.stop(2000)));
for (const schema of schemas) await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
await admin.end();
rmSync(dir, { recursive: true, force: true });

const LABELS: Record<string, string> = {
  'sqlite.first': 'SQLite, 1 instance: first execution',
  'sqlite.replay': 'SQLite, 1 instance: replay',
  'postgres-1.first': 'PostgreSQL, 1 instance: first execution',
  'postgres-1.replay': 'PostgreSQL, 1 instance: replay',
  'postgres-4.first': 'PostgreSQL, 4 instances: first execution',
  'postgres-4.replay': 'PostgreSQL, 4 instances: replay',
  'postgres-async.first': 'PostgreSQL, 1 instance, synchronous_commit=off: first execution',
  'postgres-async.replay': 'PostgreSQL, 1 instance, synchronous_commit=off: replay',
  'scale.empty': `PostgreSQL, empty key table: first execution`,
  'scale.seeded': `PostgreSQL, ${stored.toLocaleString('en')} keys stored: first execution`,
};
const figures: Figure[] = [];
const rows: string[] = [];
for (const name of Object.keys(measurements)) {
  const runs = loads[name] ?? [];
  const expected = '201';
  const unexpected = runs.reduce(
    (n, run) =>
      n +
      run.errors +
      Object.entries(run.statuses)
        .filter(([s]) => s !== expected)
        .reduce((m, [, c]) => m + c, 0),
    0,
  );
  const rps = figure(
    `postgres.${name}.rps`,
    `${LABELS[name]} req/s`,
    'req/s',
    runs.map((run) => run.rps),
  );
  const p99 = figure(
    `postgres.${name}.p99`,
    `${LABELS[name]} p99`,
    'ms',
    runs.map((run) => run.p99),
  );
  figures.push(rps, p99);
  rows.push(`| ${LABELS[name]} | ${Math.round(rps.median)} | ${Math.round(rps.min)}–${Math.round(rps.max)} | ${p99.median} | ${unexpected} |`);
}
const scale = figure(
  'postgres.scale.seeded_vs_empty',
  `first execution with ${stored.toLocaleString('en')} keys ÷ empty`,
  '×',
  ratios(
    (loads['scale.seeded'] ?? []).map((r) => r.rps),
    (loads['scale.empty'] ?? []).map((r) => r.rps),
  ),
  { op: '>=', value: 0.9 },
);
figures.push(scale);

const machine = { cores: cpus().length, loadAverage: loadavg().map((l) => Math.round(l * 100) / 100) };
console.error(
  [
    `oncely serve — ${CONNECTIONS} connections, ${LOAD_SECONDS} s × ${ROUNDS} alternated rounds, ${Math.round((Date.now() - started) / 1000)} s; ` +
      `${machine.cores} cores, load ${machine.loadAverage.join(' ')}`,
    '',
    '| what | req/s median | min–max | p99 ms (median) | non-201 answers |',
    '|---|---|---|---|---|',
    ...rows,
    '',
    `1M keys vs empty: ${scale.median.toFixed(2)}× (goal ≥ 0.9: ${scale.pass ? 'met' : 'missed'}); seeded in ${Math.round(seedMs / 1000)} s`,
  ].join('\n'),
);
const result = { suite: 'postgres', figures, tables: [], details: { loads, seedMs, stored, machine, postgres: PG_URL.replace(/\/\/[^@]*@/, '//') } };
mkdirSync(join(ROOT, 'bench/results'), { recursive: true });
writeFileSync(join(ROOT, 'bench/results/postgres.json'), `${JSON.stringify(result, null, 2)}\n`);
console.log(JSON.stringify(result));
