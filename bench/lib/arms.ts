/**
 * The arms of the throughput suites: one server under one load, settled before it is measured,
 * with what each measured load cost the machine — the server's CPU, its PostgreSQL backends' CPU
 * and the WAL, per request — which moves far less with the machine's other work than req/s does.
 *
 * @module
 */
import { CONNECTIONS, INFO_SECONDS, LOAD_SECONDS, SETTLE_SECONDS, figure, type Figure } from './figures.js';
import { runLoad, type LoadResult, type LoadSpec } from './load.js';

/** One arm: a load on a server process. */
export interface Arm extends Omit<LoadSpec, 'connections' | 'durationSec' | 'settleSec' | 'observe' | 'method'> {
  /** The server's process (its CPU is read around each measured load). */
  readonly pid: number | undefined;
  /** The server's PostgreSQL, when it has one: its backends' CPU and the WAL are read too. */
  readonly pgUrl?: string;
  /** `info`: no goal reads it, so its loads are shorter ({@link INFO_SECONDS}). */
  readonly weight?: 'goal' | 'info';
}

/**
 * The measurement of an arm: a settling load, then the measured one ({@link LOAD_SECONDS}), its
 * cost read around the measured load; an arm only shown runs {@link INFO_SECONDS}, unsettled.
 *
 * @example
 * ```ts
 * measurements['oncely.first'] = armLoad({ url: `${server.url}/pay`, body, keyMode: 'fresh', pid: server.child.pid });
 * ```
 */
export function armLoad(arm: Arm): () => Promise<LoadResult> {
  const { pid, pgUrl, weight, ...load } = arm;
  return () =>
    runLoad({
      ...load,
      method: 'POST',
      connections: CONNECTIONS,
      durationSec: weight === 'info' ? INFO_SECONDS : LOAD_SECONDS,
      // An arm only shown keeps its short load without the settling one: the run's time goes to the goals.
      settleSec: weight === 'info' ? 0 : SETTLE_SECONDS,
      ...(pid === undefined ? {} : { observe: { pid, ...(pgUrl ? { pgUrl } : {}) } }),
    });
}

/** What a load cost per request, one series per round. */
export type CostKind = 'cpu' | 'pgCpu' | 'totalCpu' | 'wal';

/**
 * One cost per round of an arm's loads, µs or bytes per request; `NaN` where it was not read.
 *
 * @example
 * ```ts
 * costs(loads['oncely-express-pg-tx.first'], 'totalCpu'); // server + PostgreSQL µs per request, per round
 * ```
 */
export function costs(runs: readonly LoadResult[] | undefined, kind: CostKind): number[] {
  return (runs ?? []).map(({ cost }) => {
    if (!cost) return Number.NaN;
    if (kind === 'cpu') return cost.cpuUs;
    if (kind === 'pgCpu') return cost.pgCpuUs ?? Number.NaN;
    if (kind === 'wal') return cost.walBytes ?? Number.NaN;
    return cost.pgCpuUs === undefined ? cost.cpuUs : cost.cpuUs + cost.pgCpuUs;
  });
}

/**
 * The cost figures of an arm (`<id>.cpu_us`, `.pg_cpu_us`, `.wal_bytes`; only the ones it read).
 *
 * @example
 * ```ts
 * figures.push(...costFigures('peers.oncely-express-pg.first', 'oncely/express (PostgreSQL): first', runs));
 * ```
 */
export function costFigures(id: string, label: string, runs: readonly LoadResult[] | undefined): Figure[] {
  const out: Figure[] = [];
  const add = (suffix: string, what: string, unit: string, kind: CostKind): void => {
    const series = costs(runs, kind);
    if (series.some(Number.isFinite)) out.push(figure(`${id}.${suffix}`, `${label}: ${what}`, unit, series));
  };
  add('cpu_us', 'server CPU per request', 'µs', 'cpu');
  add('pg_cpu_us', 'PostgreSQL CPU per request', 'µs', 'pgCpu');
  add('wal_bytes', 'WAL per request', 'B', 'wal');
  return out;
}

/**
 * The medians of an arm's costs for a table row: server CPU µs, PostgreSQL CPU µs, WAL bytes per
 * request (`null` where not read).
 *
 * @example
 * ```ts
 * row.push(...costCells(loads['unguarded-express-pg.first']));
 * ```
 */
export function costCells(runs: readonly LoadResult[] | undefined): Array<number | null> {
  return (['cpu', 'pgCpu', 'wal'] as const).map((kind) => {
    const median = figure('', '', '', costs(runs, kind)).median;
    return Number.isFinite(median) ? Math.round(median) : null;
  });
}

/** The headings of {@link costCells}' columns. */
export const COST_COLUMNS = ['server CPU µs/req', 'PostgreSQL CPU µs/req', 'WAL B/req'] as const;
