/**
 * The shape every benchmark suite reports in, and that `bench/run.ts` folds into
 * `bench/results/latest.json`.
 *
 * @module
 */
import { summarize, type Summary } from './stats.js';

/** A goal a figure is held to. */
export interface Goal {
  readonly op: '<=' | '>=';
  readonly value: number;
}

/** One measured figure: median/min/max over repeated runs. */
export interface Figure extends Summary {
  /** Stable id, e.g. `server.sqlite.first.rps`. */
  readonly id: string;
  readonly label: string;
  /** `req/s`, `ms`, `×`, `µs/op`, … */
  readonly unit: string;
  readonly goal?: Goal;
  /** Whether the median meets the goal. */
  readonly pass?: boolean;
}

/** A table of non-timing results (peer scenarios, duplicate counts). */
export interface ResultTable {
  readonly id: string;
  readonly title: string;
  readonly columns: readonly string[];
  readonly rows: ReadonlyArray<ReadonlyArray<string | number | boolean | null>>;
  readonly notes?: readonly string[];
}

/** What one suite prints as its last stdout line. */
export interface SuiteResult {
  readonly suite: string;
  readonly figures: readonly Figure[];
  readonly tables: readonly ResultTable[];
  /** Anything else worth keeping (raw per-round numbers, settings). */
  readonly details?: unknown;
}

/**
 * Builds a figure from repeated measurements, checking the goal on the median.
 *
 * @example
 * ```ts
 * figure('client.ratio', 'oncely post() / raw ky POST', '×', [1.1, 1.2, 1.15], { op: '<=', value: 1.3 });
 * ```
 */
export function figure(id: string, label: string, unit: string, values: readonly number[], goal?: Goal): Figure {
  const summary = summarize(values);
  if (!goal) return { id, label, unit, ...summary };
  const pass = goal.op === '<=' ? summary.median <= goal.value : summary.median >= goal.value;
  return { id, label, unit, ...summary, goal, pass };
}

/** Whether the suites run in `--quick` mode (shorter loads, fewer operations). */
export const QUICK = process.env['BENCH_QUICK'] === '1';

/**
 * Rounds of every alternated comparison. Five: on a 2-core machine shared with other services one
 * round in three can be off by a third (PostgreSQL's first execution over its SQL's bound measured
 * 0.83 and 0.83 as the median of three rounds, 1.08 as the median of seven, at the same commit).
 */
export const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? (QUICK ? 3 : 5));

/** Seconds of each autocannon run. */
export const LOAD_SECONDS = Number(process.env['BENCH_LOAD_SECONDS'] ?? (QUICK ? 1 : 2));

/** Concurrent connections of each autocannon run. */
export const CONNECTIONS = Number(process.env['BENCH_CONNECTIONS'] ?? 10);

/**
 * Prints a suite's result as the last stdout line (what `bench/run.ts` parses).
 *
 * @example
 * ```ts
 * emit({ suite: 'peers', figures, tables });
 * ```
 */
export function emit(result: SuiteResult): void {
  console.log(JSON.stringify(result));
}
