/**
 * Every TypeScript snippet of the README compiles against the package's own entries, so the
 * README cannot drift from the API: `oncely` maps to the Node entry (or to the browser entry for
 * a snippet that uses the DOM), `oncely/node`, `oncely/browser` and `oncely/server` to theirs.
 * The TSX snippets of docs/react.md compile too, as browser code with React's JSX; a snippet whose
 * first line is `// name.tsx` is written under that name, so another snippet can import it.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
// Inside node_modules: ignored by git, and its packages (@hono/node-server…) resolve from here.
const DIR = join(ROOT, 'node_modules/.oncely-readme-snippets');

const snippets = [...readFileSync(join(ROOT, 'README.md'), 'utf8').matchAll(/^```ts\n([\s\S]*?)^```/gm)].map((match, i) => ({
  name: `snippet-${i + 1}.mts`,
  code: match[1] as string,
  browser: /\bdocument\.|indexedDbJournal/.test(match[1] as string),
}));

const reactSnippets = [...readFileSync(join(ROOT, 'docs/react.md'), 'utf8').matchAll(/^```tsx\n([\s\S]*?)^```/gm)].map((match, i) => {
  const code = match[1] as string;
  return { name: /^\/\/ ([\w.-]+\.tsx)\n/.exec(code)?.[1] ?? `react-snippet-${i + 1}.tsx`, code };
});

afterAll(() => rmSync(DIR, { recursive: true, force: true }));

function diagnostics(files: readonly string[], browser: boolean): string[] {
  const entry = (file: string): string[] => [join(ROOT, 'src', file)];
  const program = ts.createProgram(files, {
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
    paths: {
      oncely: entry(browser ? 'browser.ts' : 'node.ts'),
      'oncely/node': entry('node.ts'),
      'oncely/browser': entry('browser.ts'),
      'oncely/service-worker': entry('service-worker/index.ts'),
      'oncely/react': entry('react/index.ts'),
      'oncely/server': entry('server/index.ts'),
      'oncely/server/sqlite': entry('server/sqlite.ts'),
      'oncely/server/postgres': entry('server/postgres.ts'),
      'oncely/hono': entry('server/middleware/hono.ts'),
      'oncely/express': entry('server/middleware/express.ts'),
      'oncely/fastify': entry('server/middleware/fastify.ts'),
    },
  });
  return ts
    .getPreEmitDiagnostics(program)
    .filter((d) => d.file === undefined || files.includes(d.file.fileName))
    .map((d) => `${d.file ? `${d.file.fileName.split('/').pop()}:${d.file.getLineAndCharacterOfPosition(d.start ?? 0).line + 1}` : ''} ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`);
}

describe('the README snippets', () => {
  it('are there to check', () => {
    expect(snippets.length).toBeGreaterThanOrEqual(5);
    expect(snippets.some((snippet) => snippet.browser)).toBe(true);
  });

  it('compile against the entries they import, with strict TypeScript', () => {
    mkdirSync(DIR, { recursive: true });
    writeFileSync(join(DIR, 'package.json'), '{"type":"module"}');
    const files = snippets.map((snippet) => {
      const file = join(DIR, snippet.name);
      writeFileSync(file, snippet.code);
      return { file, browser: snippet.browser };
    });
    const problems = [
      ...diagnostics(files.filter((f) => !f.browser).map((f) => f.file), false),
      ...diagnostics(files.filter((f) => f.browser).map((f) => f.file), true),
    ];
    expect(problems).toEqual([]);
  }, 60_000);
});

describe('the docs/react.md snippets', () => {
  it('are there to check', () => {
    expect(reactSnippets.length).toBeGreaterThanOrEqual(4);
  });

  it('compile against oncely/browser, oncely/react and React 19 with strict TypeScript', () => {
    const dir = join(DIR, 'react');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'package.json'), '{"type":"module"}');
    const files = reactSnippets.map((snippet) => {
      const file = join(dir, snippet.name);
      writeFileSync(file, snippet.code);
      return file;
    });
    expect(diagnostics(files, true)).toEqual([]);
  }, 60_000);
});
