/**
 * `oncely/server` runs wherever `Request` and `Response` do (Deno, Bun, a Worker): bundled for
 * the browser platform it reaches no Node built-in and no database driver; the stores are the
 * entries `oncely/server/sqlite` and `oncely/server/postgres`.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { bundleBrowserEntry } from './bundle-browser-entry.js';

const entry = (path: string): string => fileURLToPath(new URL(`../../src/${path}`, import.meta.url));

describe('oncely/server bundled for a runtime without Node', () => {
  it('imports no node: module, Node built-in, better-sqlite3 or pg, and contains no store', async () => {
    const bundle = await bundleBrowserEntry({ entry: entry('server/index.ts') });
    expect(bundle.forbiddenImports).toEqual([]);
    expect(bundle.inputs.filter((input) => /\.node\.ts$|node_modules\/(better-sqlite3|pg|pino|@hono)\//.test(input))).toEqual([]);
  });

  it('oncely/hono too: the Hono middleware runs on every runtime Hono does', async () => {
    const bundle = await bundleBrowserEntry({ entry: entry('server/middleware/hono.ts'), external: ['hono'] });
    expect(bundle.forbiddenImports).toEqual([]);
    expect(bundle.inputs.filter((input) => /\.node\.ts$|node_modules\/(better-sqlite3|pg|pino|@hono)\//.test(input))).toEqual([]);
  });

  it('names what the store entries reach, so the check above cannot pass vacuously', async () => {
    const sqlite = await bundleBrowserEntry({ entry: entry('server/sqlite.ts') });
    expect(sqlite.forbiddenImports).toEqual(expect.arrayContaining([expect.stringMatching(/^node:crypto /)]));
  });
});
