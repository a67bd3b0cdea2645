/**
 * The checkout example's Vite configuration: the React page, StrictMode on in dev, and the
 * API behind the dev server's proxy so the page and `oncely serve` share one origin — the
 * client's scope, and where its requests may go.
 *
 * ```sh
 * npx tsx src/cli/main.ts serve --port 8787                      # the API
 * npx vite examples/checkout-browser                            # dev: http://localhost:5173/?order=ord-42
 * npx tsx examples/checkout-browser/build.ts                    # production build (page + sw.js) → dist
 * npx tsx src/cli/main.ts serve --port 8787 --static examples/checkout-browser/dist
 * ```
 */
import { realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import react from '@vitejs/plugin-react';
import type { InlineConfig } from 'vite';

const here = fileURLToPath(new URL('.', import.meta.url));
const repository = join(here, '../..');

/** Options of {@link checkoutConfig}. */
export interface CheckoutConfigOptions {
  /** Where the dev server forwards `/v1` (an `oncely serve` origin). */
  readonly api?: string;
  /** The build's output folder. */
  readonly outDir?: string;
  /** Minify the build. */
  readonly minify?: boolean;
}

/**
 * The page's Vite configuration (no config file is read: this is it).
 *
 * @example
 * ```ts
 * const server = await createServer(checkoutConfig({ api: 'http://127.0.0.1:8787' }));
 * ```
 */
export function checkoutConfig(options: CheckoutConfigOptions = {}): InlineConfig {
  return {
    configFile: false,
    root: here,
    base: './',
    logLevel: 'warn',
    plugins: [react()],
    // `oncely/…` as tsconfig.json maps it: the repository's sources, in place of the package.
    resolve: { tsconfigPaths: true },
    // Outside the repository: the shared node_modules is not this example's to write into.
    cacheDir: join(tmpdir(), 'oncely-checkout-vite'),
    // Found up front: a dependency discovered on the first page load makes the dev server reload the page.
    optimizeDeps: { include: ['react', 'react/jsx-dev-runtime', 'react-dom/client', 'idb-keyval', 'ky', 'p-retry', 'uuid'] },
    server: {
      proxy: { '/v1': { target: options.api ?? 'http://127.0.0.1:8787', changeOrigin: false } },
      // `oncely/…` resolves to the repository's sources, and node_modules may be a link.
      fs: { allow: [repository, realpathSync(join(repository, 'node_modules'))] },
    },
    build: {
      outDir: options.outDir ?? join(here, 'dist'),
      emptyOutDir: false,
      minify: options.minify ?? true,
      sourcemap: true,
    },
  };
}

export default checkoutConfig({ api: process.env.ONCELY_URL ?? 'http://127.0.0.1:8787' });
