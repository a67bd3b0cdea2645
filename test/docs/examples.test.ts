/**
 * The examples are code a user copies: they import oncely only by its public entries (`oncely`,
 * `oncely/node`, `oncely/react`…), never the repository's sources by a relative path, so a copy
 * works as it is. Inside the repository those names reach the sources through tsconfig.json's
 * `paths`, which must map every entry package.json exports, and only those, to its source.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { entryPaths } from './compile.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};

/** Every TypeScript file of the examples, relative to the repository. */
function exampleSources(dir = 'examples'): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory()) return entry.name === 'dist' || entry.name === 'node_modules' ? [] : exampleSources(path);
    return /\.tsx?$/.test(entry.name) && !entry.name.endsWith('.d.ts') ? [path] : [];
  });
}

/** The module specifiers a file imports or re-exports, statically or dynamically. */
function specifiersOf(file: string): string[] {
  const text = readFileSync(join(ROOT, file), 'utf8');
  return [...text.matchAll(/(?:\bfrom\s+|\bimport\s*\(\s*|^import\s+)'([^']+)'/gm)].map((match) => match[1] as string);
}

const packageName = (specifier: string): string =>
  specifier
    .split('/')
    .slice(0, specifier.startsWith('@') ? 2 : 1)
    .join('/');

describe('the examples', () => {
  const sources = exampleSources();
  const entries = new Set(Object.keys(entryPaths(false)));
  const installed = new Set([...Object.keys(pkg.dependencies), ...Object.keys(pkg.devDependencies)]);
  const builtins = new Set(builtinModules);

  it('are there to check: the Node backend and the browser checkout', () => {
    expect(sources).toEqual(expect.arrayContaining(['examples/node-backend/settle-payment.ts', 'examples/checkout-browser/src/main.tsx']));
    expect(sources.filter((file) => specifiersOf(file).some((specifier) => specifier.startsWith('oncely'))).length).toBeGreaterThanOrEqual(6);
  });

  it("import oncely by its public entries only, and nothing of the repository outside their own example's folder", () => {
    const wrong = sources.flatMap((file) => {
      const home = file.split('/').slice(0, 2).join('/');
      return specifiersOf(file)
        .filter((specifier) => {
          if (specifier.startsWith('.')) return relative(join(ROOT, home), resolve(join(ROOT, dirname(file)), specifier)).startsWith('..');
          if (specifier.startsWith('oncely')) return !entries.has(specifier);
          return !(specifier.startsWith('node:') || builtins.has(specifier) || installed.has(packageName(specifier)));
        })
        .map((specifier) => `${file}: ${specifier}`);
    });
    expect(wrong).toEqual([]);
  });
});

describe("tsconfig.json's paths", () => {
  it("map each entry of package.json's exports to its source, and nothing else (`oncely` to the Node entry)", () => {
    const config = ts.readConfigFile(join(ROOT, 'tsconfig.json'), ts.sys.readFile);
    const paths = (config.config as { compilerOptions: { paths: Record<string, string[]> } }).compilerOptions.paths;
    const resolved = Object.fromEntries(Object.entries(paths).map(([name, targets]) => [name, targets.map((target) => join(ROOT, target))]));
    expect(resolved).toEqual(entryPaths(false));
  });
});
