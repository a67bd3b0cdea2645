import { describe, expect, it } from 'vitest';
import { costCells, costs } from '../../bench/lib/arms.js';
import type { LoadResult } from '../../bench/lib/load.js';
import { PEER_LABELS } from '../../bench/peers/labels.js';
import { serverGoals } from '../../bench/peers/server-goals.js';
import { throughputGoals } from '../../bench/peers/throughput-goals.js';

/** A load of `rps` req/s that cost `cpuUs` of the server, and on PostgreSQL `pgCpuUs` and `walBytes`, per request. */
const run = (rps: number, cpuUs = 100, pgCpuUs?: number, walBytes?: number): LoadResult => ({
  rps,
  p50: 1,
  p99: 2,
  requests: rps,
  errors: 0,
  non2xx: 0,
  statuses: { 201: rps },
  cost: { cpuUs, ...(pgCpuUs === undefined ? {} : { pgCpuUs }), ...(walBytes === undefined ? {} : { walBytes }) },
});

describe('the cost of a load per request', () => {
  it('adds the PostgreSQL backends’ CPU to the server’s, and leaves what was not read out', () => {
    const runs = [run(10, 100, 50, 300), run(10, 120)];
    expect(costs(runs, 'totalCpu')).toEqual([150, 120]);
    expect(costs(runs, 'wal')).toEqual([300, Number.NaN]);
    expect(costCells([run(1, 100.4)])).toEqual([100, null, null]);
  });
});

describe("the peer suite's goals", () => {
  const loads: Record<string, LoadResult[]> = {};
  for (const { name } of PEER_LABELS) for (const mode of ['first', 'replay']) loads[`${name}.${mode}`] = [run(1000), run(1000)];
  loads['unguarded-express-pg.first'] = [run(1000, 1000, 400, 250), run(800, 1100, 400, 250)];
  loads['oncely-express-pg-tx.first'] = [run(700, 1500, 500, 500), run(400, 2000, 600, 450)];
  loads['oncely-express-pg.first'] = [run(500, 2000, 700, 900), run(600, 2000, 700, 900)];
  const goals = Object.fromEntries(throughputGoals(loads, false).map((f) => [f.id, f]));

  it('holds oncely/express on PostgreSQL to the unguarded app: throughput, and with transaction: true its CPU and WAL per first execution', () => {
    const rate = goals['peers.oncely_express_pg_tx_vs_unguarded_express_pg.first']!;
    expect([rate.min, rate.max, rate.goal]).toEqual([0.5, 0.7, { op: '>=', value: 0.6 }]);
    const cpu = goals['peers.oncely_express_pg_tx_vs_unguarded_express_pg.cpu']!;
    expect([cpu.min, cpu.max, cpu.goal, cpu.holdsAtWorst]).toEqual([1.429, 1.733, { op: '<=', value: 1.6 }, false]);
    const wal = goals['peers.oncely_express_pg_tx_vs_unguarded_express_pg.wal']!;
    expect([wal.median, wal.goal, wal.pass]).toEqual([1.9, { op: '<=', value: 2 }, true]);
    expect(goals['peers.oncely_express_pg_vs_unguarded_express_pg.first']!.goal).toEqual({ op: '>=', value: 0.5 });
  });

  it('shows the hand-written floor against the unguarded app and oncely against the floor, and never counts the floor as a layer', () => {
    const withFloor = { ...loads, 'floor-express-pg-tx.first': [run(500, 1250, 500, 400), run(400, 1500, 500, 450)] };
    const figures = Object.fromEntries(throughputGoals(withFloor, false).map((f) => [f.id, f]));
    const spread = (id: string) => [figures[id]!.min, figures[id]!.max];
    expect(spread('peers.floor_express_pg_tx_vs_unguarded_express_pg.first')).toEqual([0.5, 0.5]);
    expect(spread('peers.oncely_express_pg_tx_vs_floor.first')).toEqual([1, 1.4]);
    expect(spread('peers.oncely_express_pg_tx_vs_floor.cpu')).toEqual([1.143, 1.3]);
    expect(spread('peers.oncely_express_pg_tx_vs_floor.wal')).toEqual([1, 1.25]);
    expect(figures['peers.oncely_express_pg_tx_vs_floor.cpu']!.goal).toBeUndefined();
    // A floor ten times faster than every layer changes no layer's ratio.
    const fastFloor = { ...loads, 'floor-express-pg-tx.first': [run(10_000), run(10_000)] };
    const versus = (all: typeof loads) => {
      const fastest = throughputGoals(all, false).find((f) => f.id === 'peers.oncely_vs_fastest_peer.first')!;
      return [fastest.min, fastest.max];
    };
    expect(versus(fastFloor)).toEqual(versus(loads));
  });

  it('keeps the SQLite goals and shows oncely/express ÷ the fastest other Express layer without a goal', () => {
    expect(goals['peers.oncely_express_vs_unguarded_express.first']!.goal).toEqual({ op: '>=', value: 0.85 });
    expect(goals['peers.oncely_express_tx_vs_unguarded_express.first']!.goal).toEqual({ op: '>=', value: 0.85 });
    expect(goals['peers.oncely_vs_fastest_peer.first']!.goal).toEqual({ op: '>=', value: 1.5 });
    expect(goals['peers.oncely_express_vs_fastest_express_peer.first']!.goal).toBeUndefined();
    expect(goals['peers.oncely_express_vs_fastest_express_peer.replay']!.goal).toBeUndefined();
  });
});

describe("the server suite's goals", () => {
  it('holds the steps API on PostgreSQL to the same payment work unguarded on PostgreSQL, round by round', () => {
    const loads = {
      'postgres.first': [run(300), run(500)],
      'unguarded-postgres': [run(1000), run(800)],
    };
    const goal = serverGoals(loads, { withPg: true, withPgbench: false }).find((f) => f.id === 'server.postgres.first_vs_unguarded')!;
    expect([goal.min, goal.max, goal.goal, goal.pass]).toEqual([0.3, 0.625, { op: '>=', value: 0.5 }, false]);
  });
});
