/**
 * Bundles the browser entry the way an application's bundler would (esbuild, `platform:
 * 'browser'`) and reports what it pulled in. Shared by the bundle hygiene test and the size
 * report: `npx tsx test/bundle/bundle-browser-entry.ts`.
 */
import { builtinModules } from 'node:module';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { build, type Plugin } from 'esbuild';

const root = fileURLToPath(new URL('../../', import.meta.url));
const browserEntry = `${root}src/browser.ts`;

/** Packages that must never reach a browser bundle: native or Node-only drivers. */
const FORBIDDEN_PACKAGES = ['better-sqlite3', 'pg', 'pg-native', 'bindings'] as const;

const builtins = new Set(builtinModules.filter((name) => !name.startsWith('_')));

/** What one bundle of the browser entry contains. */
export interface BrowserBundle {
  /** Node built-ins (`node:fs`, `fs`, …) and forbidden packages some module tried to import. */
  readonly forbiddenImports: readonly string[];
  /** Source files that ended up in the bundle, relative to the repository root. */
  readonly inputs: readonly string[];
  /** Minified bytes. */
  readonly bytes: number;
  /** Minified and gzipped bytes. */
  readonly gzipBytes: number;
}

function packageOf(specifier: string): string {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : (parts[0] ?? specifier);
}

/**
 * Records every attempt to import a Node built-in or a forbidden package instead of letting
 * esbuild fail on the first one, so the test names all offenders at once. Each is marked
 * external so the build can finish and report.
 */
function recordForbidden(found: Set<string>): Plugin {
  return {
    name: 'record-forbidden',
    setup(pluginBuild) {
      pluginBuild.onResolve({ filter: /^[^./]/ }, (args) => {
        const name = packageOf(args.path);
        const forbidden = args.path.startsWith('node:') || builtins.has(name) || (FORBIDDEN_PACKAGES as readonly string[]).includes(name);
        if (!forbidden) return undefined;
        found.add(`${args.path} (from ${args.importer.replace(root, '')})`);
        return { path: args.path, external: true };
      });
    },
  };
}

/** What to bundle and what to leave out. */
export interface BundleOptions {
  /** Packages left out of the bundle (e.g. `ky`, to measure oncely's own weight). */
  readonly external?: readonly string[];
  /** The entry file; defaults to `src/browser.ts`. */
  readonly entry?: string;
}

/** Bundles the browser entry minified for browsers. */
export async function bundleBrowserEntry({ external = [], entry = browserEntry }: BundleOptions = {}): Promise<BrowserBundle> {
  const found = new Set<string>();
  const result = await build({
    entryPoints: [entry],
    bundle: true,
    platform: 'browser',
    format: 'esm',
    target: 'es2022',
    minify: true,
    write: false,
    metafile: true,
    logLevel: 'silent',
    external: [...external],
    plugins: [recordForbidden(found)],
  });
  const output = result.outputFiles[0];
  if (!output) throw new Error(`esbuild produced no output for ${entry}`);
  return {
    forbiddenImports: [...found].sort(),
    inputs: Object.keys(result.metafile.inputs),
    bytes: output.contents.byteLength,
    gzipBytes: gzipSync(output.contents, { level: 9 }).byteLength,
  };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const kb = (n: number): string => `${(n / 1024).toFixed(1)} KB`;
  const whole = await bundleBrowserEntry();
  const withoutKy = await bundleBrowserEntry({ external: ['ky'] });
  console.log(`src/browser.ts, esbuild --platform=browser --minify, gzip -9`);
  console.log(`  with ky:    ${kb(whole.bytes)} min, ${kb(whole.gzipBytes)} gzip`);
  console.log(`  without ky: ${kb(withoutKy.bytes)} min, ${kb(withoutKy.gzipBytes)} gzip`);
  if (whole.forbiddenImports.length > 0) console.log(`  FORBIDDEN: ${whole.forbiddenImports.join(', ')}`);
}
