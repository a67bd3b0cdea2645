/**
 * Builds the checkout example with Vite into a folder `oncely serve --static DIR` can serve
 * next to the API, on one origin:
 *
 * ```sh
 * npx tsx examples/checkout-browser/build.ts            # → examples/checkout-browser/dist
 * npx tsx src/cli/main.ts serve --port 8787 --static examples/checkout-browser/dist
 * ```
 *
 * Two Vite builds: the React page (`index.html` and its assets), and its Service Worker
 * (`sw.js`, one classic script at the root so its scope is the whole site: module Service
 * Workers are not everywhere yet). Both are bundled for the browser, so nothing Node-only can
 * slip in.
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type Rollup } from 'vite';
import { checkoutConfig } from './vite.config.js';

const here = fileURLToPath(new URL('.', import.meta.url));

/** Options of {@link buildCheckout}. */
export interface BuildCheckoutOptions {
  /**
   * The folder to write `index.html`, `assets/` and `sw.js` into.
   * @default examples/checkout-browser/dist
   */
  readonly outDir?: string;
  /**
   * Minify the page and the worker.
   * @default true
   */
  readonly minify?: boolean;
}

function jsBytes(result: Awaited<ReturnType<typeof build>>): number {
  const outputs = (Array.isArray(result) ? result : [result]) as Rollup.RollupOutput[];
  return outputs.flatMap((output) => output.output).reduce((sum, chunk) => sum + (chunk.type === 'chunk' ? chunk.code.length : 0), 0);
}

/**
 * Builds the page and its Service Worker; resolves to the output folder and the bytes of their
 * JavaScript.
 *
 * @example
 * ```ts
 * const { outDir } = await buildCheckout({ outDir: '/tmp/checkout', minify: false });
 * ```
 */
export async function buildCheckout(options: BuildCheckoutOptions = {}): Promise<{ outDir: string; bytes: number; workerBytes: number }> {
  const outDir = options.outDir ?? join(here, 'dist');
  const config = checkoutConfig({ outDir, minify: options.minify ?? true });
  // Vite takes a production build's NODE_ENV from the process, and a test runner sets it to
  // 'test': React's development build and `import.meta.env.PROD === false` would ship.
  const before = process.env.NODE_ENV;
  process.env.NODE_ENV = 'production';
  try {
    const bytes = jsBytes(await build({ ...config, mode: 'production' }));
    const workerBytes = jsBytes(
      await build({
        ...config,
        mode: 'production',
        plugins: [],
        build: {
          ...config.build,
          lib: { entry: join(here, 'src/service-worker.ts'), formats: ['iife'], name: 'checkoutWorker', fileName: () => 'sw.js' },
        },
      }),
    );
    return { outDir, bytes, workerBytes };
  } finally {
    if (before === undefined) delete process.env.NODE_ENV;
    else process.env.NODE_ENV = before;
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const outIndex = process.argv.indexOf('--out');
  const outDir = outIndex > 0 ? process.argv[outIndex + 1] : undefined;
  const built = await buildCheckout(outDir === undefined ? {} : { outDir });
  console.log(`built ${built.outDir} (page JS ${(built.bytes / 1024).toFixed(1)} KB, sw.js ${(built.workerBytes / 1024).toFixed(1)} KB)`);
}
