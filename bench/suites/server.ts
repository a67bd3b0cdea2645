/**
 * Server suite: oncely's first execution, replay and `409` on SQLite and PostgreSQL, next to the
 * same payment work with no idempotency layer and a trivial `@hono/node-server` handler — all on
 * the same HTTP stack, each goal's two sides run back to back, round after round in mirrored
 * order, with each load's CPU (server and PostgreSQL backends) and WAL per request beside its
 * req/s. The goals: `peers/server-goals.ts`.
 *
 * PostgreSQL: `ONCELY_PG_URL`, else `postgres://postgres@127.0.0.1:5432/test`; skipped (and said
 * so in the result) when neither answers.
 *
 * Run alone: `node --import tsx bench/suites/server.ts`.
 *
 * @module
 */
import pg from 'pg';
import { COST_COLUMNS, armLoad, costCells, costFigures, type Arm } from '../lib/arms.js';
import { CONNECTIONS, INFO_SECONDS, LOAD_SECONDS, ROUNDS, SETTLE_SECONDS, emit, figure, type Figure, type ResultTable } from '../lib/figures.js';
import type { LoadResult } from '../lib/load.js';
import type { ServerProcess } from '../lib/proc.js';
import { findPgbench, pgbenchLoad, setUpPgbench } from '../lib/pgbench.js';
import { alternate, summarize } from '../lib/stats.js';
import { discard, executions, freshState, pay, payBody, startPeer } from '../peers/scenarios.js';
import { serverGoals } from '../peers/server-goals.js';
import type { PeerName } from '../peers/serve.js';

const PG_URL = process.env['ONCELY_PG_URL'] ?? 'postgres://postgres@127.0.0.1:5432/test';

