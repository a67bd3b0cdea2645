import { defineConfig } from 'vitest/config';
import { playwright } from '@vitest/browser-playwright';

/**
 * Two projects: `node` (the whole Node suite, `npm test`) and `browser` (real Chromium from
 * Debian's package, `npm run test:browser`). The browser is never downloaded: without
 * /usr/bin/chromium the browser project fails loudly instead of skipping.
 */
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'node',
          environment: 'node',
          include: ['test/**/*.test.ts'],
          exclude: ['test/browser/**', 'node_modules/**'],
          testTimeout: 30_000,
          hookTimeout: 60_000,
          pool: 'forks',
        },
      },
      {
        // Pre-bundled up front: discovered mid-run, Vite re-optimises and reloads the test page.
        optimizeDeps: { include: ['idb-keyval', 'react', 'react/jsx-dev-runtime', 'react-dom/client'] },
        test: {
          name: 'browser',
          include: ['test/browser/**/*.test.{ts,tsx}'],
          testTimeout: 30_000,
          browser: {
            enabled: true,
            headless: true,
            provider: playwright({
              launchOptions: {
                executablePath: process.env.ONCELY_CHROMIUM ?? '/usr/bin/chromium',
                args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
              },
            }),
            instances: [{ browser: 'chromium' }],
          },
        },
      },
      {
        // The packed tarball installed into fresh projects (npm pack, npm install, tsc, vite
        // build): slow and it needs the npm registry for Vite, so it is its own project,
        // `npm run test:package`, run by CI.
        test: {
          name: 'package',
          environment: 'node',
          include: ['test/package/**/*.pkg.ts'],
          testTimeout: 300_000,
          hookTimeout: 300_000,
          pool: 'forks',
          fileParallelism: false,
        },
      },
      {
        // The checkout page end to end: Node drives Debian's Chromium with Playwright against a
        // real `oncely serve` process (reloads, offline, two tabs are out of reach from inside a
        // page). Files end in .e2e.ts so the node project never picks them up; one file at a time
        // because each launches a browser and a server.
        test: {
          name: 'browser-e2e',
          environment: 'node',
          include: ['test/browser-e2e/**/*.e2e.ts'],
          testTimeout: 60_000,
          hookTimeout: 120_000,
          pool: 'forks',
          fileParallelism: false,
        },
      },
    ],
  },
});
