/**
 * A seeded pseudo-random generator for the demo, so `oncely demo --seed S` makes the same
 * choices (amounts, duplicate sends, which recovery points crash) on every run.
 *
 * mulberry32 over a 32-bit state seeded by an FNV-1a hash of the seed text: tiny, fast, and
 * plenty for choosing chaos; never for anything secret.
 *
 * @module
 */

/** A seeded source of randomness. */
export interface Random {
  /** A float in [0, 1). */
  next(): number;
  /** An integer in [min, max], both inclusive. */
  int(min: number, max: number): number;
  /** `true` with probability `p`. */
  chance(p: number): boolean;
  /** One element of a non-empty list. */
  pick<T>(items: readonly T[]): T;
  /** A new generator whose sequence depends on this one's seed and `label` only. */
  fork(label: string): Random;
}

function hashSeed(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i += 1) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

/**
 * Creates a generator from a seed; the same seed always yields the same sequence.
 *
 * @example
 * ```ts
 * const random = createRandom('42');
 * random.int(1, 6); // the same die roll on every run with seed 42
 * ```
 */
export function createRandom(seed: string | number): Random {
  const seedText = String(seed);
  let state = hashSeed(seedText);
  const next = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (min, max) => min + Math.floor(next() * (max - min + 1)),
    chance: (p) => next() < p,
    pick: <T>(items: readonly T[]): T => {
      if (items.length === 0) throw new RangeError('pick: the list is empty');
      return items[Math.floor(next() * items.length)] as T;
    },
    fork: (label) => createRandom(`${seedText}/${label}`),
  };
}