async function postgresReachable(): Promise<boolean> {
  const client = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

async function dropSchema(schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await client.end();
}

const withPg = await postgresReachable();
const body = payBody('server-bench');
const auth = { authorization: 'Bearer bench' };
// A lease far longer than the run, so that the held request's key answers 409 throughout.
const LEASE_MS = 600_000;

interface Target {
  readonly name: string;
  readonly server: ServerProcess;
  readonly held?: Promise<unknown>;
}

const targets: Target[] = [];
const start = async (name: string, peer: PeerName, pgBacked: boolean): Promise<ServerProcess> => {
  const state = freshState(pgBacked ? PG_URL : undefined);
  // Duplicates of the held request answer 409 at once: that is the path the in-flight figure measures.
  const server = await startPeer(peer, { leaseMs: LEASE_MS, holdMs: LEASE_MS, state, inFlightWaitMs: 0 });
  targets.push({ name, server });
  cleanups.push(async () => discard(state));
  if (pgBacked) cleanups.push(() => dropSchema(state.pgSchema));
  return server;
};
const cleanups: Array<() => Promise<void>> = [];

const measurements: Record<string, () => Promise<LoadResult>> = {};
const arm = (server: ServerProcess, pgBacked: boolean, spec: Omit<Arm, 'pid' | 'url'> & { path?: string }): (() => Promise<LoadResult>) => {
  const { path = '/pay', ...rest } = spec;
  return armLoad({ ...rest, url: `${server.url}${path}`, pid: server.child.pid, ...(pgBacked ? { pgUrl: PG_URL } : {}) });
};

for (const store of withPg ? (['sqlite', 'postgres'] as const) : (['sqlite'] as const)) {
  const pgBacked = store === 'postgres';
  const server = await start(`oncely-${store}`, `oncely-${store}`, pgBacked);
  const replayKey = `replay-${store}`;
  if ((await pay(server.url, replayKey, body)).status !== 201) throw new Error(`oncely-${store}: warm-up failed`);
  // Hold one request in the middle of its work: its key answers 409 for the whole run.
  const heldBody = payBody('hold-409');
  void pay(server.url, 'held-key', heldBody);
  while ((await executions(server.url)).executions < 2) await new Promise((r) => setTimeout(r, 20));
  measurements[`${store}.first`] = arm(server, pgBacked, { body, keyMode: 'fresh', headers: auth });
  measurements[`${store}.replay`] = arm(server, pgBacked, { body, keyMode: 'fixed', headers: { ...auth, 'idempotency-key': replayKey } });
  measurements[`${store}.409`] = arm(server, pgBacked, {
    body: heldBody,
    weight: 'info',
    keyMode: 'fixed',
    headers: { ...auth, 'idempotency-key': 'held-key' },
  });
}
// The design article's recipe written by hand, on each store's own database (recipe.ts).
for (const store of withPg ? (['sqlite', 'postgres'] as const) : (['sqlite'] as const)) {
  const recipe = await start(`recipe-${store}`, `recipe-${store}`, store === 'postgres');
  if ((await pay(recipe.url, `warm-${store}`, body)).status !== 201) throw new Error(`recipe-${store}: warm-up failed`);
  measurements[`recipe-${store}`] = arm(recipe, store === 'postgres', { body, keyMode: 'fresh', headers: auth });
}
const unguarded = await start('unguarded', 'unguarded', false);
measurements['unguarded'] = arm(unguarded, false, { body, weight: 'info', keyMode: 'fresh', headers: auth });
if (withPg) {
  // oncely on PostgreSQL next to the same app on PostgreSQL: the layer is the only difference.
  const unguardedPg = await start('unguarded-postgres', 'unguarded-postgres', true);
  measurements['unguarded-postgres'] = arm(unguardedPg, true, { body, keyMode: 'fresh', headers: auth });
  // The store's statements sent from Node by `pg` with nothing of oncely's around them
  // (statements-pg.ts): what Node, its driver and HTTP leave of the SQL's bound.
  const statements = await start('statements-postgres', 'statements-postgres', true);
  measurements['statements-postgres'] = arm(statements, true, { body, weight: 'info', keyMode: 'fresh', headers: auth });
}
// The SQL's own bound (bench/pgbench/): the first execution's statements as the store pipelines
// them, and the unguarded app's one INSERT, from a C client, alternated with the loads above.
const pgbench = withPg ? await findPgbench() : undefined;
if (pgbench) {
  cleanups.push(await setUpPgbench(PG_URL));
  measurements['sql.insert'] = () => pgbenchLoad(pgbench, PG_URL, 'insert', CONNECTIONS, LOAD_SECONDS);
  measurements['sql.store'] = () => pgbenchLoad(pgbench, PG_URL, 'first-execution-store', CONNECTIONS, LOAD_SECONDS);
  // The same round trips with plain UPDATEs instead of the store's fenced functions: what the functions cost.
  measurements['sql.first'] = () => pgbenchLoad(pgbench, PG_URL, 'first-execution-pipelined', CONNECTIONS, LOAD_SECONDS);
}
const trivial = await start('trivial', 'trivial', false);
measurements['trivial'] = arm(trivial, false, { path: '/', body, keyMode: 'fixed', headers: auth });

/**
 * The order of a round, block by block, each goal's sides next to each other: the in-flight
 * arms (shown only); the replays either side of the trivial handler; each store's first
 * execution between the recipe and the unguarded app on its database; the pgbench bound.
 */
const ORDER = [
  'sqlite.409',
  'postgres.409',
  'sqlite.replay',
  'trivial',
  'postgres.replay',
  'unguarded',
  'sqlite.first',
  'recipe-sqlite',
  'recipe-postgres',
  'postgres.first',
  'unguarded-postgres',
  'statements-postgres',
  'sql.store',
  'sql.insert',
  'sql.first',
];
const ordered = Object.fromEntries(
  [...ORDER, ...Object.keys(measurements)].filter((n, i, all) => n in measurements && all.indexOf(n) === i).map((n) => [n, measurements[n]!]),
);
const loads = await alternate(ROUNDS, ordered);
await Promise.all(targets.map((t) => t.server.stop(1000)));
for (const cleanup of cleanups) await cleanup();

const rps = (name: string): number[] => (loads[name] ?? []).map((r) => r.rps);
const MODES: Record<string, string> = { first: 'first execution', replay: 'replay', '409': 'in flight (409)' };
const NAMED: Record<string, string> = {
  trivial: 'trivial @hono/node-server handler',
  unguarded: 'same payment work, no idempotency layer',
  'unguarded-postgres': 'same payment work on PostgreSQL, no idempotency layer',
  'statements-postgres': 'the store’s statements from Node (pg, same HTTP stack), no layer',
  'recipe-sqlite': "the article's recipe by hand on SQLite (one transaction per step)",
  'recipe-postgres': "the article's recipe by hand on PostgreSQL (one transaction per step)",
};
/** An arm's label in the table: `sqlite.first` → oncely on SQLite: first execution. */
const labelOf = (name: string): string => {
  const [store, mode] = name.split('.');
  return mode ? `oncely on ${store === 'sqlite' ? 'SQLite' : 'PostgreSQL'}: ${MODES[mode]}` : (NAMED[name] ?? name);
};
/** Median, min and max of a series, rounded, for a table row. */
const summary = (values: number[]): [number, number, number] => {
  const { median, min, max } = summarize(values);
  return [Math.round(median), Math.round(min), Math.round(max)];
};
const figures: Figure[] = [];
const rows: Array<Array<string | number | boolean | null>> = [];
for (const name of Object.keys(ordered).filter((name) => !name.startsWith('sql.'))) {
  const runs = loads[name] ?? [];
  const label = labelOf(name);
  const r = figure(
    `server.${name}.rps`,
    `${label} req/s`,
    'req/s',
    runs.map((x) => x.rps),
  );
  const p = figure(
    `server.${name}.p99`,
    `${label} p99`,
    'ms',
    runs.map((x) => x.p99),
  );
  figures.push(r, p, ...costFigures(`server.${name}`, label, runs));
  const expected = name.endsWith('.409') ? '409' : name === 'trivial' ? '200' : '201';
  const unexpected = runs.reduce(
    (n, x) =>
      n +
      x.errors +
      Object.entries(x.statuses)
        .filter(([s]) => s !== expected)
        .reduce((m, [, c]) => m + c, 0),
    0,
  );
  rows.push([label, Math.round(r.median), Math.round(r.min), Math.round(r.max), p.median, ...costCells(runs), unexpected]);
}
figures.push(...serverGoals(loads, { withPg, withPgbench: pgbench !== undefined }));
if (pgbench) {
  rows.push(
    ['pgbench: the single INSERT (tps)', ...summary(rps('sql.insert')), null, null, null, null, null],
    ['pgbench: the first execution’s statements as the store sends them (tps)', ...summary(rps('sql.store')), null, null, null, null, null],
    ['pgbench: the same round trips, plain UPDATEs (tps)', ...summary(rps('sql.first')), null, null, null, null, null],
  );
}

const table: ResultTable = {
  id: 'server.throughput',
  title: `oncely server: req/s, p99 and cost per request (autocannon, ${CONNECTIONS} connections, ${LOAD_SECONDS} s per arm after ${SETTLE_SECONDS} s of settling load — ${INFO_SECONDS} s, unsettled, for the arms no goal reads; ${ROUNDS} rounds in mirrored order)`,
  columns: ['what', 'req/s median', 'min', 'max', 'p99 ms (median)', ...COST_COLUMNS, 'unexpected answers'],
  rows,
  notes: withPg
    ? pgbench
      ? []
      : ['pgbench was not found (Debian: postgresql-client): the SQL bound and the figure judged against it are missing from this run.']
    : [`PostgreSQL was not reachable at ${PG_URL}: its figures are missing from this run.`],
};
emit({
  suite: 'server',
  figures,
  tables: [table],
  details: { loads, order: Object.keys(ordered), postgres: withPg ? PG_URL.replace(/\/\/[^@]*@/, '//') : null },
});
