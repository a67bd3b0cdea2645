/**
 * `oncely/service-worker` bundled as an application's worker would be (esbuild, browser
 * platform): a Service Worker has no Node built-ins and no DOM, so nothing Node-only may reach it.
 */
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { bundleBrowserEntry, type BrowserBundle } from './bundle-browser-entry.js';

const entry = (path: string): string => fileURLToPath(new URL(`../../${path}`, import.meta.url));
const NODE_ONLY = /(\.node\.ts$|^src\/node\.ts$|^src\/server\/|^src\/cli\/|^src\/reference\/|node_modules\/(better-sqlite3|pg|pino|@hono)\/)/;

describe('the service-worker entry bundled with esbuild for the browser platform', () => {
  let library: BrowserBundle;
  let example: BrowserBundle;

  beforeAll(async () => {
    [library, example] = await Promise.all([
      bundleBrowserEntry({ entry: entry('src/service-worker/index.ts') }),
      bundleBrowserEntry({ entry: entry('examples/checkout-browser/src/service-worker.ts') }),
    ]);
  });

  it('imports no node: module, Node built-in, better-sqlite3 or pg, alone or in the checkout worker', () => {
    expect(library.forbiddenImports).toEqual([]);
    expect(example.forbiddenImports).toEqual([]);
  });

  it('contains no Node-only source file, and does contain the IndexedDB journal it resumes from', () => {
    for (const bundle of [library, example]) {
      expect(bundle.inputs.filter((input) => NODE_ONLY.test(input))).toEqual([]);
      expect(bundle.inputs).toEqual(expect.arrayContaining(['src/journal/indexeddb.browser.ts', 'src/service-worker/worker-resumer.ts']));
      expect(bundle.inputs.some((input) => input.includes('node_modules/idb-keyval/'))).toBe(true);
    }
  });

  it('leaves the page-only modules of the example out of its worker', () => {
    expect(example.inputs.filter((input) => /examples\/checkout-browser\/src\/(main|checkout|earlier-payments|status|order)\.tsx?$/.test(input))).toEqual([]);
  });
});
