/**
 * What `oncely/react` costs an app that already uses the browser client from React: the same
 * small app built with Vite (production, minified) by hand and on the hooks, gzip -9 of each.
 * `npx vitest run --project node test/bundle/react-bundle.test.ts` prints the figures.
 */
import { gzipSync } from 'node:zlib';
import { fileURLToPath } from 'node:url';
import { build, type Rollup } from 'vite';
import { beforeAll, describe, expect, it } from 'vitest';

/** The budget of issue 37: the React entry adds at most 2 KB gzip. */
const REACT_ENTRY_GZIP_BUDGET = 2 * 1024;

const fixture = (name: string): string => fileURLToPath(new URL(`./fixtures/react-app/${name}`, import.meta.url));

async function bundle(entry: string): Promise<{ bytes: number; gzipBytes: number; modules: string[] }> {
  const result = await build({
    configFile: false,
    logLevel: 'silent',
    mode: 'production',
    // Library mode leaves process.env.NODE_ENV alone: React's production build is chosen here.
    define: { 'process.env.NODE_ENV': '"production"' },
    build: { write: false, minify: true, sourcemap: false, lib: { entry, formats: ['es'], fileName: 'app' } },
  });
  const outputs = (Array.isArray(result) ? result : [result]) as Rollup.RollupOutput[];
  const chunks = outputs.flatMap((output) => output.output).filter((chunk): chunk is Rollup.OutputChunk => chunk.type === 'chunk');
  const code = Buffer.from(chunks.map((chunk) => chunk.code).join('\n'));
  return { bytes: code.byteLength, gzipBytes: gzipSync(code, { level: 9 }).byteLength, modules: chunks.flatMap((chunk) => Object.keys(chunk.modules)) };
}

describe('oncely/react in a Vite build', () => {
  let without: Awaited<ReturnType<typeof bundle>>;
  let withHooks: Awaited<ReturnType<typeof bundle>>;

  beforeAll(async () => {
    without = await bundle(fixture('without-hooks.ts'));
    withHooks = await bundle(fixture('with-hooks.ts'));
    console.log(
      `React app on the browser client, Vite production build, gzip -9: by hand ${without.gzipBytes} B, on oncely/react ${withHooks.gzipBytes} B, the entry adds ${withHooks.gzipBytes - without.gzipBytes} B`,
    );
  }, 120_000);

  it('bundles React in production mode and the hooks only in the app that uses them', () => {
    expect(withHooks.modules.some((id) => id.includes('src/react/use-operation.ts'))).toBe(true);
    expect(without.modules.some((id) => id.includes('src/react/'))).toBe(false);
    expect(withHooks.modules.some((id) => /react-dom[\\/]cjs[\\/]react-dom-client\.production/.test(id))).toBe(true);
  });

  it('adds at most 2 KB gzip to an app that already uses the browser client', () => {
    expect(withHooks.gzipBytes - without.gzipBytes).toBeLessThanOrEqual(REACT_ENTRY_GZIP_BUDGET);
  });
});
