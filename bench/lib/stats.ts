/**
 * Summaries and the alternating-rounds helper every comparison in the benchmarks goes through.
 *
 * The machine is noisy (2 cores shared with other work), so two things compared by a ratio are
 * always measured back to back in the same run, in mirrored order — A B, B A, A B, … — and the
 * ratio is taken per round. A slow stretch of the machine then hits both sides of one round
 * instead of one side of the comparison, and a steady drift weighs on both sides alike.
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
 * The order of the measurements in round `round`: as given in even rounds, mirrored in odd ones
 * (A B C, C B A, A B C, …), the ABBA order generalised. Over every two rounds each measurement's
 * mean position is the same, so a machine that speeds up or slows down steadily through a run
 * weighs on every side of a comparison alike; and measurements given next to each other (the
 * two sides of one goal) stay next to each other in every round.
 *
 * @example
 * ```ts
 * mirroredOrder(['a', 'b', 'c'], 1); // ['c', 'b', 'a']
 * ```
 */
export function mirroredOrder<K>(names: readonly K[], round: number): K[] {
  return round % 2 === 0 ? [...names] : [...names].reverse();
}

/**
 * `rounds` rounded up to an even count, so that every measurement runs as often first as last in
 * the mirrored order ({@link mirroredOrder}); at least 2.
 *
 * @example
 * ```ts
 * evenRounds(3); // 4
 * ```
 */
export function evenRounds(rounds: number): number {
  return Math.max(2, 2 * Math.ceil(rounds / 2));
}

/**
 * Runs every measurement once per round, for `rounds` rounds, and collects the results per name.
 * The measurements run in the order given in even rounds and mirrored in odd ones
 * ({@link mirroredOrder}): give the two sides of a comparison next to each other, and each of its
 * per-round ratios is taken between two measurements that ran back to back, the one first, then
 * the other.
 *
 * @example
 * ```ts
 * const r = await alternate(4, { raw: () => timeRaw(), oncely: () => timeOncely() });
 * summarize(ratios(r.oncely, r.raw));
 * ```
 */
export async function alternate<K extends string, T>(rounds: number, measurements: Readonly<Record<K, () => Promise<T>>>): Promise<Record<K, T[]>> {
  const names = Object.keys(measurements) as K[];
  const out = Object.fromEntries(names.map((n) => [n, [] as T[]])) as Record<K, T[]>;
  for (let round = 0; round < rounds; round += 1) {
    for (const name of mirroredOrder(names, round)) out[name].push(await measurements[name]());
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
