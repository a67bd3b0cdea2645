/**
 * "Did you mean …?" for the command line: the known name a mistyped one most likely meant, for
 * an unknown option (`--tokn` → `--token`) or command (`pendng` → `pending`).
 *
 * @module
 */

/**
 * The candidate a mistyped `input` most likely meant: the nearest by edit distance (a swap of
 * two neighbouring letters counts as one edit), or the only candidate `input` is a prefix of;
 * `undefined` when none is near enough to be worth suggesting.
 *
 * @example
 * ```ts
 * closest('tokn', ['url', 'token', 'journal']); // 'token'
 * closest('pendng', ['serve', 'pending']);      // 'pending'
 * closest('colour', ['port', 'host']);          // undefined
 * ```
 */
export function closest(input: string, candidates: readonly string[]): string | undefined {
  const typed = input.toLowerCase();
  // One edit per three letters typed, at least one: near enough to be a typo, not another word.
  const limit = Math.max(1, Math.floor(typed.length / 3));
  let best: { readonly name: string; readonly distance: number } | undefined;
  for (const name of candidates) {
    const distance = editDistance(typed, name.toLowerCase());
    if (distance <= limit && (best === undefined || distance < best.distance)) best = { name, distance };
  }
  if (best !== undefined) return best.name;
  const extending = typed.length >= 3 ? candidates.filter((name) => name.toLowerCase().startsWith(typed)) : [];
  return extending.length === 1 ? extending[0] : undefined;
}

/** Optimal-string-alignment distance: insertions, deletions, substitutions and adjacent swaps. */
function editDistance(a: string, b: string): number {
  // d[i][j]: the distance between the first i letters of a and the first j letters of b.
  const d: number[][] = [];
  for (let i = 0; i <= a.length; i += 1) {
    const row: number[] = [i];
    const above = d[i - 1] ?? [];
    for (let j = 1; j <= b.length; j += 1) {
      if (i === 0) {
        row.push(j);
        continue;
      }
      let distance = Math.min((above[j] ?? 0) + 1, (row[j - 1] ?? 0) + 1, (above[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) distance = Math.min(distance, (d[i - 2]?.[j - 2] ?? 0) + 1);
      row.push(distance);
    }
    d.push(row);
  }
  return d[a.length]?.[b.length] ?? 0;
}
