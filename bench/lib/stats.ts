/**
 * Summaries and the alternating-rounds helper every comparison in the benchmarks goes through.
 *
 * The machine is noisy (2 cores shared with other work), so two things compared by a ratio are
 * always measured alternately in the same run — A, B, A, B, … — and the ratio is taken per round.
 * A slow stretch of the machine then hits both sides of one round instead of one side of the
 * comparison.
 *
 * @module
 */

/** Median, min and max of repeated measurements. */
export interface Summary {
  readonly median: number;
  readonly min: number;
  readonly max: number;
  readonly n: number;
}

/**
 * Summarises repeated measurements (the median of an even count is the mean of the middle two).
 *
 * @example
 * ```ts
 * summarize([3, 1, 2]); // { median: 2, min: 1, max: 3, n: 3 }
 * ```
 */
export function summarize(values: readonly number[]): Summary {
  const sorted = values.filter((v) => Number.isFinite(v)).sort((a, b) => a - b);
  if (sorted.length === 0) return { median: Number.NaN, min: Number.NaN, max: Number.NaN, n: 0 };
  const mid = Math.floor(sorted.length / 2);
  const median = sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
  return { median: round(median), min: round(sorted[0]!), max: round(sorted.at(-1)!), n: sorted.length };
}

/**
 * Per-round ratios `a[i] / b[i]` of two series measured alternately.
 *
 * @example
 * ```ts
 * ratios([10, 12], [5, 4]); // [2, 3]
 * ```
 */
export function ratios(a: readonly number[], b: readonly number[]): number[] {
  const out: number[] = [];
  for (let i = 0; i < Math.min(a.length, b.length); i += 1) out.push(a[i]! / b[i]!);
  return out;
}

/**
 * Runs every measurement once per round, in order, for `rounds` rounds, and collects the
 * results per name. Within a round the order rotates so that no side always goes first
 * (a warm cache or a freshly idle CPU would otherwise favour it).
 *
 * @example
 * ```ts
 * const r = await alternate(3, { raw: () => timeRaw(), oncely: () => timeOncely() });
 * summarize(ratios(r.oncely, r.raw));
 * ```
 */
export async function alternate<K extends string, T>(rounds: number, measurements: Readonly<Record<K, () => Promise<T>>>): Promise<Record<K, T[]>> {
  const names = Object.keys(measurements) as K[];
  const out = Object.fromEntries(names.map((n) => [n, [] as T[]])) as Record<K, T[]>;
  for (let round = 0; round < rounds; round += 1) {
    for (let i = 0; i < names.length; i += 1) {
      const name = names[(i + round) % names.length]!;
      out[name].push(await measurements[name]());
    }
  }
  return out;
}

/** Rounds to 3 significant decimals, so JSON results stay readable. */
export function round(value: number): number {
  if (!Number.isFinite(value)) return value;
  const digits = Math.abs(value) >= 100 ? 1 : 3;
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}
