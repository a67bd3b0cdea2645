/**
 * Bundles a TypeScript entry once per process with esbuild, so that a child spawned many times
 * (the load generator, a client SIGKILLed and restarted ten times per run) starts in plain Node
 * instead of paying tsx's transform at every start.
 *
 * Dependencies stay external and resolve from the repository's node_modules: the bundle is
 * written under `node_modules/.cache/`, which is inside the repository and ignored by git.
 *
 * @module
 */
import { mkdirSync } from 'node:fs';
import { basename, join } from 'node:path';
import { build } from 'esbuild';
import { ROOT } from './proc.js';

const built = new Map<string, Promise<string>>();

/**
 * The argv that runs `entry` (a path relative to the repository root) from a bundle.
 *
 * @example
 * ```ts
 * const argv = await bundled('bench/clients/worker.ts'); // [node, '…/worker-1234.mjs']
 * spawn(argv[0], [...argv.slice(1), spec]);
 * ```
 */
export async function bundled(entry: string): Promise<string[]> {
  let outfile = built.get(entry);
  if (!outfile) {
    const dir = join(ROOT, 'node_modules/.cache/oncely-bench');
    mkdirSync(dir, { recursive: true });
    const target = join(dir, `${basename(entry, '.ts')}-${process.pid}.mjs`);
    outfile = build({
      entryPoints: [join(ROOT, entry)],
      outfile: target,
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node20',
      packages: 'external',
      logLevel: 'error',
    }).then(() => target);
    built.set(entry, outfile);
  }
  return [process.execPath, await outfile];
}
