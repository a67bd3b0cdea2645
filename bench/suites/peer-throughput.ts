/**
 * Peer throughput: req/s and p99 for first executions and replays of the same payment handler
 * behind every idempotency layer, all servers up at once and measured alternately, round by
 * round (autocannon in its own process).
 *
 * Run alone: `node --import tsx bench/suites/peer-throughput.ts`.
 *
 * @module
 */
import { CONNECTIONS, LOAD_SECONDS, ROUNDS, emit, figure, type Figure } from '../lib/figures.js';
import { runLoad, type LoadResult } from '../lib/load.js';
import { findPgbench, pgbenchLoad, setUpPgbench } from '../lib/pgbench.js';
import { alternate } from '../lib/stats.js';
import { pay, release, payBody, startPeer } from '../peers/scenarios.js';
import { PEER_LABELS as PEERS, onPostgres } from '../peers/labels.js';
import { PG_URL } from '../peers/pg.js';

// Throughput: every peer up at once, idle while the others are measured.
const servers = await Promise.all(PEERS.map(async (p) => ({ ...p, server: await startPeer(p.name) })));
const body = payBody('throughput');
const measurements: Record<string, () => Promise<LoadResult>> = {};
for (const { name, server } of servers) {
  const replayKey = `replay-${name}`;
  const warm = await pay(server.url, replayKey, body);
  if (warm.status !== 201) throw new Error(`${name}: warm-up answered ${warm.status}`);
  const common = {
    url: `${server.url}/pay`,
    method: 'POST' as const,
    body,
    connections: CONNECTIONS,
    durationSec: LOAD_SECONDS,
  };
  measurements[`${name}.first`] = () => runLoad({ ...common, keyMode: 'fresh', headers: { authorization: 'Bearer bench' } });
  measurements[`${name}.replay`] = () => runLoad({ ...common, keyMode: 'fixed', headers: { authorization: 'Bearer bench', 'idempotency-key': replayKey } });
}
// The SQL's own bound for `transaction: true` on PostgreSQL (bench/pgbench/): the store's own
// statements as it sends them on the app's plain pool (one commit, one round trip each), and the
// unguarded app's one INSERT, from a C client; and, for comparison, plain statements in three
// pipelined round trips (what a pipelined pool and unfenced SQL would allow).
const pgbench = servers.some(({ name }) => onPostgres(name)) ? await findPgbench() : undefined;
const dropPgbench = pgbench ? await setUpPgbench(PG_URL) : undefined;
if (pgbench) {
  measurements['sql.insert'] = () => pgbenchLoad(pgbench, PG_URL, 'insert', CONNECTIONS, LOAD_SECONDS);
  measurements['sql.tx'] = () => pgbenchLoad(pgbench, PG_URL, 'tx-whole-request-store', CONNECTIONS, LOAD_SECONDS);
  measurements['sql.tx.plain'] = () => pgbenchLoad(pgbench, PG_URL, 'tx-whole-request', CONNECTIONS, LOAD_SECONDS);
}
const loads = await alternate(ROUNDS, measurements);
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
    figures.push(rps, p99);
    row.push(Math.round(rps.median), p99.median);
    if (bad > 0) console.error(`peers: ${name} ${mode}: ${bad} non-2xx or errors`);
  }
  // A fast replay is only worth something if it is the stored answer: show what replays got.
  const replayStatuses = new Set((loads[`${name}.replay`] ?? []).flatMap((r) => Object.keys(r.statuses)));
  row.push([...replayStatuses].sort().join(', '));
  throughputRows.push(row);
}

// The goals, per round against the fastest peer of that round (the unguarded apps are no layer:
// they are left out). oncely's steps API against every other idempotency layer; its Express
// middleware against the other Express layers, which guard the very same Express route.
const rpsOf = (name: string, mode: 'first' | 'replay'): number[] => (loads[`${name}.${mode}`] ?? []).map((r) => r.rps);
const layers = PEERS.filter(({ name }) => !name.startsWith('oncely') && !name.startsWith('unguarded'));
const versusFastest = (name: string, mode: 'first' | 'replay'): number[] =>
  rpsOf(name, mode).map((rps, round) => rps / Math.max(...layers.map((peer) => rpsOf(peer.name, mode)[round] ?? 0)));
