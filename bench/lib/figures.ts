/**
 * The shape every benchmark suite reports in, and that `bench/run.ts` folds into
 * `bench/results/latest.json`.
 *
 * @module
 */
import { evenRounds, summarize, type Summary } from './stats.js';

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
  /** The round at the goal's wrong end of the spread: the min for `>=`, the max for `<=`. */
  readonly worst?: number;
  /** Whether the goal holds even at {@link Figure.worst}: in every round, not only at the median. */
  readonly holdsAtWorst?: boolean;
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
 * Builds a figure from repeated measurements, checking the goal on the median, and at the worst
 * end of the rounds' spread (whether every round meets it).
 *
 * @example
 * ```ts
 * figure('client.ratio', 'oncely post() / raw ky POST', '×', [1.1, 1.2, 1.15], { op: '<=', value: 1.3 });
 * ```
 */
export function figure(id: string, label: string, unit: string, values: readonly number[], goal?: Goal): Figure {
  const summary = summarize(values);
  if (!goal) return { id, label, unit, ...summary };
  const meets = (value: number): boolean => (goal.op === '<=' ? value <= goal.value : value >= goal.value);
  const worst = goal.op === '<=' ? summary.max : summary.min;
  return { id, label, unit, ...summary, goal, pass: meets(summary.median), worst, holdsAtWorst: meets(worst) };
}

/** Whether the suites run in `--quick` mode (shorter loads, fewer operations). */
export const QUICK = process.env['BENCH_QUICK'] === '1';

/**
 * Rounds of every alternated comparison, an even count (the mirrored order, `stats.ts`): four in
 * a full run, each comparison's sides run back to back, first one then the other, twice each.
 * With 2-s rounds one ratio's rounds spread from 0.47× to 1.6× in one run; longer rounds
 * ({@link LOAD_SECONDS}) after a settling load ({@link SETTLE_SECONDS}) are what narrow it.
 */
export const ROUNDS = evenRounds(Number(process.env['BENCH_ROUNDS'] ?? (QUICK ? 2 : 4)));

/** Seconds of each measured load of an arm a goal is judged on. */
export const LOAD_SECONDS = Number(process.env['BENCH_LOAD_SECONDS'] ?? (QUICK ? 2 : 4));

/** Seconds of each measured load of an arm shown for information only (no goal reads it). */
export const INFO_SECONDS = Number(process.env['BENCH_INFO_SECONDS'] ?? (QUICK ? 1 : 2));

/**
 * Seconds of load each arm runs, unmeasured, right before its measured load: the server's pools
 * open, its JIT and caches warm again after the other arms' turns, and the CPU and WAL counters
 * are read only after it.
 */
export const SETTLE_SECONDS = Number(process.env['BENCH_SETTLE_SECONDS'] ?? (QUICK ? 0.5 : 1));

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
