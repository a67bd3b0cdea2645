/**
 * The verdict of a goal in words, for the Goals table: whether its median meets it, and whether
 * it would still hold at the worst end of its rounds' spread — so that a goal met by the median
 * of rounds that also went the other way is not read as settled.
 *
 * @module
 */
import type { Figure } from './figures.js';

/** A number as the tables print it: 3 significant decimals at most. */
const show = (value: number): string => String(Math.round(value * 1000) / 1000);

/**
 * The best round on the goal's side: the max for `>=`, the min for `<=`.
 *
 * @example
 * ```ts
 * bestOf(figure('x', 'x', '×', [0.5, 0.7], { op: '>=', value: 0.6 })); // 0.7
 * ```
 */
export function bestOf(f: Figure): number {
  return f.goal?.op === '<=' ? f.min : f.max;
}

/**
 * One plain sentence: `met in every round`, `met by the median only`, `missed in every round` or
 * `missed by the median only`, with the round that decides it. A figure without a goal has none.
 *
 * @example
 * ```ts
 * verdict(figure('x', 'x', '×', [0.55, 0.7, 0.8], { op: '>=', value: 0.6 }));
 * // 'met by the median only: its worst round (0.55) would miss'
 * ```
 */
export function verdict(f: Figure): string | undefined {
  if (!f.goal) return undefined;
  if (f.n === 0) return '**no measurement**';
  const worst = f.worst ?? (f.goal.op === '<=' ? f.max : f.min);
  const holds = f.holdsAtWorst ?? (f.goal.op === '<=' ? worst <= f.goal.value : worst >= f.goal.value);
  if (f.pass && holds) return `met in every round (worst ${show(worst)})`;
  if (f.pass) return `met by the median only: its worst round (${show(worst)}) would miss`;
  const best = bestOf(f);
  const bestMeets = f.goal.op === '<=' ? best <= f.goal.value : best >= f.goal.value;
  return bestMeets ? `**missed** by the median; its best round (${show(best)}) would meet` : `**missed** in every round (best ${show(best)})`;
}