figures.push(
  figure(
    'peers.oncely_vs_fastest_peer.first',
    'oncely (SQLite) first execution ÷ the fastest other idempotency layer',
    '×',
    versusFastest('oncely-sqlite', 'first'),
    { op: '>=', value: 1.5 },
  ),
);
for (const mode of ['first', 'replay'] as const) {
  const what = mode === 'first' ? 'first execution' : 'replay';
  figures.push(
    figure(
      `peers.oncely_express_vs_fastest_express_peer.${mode}`,
      `oncely/express (SQLite) ${what} ÷ the fastest other Express idempotency layer`,
      '×',
      versusFastest('oncely-express', mode),
      { op: '>=', value: 1 },
    ),
    // No goal: what running the handler inside the store's transaction costs, shown beside it.
    figure(
      `peers.oncely_express_tx_vs_fastest_express_peer.${mode}`,
      `oncely/express (SQLite, transaction: true) ${what} ÷ the fastest other Express idempotency layer`,
      '×',
      versusFastest('oncely-express-tx', mode),
    ),
  );
}

// The middleware against the limit it is held to: the very same Express app with no layer, on
// the same database kind (issue 36's goals), per round.
const versusUnguarded = (name: string, floor: string): number[] => rpsOf(name, 'first').map((rps, round) => rps / (rpsOf(floor, 'first')[round] ?? Number.NaN));
figures.push(
  figure(
    'peers.oncely_express_vs_unguarded_express.first',
    'oncely/express (SQLite) first execution ÷ unguarded Express',
    '×',
    versusUnguarded('oncely-express', 'unguarded-express'),
    { op: '>=', value: 0.85 },
  ),
  figure(
    'peers.oncely_express_tx_vs_unguarded_express.first',
    'oncely/express (SQLite, transaction: true) first execution ÷ unguarded Express',
    '×',
    versusUnguarded('oncely-express-tx', 'unguarded-express'),
    { op: '>=', value: 0.85 },
  ),
  figure(
    'peers.oncely_express_pg_vs_unguarded_express_pg.first',
    'oncely/express (PostgreSQL) first execution ÷ unguarded Express on PostgreSQL',
    '×',
    versusUnguarded('oncely-express-pg', 'unguarded-express-pg'),
  ),
  figure(
    'peers.oncely_express_pg_tx_vs_unguarded_express_pg.first',
    'oncely/express (PostgreSQL, transaction: true) first execution ÷ unguarded Express on PostgreSQL',
    '×',
    versusUnguarded('oncely-express-pg-tx', 'unguarded-express-pg'),
    { op: '>=', value: 0.6 },
  ),
);

if (pgbench) {
  const sqlRps = (name: string): number[] => (loads[name] ?? []).map((r) => r.rps);
  const perInsert = (name: string): number[] => sqlRps(name).map((tps, round) => tps / (sqlRps('sql.insert')[round] ?? Number.NaN));
  const bound = perInsert('sql.tx');
  figures.push(
    figure(
      'peers.sql.tx_vs_insert',
      '`transaction: true`’s SQL on PostgreSQL (pgbench: the store’s statements as it sends them on the app’s plain pool, one commit) ÷ the single INSERT’s',
      '×',
      bound,
    ),
    figure(
      'peers.sql.tx_plain_vs_insert',
      'the same work as plain statements in three pipelined round trips (pgbench) ÷ the single INSERT’s',
      '×',
      perInsert('sql.tx.plain'),
    ),
    figure(
      'peers.oncely_express_pg_tx_vs_sql_bound.first',
      'oncely/express (PostgreSQL, transaction: true) ÷ unguarded Express on PostgreSQL, ÷ its SQL’s own bound (the first pgbench line above; goal proposed in issue 36)',
      '×',
      versusUnguarded('oncely-express-pg-tx', 'unguarded-express-pg').map((ratio, round) => ratio / (bound[round] ?? Number.NaN)),
      { op: '>=', value: 0.9 },
    ),
  );
}

emit({
  suite: 'peer-throughput',
  figures,
  tables: [
    {
      id: 'peers.throughput',
      title: `Server peers: req/s and p99 (autocannon, ${CONNECTIONS} connections, ${LOAD_SECONDS} s × ${ROUNDS} alternated rounds, median)`,
      columns: ['layer', 'first execution req/s', 'p99 ms', 'replay req/s', 'p99 ms', 'replays answered'],
      rows: throughputRows,
    },
  ],
  details: { loads },
});
