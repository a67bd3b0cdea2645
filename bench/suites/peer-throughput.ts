/**
 * Peer throughput: req/s and p99 for first executions and replays of the same payment handler
 * behind every idempotency layer, all servers up at once and measured round by round (autocannon
 * in its own process), with what each load cost: the server's CPU, its PostgreSQL backends' CPU
 * and the WAL, per request.
 *
 * The arms run in blocks, each goal's sides next to each other — the guarded server beside the
 * unguarded app it is judged against — and every round runs the whole list mirrored from the
 * round before (`lib/stats.ts`): each goal's per-round ratio is of two loads run back to back.
 * The goals themselves: `peers/throughput-goals.ts`.
 *
 * Run alone: `node --import tsx bench/suites/peer-throughput.ts`.
 *
 * @module
 */
import { COST_COLUMNS, armLoad, costCells, costFigures } from '../lib/arms.js';
import { CONNECTIONS, INFO_SECONDS, LOAD_SECONDS, ROUNDS, SETTLE_SECONDS, emit, figure, type Figure } from '../lib/figures.js';
import type { LoadResult } from '../lib/load.js';
import { findPgbench, pgbenchLoad, setUpPgbench } from '../lib/pgbench.js';
import { alternate } from '../lib/stats.js';
import { pay, release, payBody, startPeer } from '../peers/scenarios.js';
import { PEER_LABELS as PEERS, onPostgres } from '../peers/labels.js';
import { PG_URL } from '../peers/pg.js';
import type { PeerName } from '../peers/serve.js';
import { throughputGoals } from '../peers/throughput-goals.js';

// Throughput: every peer up at once, idle while the others are measured.
const servers = await Promise.all(PEERS.map(async (p) => ({ ...p, server: await startPeer(p.name) })));
const body = payBody('throughput');
const arms: Record<string, () => Promise<LoadResult>> = {};
for (const { name, server } of servers) {
  const replayKey = `replay-${name}`;
  const warm = await pay(server.url, replayKey, body);
  if (warm.status !== 201) throw new Error(`${name}: warm-up answered ${warm.status}`);
  const common = { url: `${server.url}/pay`, body, pid: server.child.pid, ...(onPostgres(name) ? { pgUrl: PG_URL } : {}) };
  arms[`${name}.first`] = armLoad({ ...common, keyMode: 'fresh', headers: { authorization: 'Bearer bench' } });
  arms[`${name}.replay`] = armLoad({ ...common, weight: 'info', keyMode: 'fixed', headers: { authorization: 'Bearer bench', 'idempotency-key': replayKey } });
}
// The SQL's own bound for `transaction: true` on PostgreSQL (bench/pgbench/): the store's own
// statements as it sends them on the app's plain pool (one commit, one round trip each), and the
// unguarded app's one INSERT, from a C client; and, for comparison, plain statements in three
// pipelined round trips (what a pipelined pool and unfenced SQL would allow).
const pgbench = servers.some(({ name }) => onPostgres(name)) ? await findPgbench() : undefined;
const dropPgbench = pgbench ? await setUpPgbench(PG_URL) : undefined;
if (pgbench) {
  arms['sql.tx.plain'] = () => pgbenchLoad(pgbench, PG_URL, 'tx-whole-request', CONNECTIONS, LOAD_SECONDS);
  arms['sql.insert'] = () => pgbenchLoad(pgbench, PG_URL, 'insert', CONNECTIONS, LOAD_SECONDS);
  arms['sql.tx'] = () => pgbenchLoad(pgbench, PG_URL, 'tx-whole-request-store', CONNECTIONS, LOAD_SECONDS);
}

/**
 * The order of a round, block by block: the replays (shown, not judged); the steps API in the
 * middle of the other layers it is held to; each middleware arm beside the unguarded app on its
 * database; the pgbench bound.
 */
const ORDER: readonly string[] = [
  ...PEERS.map(({ name }) => `${name}.replay`),
  ...(
    [
      'node-idempotency-memory',
      'node-idempotency-redis',
      'express-idempotency',
      'oncely-sqlite',
      'powertools-redis',
      'powertools-redis-unvalidated',
    ] satisfies PeerName[]
  ).map((n) => `${n}.first`),
  ...(['oncely-express', 'unguarded-express', 'oncely-express-tx'] satisfies PeerName[]).map((n) => `${n}.first`),
  ...(['oncely-express-pg', 'unguarded-express-pg', 'oncely-express-pg-tx', 'floor-express-pg-tx'] satisfies PeerName[]).map((n) => `${n}.first`),
  'sql.tx.plain',
  'sql.insert',
  'sql.tx',
];
const ordered = Object.fromEntries([...ORDER, ...Object.keys(arms)].filter((n, i, all) => n in arms && all.indexOf(n) === i).map((n) => [n, arms[n]!]));
const loads = await alternate(ROUNDS, ordered);
await dropPgbench?.();
await Promise.all(servers.map(({ server }) => server.stop()));
await Promise.all(servers.map(({ server }) => release(server.state)));

const figures: Figure[] = [];
const throughputRows: Array<Array<string | number | boolean | null>> = [];
for (const { name, label } of PEERS) {
  const row: Array<string | number | boolean | null> = [label];
  for (const mode of ['first', 'replay'] as const) {
    const runs = loads[`${name}.${mode}`] ?? [];
    const rps = figure(
      `peers.${name}.${mode}.rps`,
      `${label}: ${mode} req/s`,
      'req/s',
      runs.map((r) => r.rps),
    );
    const p99 = figure(
      `peers.${name}.${mode}.p99`,
      `${label}: ${mode} p99`,
      'ms',
      runs.map((r) => r.p99),
    );
    const bad = runs.reduce((n, r) => n + r.errors + r.non2xx, 0);
    figures.push(rps, p99, ...costFigures(`peers.${name}.${mode}`, `${label}: ${mode}`, runs));
    // First executions: every cost; replays: the server's CPU (they write nothing).
    row.push(Math.round(rps.median), p99.median, ...(mode === 'first' ? costCells(runs) : costCells(runs).slice(0, 1)));
    if (bad > 0) console.error(`peers: ${name} ${mode}: ${bad} non-2xx or errors`);
  }
  // A fast replay is only worth something if it is the stored answer: show what replays got.
  const replayStatuses = new Set((loads[`${name}.replay`] ?? []).flatMap((r) => Object.keys(r.statuses)));
  row.push([...replayStatuses].sort().join(', '));
  throughputRows.push(row);
}
figures.push(...throughputGoals(loads, pgbench !== undefined));

emit({
  suite: 'peer-throughput',
  figures,
  tables: [
    {
      id: 'peers.throughput',
      title: `Server peers: req/s, p99 and cost per request (autocannon, ${CONNECTIONS} connections; first executions ${LOAD_SECONDS} s after ${SETTLE_SECONDS} s of settling load, replays ${INFO_SECONDS} s; ${ROUNDS} rounds in mirrored order; medians)`,
      columns: ['layer', 'first execution req/s', 'p99 ms', ...COST_COLUMNS, 'replay req/s', 'p99 ms', 'replay server CPU µs/req', 'replays answered'],
      rows: throughputRows,
      notes: [
        'CPU per request: the server process (every thread) and the PostgreSQL backends serving its own connections, read around the measured load only; WAL per request: the whole PostgreSQL server’s, so read it on a server nothing else writes to.',
      ],
    },
  ],
  details: { loads, order: Object.keys(ordered) },
});
