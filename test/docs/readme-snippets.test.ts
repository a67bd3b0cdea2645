/**
 * Every TypeScript snippet of the README and of the guides (docs/*.md) compiles against the
 * package's own entries, so no page can drift from the API: `oncely` maps to the Node entry (or
 * to the browser entry for a snippet that uses the DOM), every other `oncely/…` to its entry.
 * A `tsx` snippet compiles as browser code with React's JSX; a snippet whose first line is
 * `// name.tsx` (or `// name.ts`) is written under that name, so another snippet of the same page
 * can import it.
 * A page's snippets are written to a folder of their own.
 */
import { mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { entryDiagnostics } from './compile.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
// Inside node_modules: ignored by git, and its packages (@hono/node-server…) resolve from here.
const DIR = join(ROOT, 'node_modules/.oncely-readme-snippets');

/** The pages a reader copies from: the README and every guide. */
const PAGES = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
];

interface Snippet {
  readonly page: string;
  readonly name: string;
  readonly code: string;
  readonly browser: boolean;
}

function snippetsOf(page: string): Snippet[] {
  const text = readFileSync(join(ROOT, page), 'utf8');
  return [...text.matchAll(/^```(tsx?)\n([\s\S]*?)^```/gm)].map((match, i) => {
    const code = match[2] as string;
    const tsx = match[1] === 'tsx';
    const named = /^\/\/ ([\w.-]+\.tsx?)\n/.exec(code)?.[1];
    return {
      page,
      name: named ?? `snippet-${i + 1}.${tsx ? 'tsx' : 'mts'}`,
      code,
      browser: tsx || /\bdocument\.|indexedDbJournal|navigator\./.test(code),
    };
  });
}

const snippets = PAGES.flatMap(snippetsOf);

afterAll(() => rmSync(DIR, { recursive: true, force: true }));

describe('the snippets of the README and the guides', () => {
  it("are there to check: the README's three first successes, the browser's, React's", () => {
    expect(snippets.filter((s) => s.page === 'README.md').length).toBeGreaterThanOrEqual(3);
    expect(snippets.filter((s) => s.page === 'docs/react.md' && s.name.endsWith('.tsx')).length).toBeGreaterThanOrEqual(4);
    expect(snippets.filter((s) => s.browser && !s.name.endsWith('.tsx')).length).toBeGreaterThanOrEqual(3);
    expect(snippets.length).toBeGreaterThanOrEqual(20);
  });

  it("are there to check in each framework's guide: Next.js (route handlers, the client component, its page, Bun and Deno), NestJS", () => {
    const of = (page: string): Snippet[] => snippets.filter((s) => s.page === page);
    expect(of('docs/nextjs.md').map((s) => s.name)).toEqual(expect.arrayContaining(['store.ts', 'instrumentation.ts', 'checkout.tsx', 'page.tsx']));
    expect(of('docs/nextjs.md').filter((s) => s.code.includes("from 'oncely/web'")).length).toBeGreaterThanOrEqual(4);
    expect(of('docs/nextjs.md').some((s) => s.code.includes('export const fetch = withIdempotency('))).toBe(true);
    expect(of('docs/nestjs.md').map((s) => s.name)).toEqual(expect.arrayContaining(['app.module.ts', 'orders.controller.ts', 'main.ts']));
  });

  it('create every client with the credential its requests need: a headers option, or a comment naming the session cookie', () => {
    // Copied as written, a client without one is refused 401 at every request (the reference
    // server's demo callers are tokens), and each payment sits pending.
    const calls = snippets.flatMap((snippet) =>
      [...snippet.code.matchAll(/createClient\(\{[\s\S]*?\n?\}\);/g)].map((match) => ({ page: snippet.page, call: match[0] })),
    );
    expect(calls.filter((c) => c.page === 'docs/react.md').length).toBeGreaterThanOrEqual(3);
    const silent = calls.filter(({ call }) => !/\bheaders\s*:|cookie/i.test(call)).map(({ page, call }) => `${page}: ${call.split('\n')[0]}`);
    expect(silent).toEqual([]);
  });

  it('compile against the entries they import, with strict TypeScript', () => {
    // Two programs in all (Node, browser): one per page would take minutes.
    const files = snippets.map((snippet) => {
      const dir = join(DIR, snippet.page.replace(/[/.]/g, '_'));
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, 'package.json'), '{"type":"module"}');
      const file = join(dir, snippet.name);
      writeFileSync(file, snippet.code);
      return { file, browser: snippet.browser };
    });
    const problems = [
      ...entryDiagnostics(
        files.filter((f) => !f.browser).map((f) => f.file),
        false,
        DIR,
      ),
      ...entryDiagnostics(
        files.filter((f) => f.browser).map((f) => f.file),
        true,
        DIR,
      ),
    ];
    expect(problems).toEqual([]);
  }, 120_000);
});
