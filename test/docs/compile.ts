/**
 * Compiles code a reader copies (a guide's snippet, a JSDoc `@example`) the way a user's project
 * would: strict TypeScript, NodeNext, `oncely` and every `oncely/…` mapped to this repository's
 * entry sources. Only the given files' diagnostics are returned, each as `file:line message`
 * relative to `base`.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/**
 * Where each public entry's source is, read from package.json's `exports` (its `types` file under
 * dist/, as src/): every entry the package publishes, and only those. `oncely` is the Node entry,
 * or the browser one for browser code.
 */
export function entryPaths(browser: boolean): Record<string, string[]> {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { exports: Record<string, Record<string, unknown>> };
  const source = (types: string): string[] => [join(ROOT, types.replace(/^\.\/dist\//, 'src/').replace(/\.d\.ts$/, '.ts'))];
  const paths: Record<string, string[]> = {};
  for (const [subpath, target] of Object.entries(pkg.exports)) {
    if (subpath === '.' || subpath.endsWith('.json')) continue;
    if (typeof target.types === 'string') paths[`oncely${subpath.slice(1)}`] = source(target.types);
  }
  paths.oncely = browser ? paths['oncely/browser']! : paths['oncely/node']!;
  return paths;
}

/** The compiler options of a user's strict project, with the entries mapped. */
export function userOptions(browser: boolean): ts.CompilerOptions {
  return {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    strict: true,
    exactOptionalPropertyTypes: true,
    noEmit: true,
    skipLibCheck: true,
    lib: ['lib.es2023.d.ts', 'lib.dom.d.ts', 'lib.dom.iterable.d.ts'],
    types: ['node'],
    typeRoots: [join(ROOT, 'node_modules/@types')],
    jsx: ts.JsxEmit.ReactJSX,
    // What a Nest project sets (Nest's decorators are TypeScript's experimental ones); no other
    // snippet uses a decorator.
    experimentalDecorators: true,
    emitDecoratorMetadata: true,
    paths: entryPaths(browser),
  };
}

/** Diagnostics of `files` (only theirs), compiled as a user's project would. */
export function entryDiagnostics(files: readonly string[], browser: boolean, base: string): string[] {
  const program = ts.createProgram(files, userOptions(browser));
  return ts
    .getPreEmitDiagnostics(program)
    .filter((d) => d.file === undefined || files.includes(d.file.fileName))
    .map(
      (d) =>
        `${d.file ? `${d.file.fileName.slice(base.length + 1)}:${d.file.getLineAndCharacterOfPosition(d.start ?? 0).line + 1}` : ''} ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`,
    );
}
