/**
 * Summarises a V8 CPU profile (`node --cpu-prof`) as self time by package (a dependency under
 * node_modules, Node's own modules, the bench bundle with oncely's sources in it, GC, idle) and
 * the functions with the most self time: enough to see where a server's CPU goes without a
 * profiler UI.
 *
 * @module
 */

/** The parts of a `.cpuprofile` read here. */
export interface CpuProfile {
  readonly nodes: ReadonlyArray<{
    readonly id: number;
    readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number };
  }>;
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

/** The package a frame belongs to. */
function packageOf(functionName: string, url: string): string {
  if (url === '') return functionName.startsWith('(') ? functionName : '(native)';
  const dep = /node_modules\/((?:@[^/]+\/)?[^/]+)\/(?!.*node_modules)/.exec(url);
  if (dep && !url.includes('/.cache/oncely-bench/')) return dep[1]!;
  if (url.startsWith('node:')) return url;
  if (url.includes('/.cache/oncely-bench/')) return 'oncely + bench (bundled)';
  return url.replace(/^file:\/\/.*\/(src|bench)\//, '$1/');
}

/**
 * Self time by package and the top functions, as text lines (percent of all samples and ms).
 *
 * @example
 * ```ts
 * console.log(summarizeProfile(JSON.parse(readFileSync('CPU.cpuprofile', 'utf8'))));
 * ```
 */
export function summarizeProfile(profile: CpuProfile, top = 15): string {
  const byId = new Map(profile.nodes.map((n) => [n.id, n.callFrame]));
  const byPackage = new Map<string, number>();
  const byFunction = new Map<string, number>();
  let total = 0;
  profile.samples.forEach((id, i) => {
    const frame = byId.get(id);
    const us = profile.timeDeltas[i] ?? 0;
    if (!frame) return;
    total += us;
    const pkg = packageOf(frame.functionName, frame.url);
    byPackage.set(pkg, (byPackage.get(pkg) ?? 0) + us);
    const fn = `${frame.functionName || '(anonymous)'} ${pkg}:${frame.lineNumber + 1}`;
    byFunction.set(fn, (byFunction.get(fn) ?? 0) + us);
  });
  const lines = (map: Map<string, number>, n: number): string[] =>
    [...map]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([name, us]) => `  ${((100 * us) / total).toFixed(1).padStart(5)} %  ${(us / 1000).toFixed(0).padStart(6)} ms  ${name}`);
  return ['by package:', ...lines(byPackage, 20), `top ${top} functions (self time):`, ...lines(byFunction, top)].join('\n');
}
