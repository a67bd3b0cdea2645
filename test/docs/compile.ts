/**
 * Compiles code a reader copies (a guide's snippet, a JSDoc `@example`) the way a user's project
 * would: strict TypeScript, NodeNext, `oncely` and every `oncely/…` mapped to this repository's
 * entry sources. Only the given files' diagnostics are returned, each as `file:line message`
 * relative to `base`.
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Where each public entry's source is: `oncely` is the Node entry, or the browser one for browser code. */
export function entryPaths(browser: boolean): Record<string, string[]> {
  const entry = (file: string): string[] => [join(ROOT, 'src', file)];
  return {
    oncely: entry(browser ? 'browser.ts' : 'node.ts'),
    'oncely/node': entry('node.ts'),
    'oncely/browser': entry('browser.ts'),
    'oncely/journal': entry('journal.ts'),
    'oncely/service-worker': entry('service-worker/index.ts'),
    'oncely/react': entry('react/index.ts'),
    'oncely/server': entry('server/index.ts'),
    'oncely/server/sqlite': entry('server/sqlite.ts'),
    'oncely/server/postgres': entry('server/postgres.ts'),
    'oncely/hono': entry('server/middleware/hono.ts'),
    'oncely/express': entry('server/middleware/express.ts'),
    'oncely/fastify': entry('server/middleware/fastify.ts'),
  };
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
    paths: entryPaths(browser),
  };
}

/** Diagnostics of `files` (only theirs), compiled as a user's project would. */
export function entryDiagnostics(files: readonly string[], browser: boolean, base: string): string[] {
  const program = ts.createProgram(files, userOptions(browser));
  return ts
    .getPreEmitDiagnostics(program)
    .filter((d) => d.file === undefined || files.includes(d.file.fileName))
    .map((d) => `${d.file ? `${d.file.fileName.slice(base.length + 1)}:${d.file.getLineAndCharacterOfPosition(d.start ?? 0).line + 1}` : ''} ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`);
}
