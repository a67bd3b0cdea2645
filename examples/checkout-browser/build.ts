/**
 * Builds the checkout example into a folder `oncely serve --static DIR` can serve next to the
 * API, on one origin:
 *
 * ```sh
 * npx tsx examples/checkout-browser/build.ts            # → examples/checkout-browser/dist
 * npx tsx src/cli/main.ts serve --port 8787 --static examples/checkout-browser/dist
 * ```
 *
 * The page imports oncely from `src/browser.ts` directly, the file an application reaches as
 * `oncely/browser`, and the worker `src/service-worker/index.ts` (`oncely/service-worker`);
 * esbuild bundles both for the browser platform, so nothing Node-only can slip in.
 */
import { copyFile, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const here = fileURLToPath(new URL('.', import.meta.url));

/** Options of {@link buildCheckout}. */
export interface BuildCheckoutOptions {
  /**
   * The folder to write `index.html`, `styles.css` and `app.js` into.
   * @default examples/checkout-browser/dist
   */
  readonly outDir?: string;
  /**
   * Minify `app.js`.
   * @default true
   */
  readonly minify?: boolean;
}

/**
 * Builds the page (`app.js`) and its Service Worker (`sw.js`, a classic script at the root, so its
 * scope is the whole site); resolves to the output folder and their sizes in bytes.
 *
 * @example
 * ```ts
 * const { outDir } = await buildCheckout({ outDir: '/tmp/checkout', minify: false });
 * ```
 */
export async function buildCheckout(options: BuildCheckoutOptions = {}): Promise<{ outDir: string; bytes: number; workerBytes: number }> {
  const outDir = options.outDir ?? join(here, 'dist');
  await mkdir(outDir, { recursive: true });
  const bundle = async (entry: string, outfile: string, format: 'esm' | 'iife'): Promise<number> => {
    const result = await build({
      entryPoints: [join(here, entry)],
      outfile: join(outDir, outfile),
      bundle: true,
      platform: 'browser',
      format,
      target: 'es2022',
      minify: options.minify ?? true,
      sourcemap: true,
      metafile: true,
      logLevel: 'warning',
    });
    return Object.entries(result.metafile.outputs).find(([path]) => path.endsWith(outfile))?.[1].bytes ?? 0;
  };
  // A classic worker script: module Service Workers are not everywhere yet, and it imports nothing.
  const [bytes, workerBytes] = await Promise.all([bundle('src/main.ts', 'app.js', 'esm'), bundle('src/service-worker.ts', 'sw.js', 'iife')]);
  await Promise.all(['index.html', 'styles.css'].map((file) => copyFile(join(here, file), join(outDir, file))));
  return { outDir, bytes, workerBytes };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const outIndex = process.argv.indexOf('--out');
  const outDir = outIndex > 0 ? process.argv[outIndex + 1] : undefined;
  const built = await buildCheckout(outDir === undefined ? {} : { outDir });
  console.log(`built ${built.outDir} (app.js ${(built.bytes / 1024).toFixed(1)} KB, sw.js ${(built.workerBytes / 1024).toFixed(1)} KB)`);
}
