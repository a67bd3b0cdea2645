/**
 * Every JSDoc `@example` of `src/**` type-checks (see ./jsdoc-examples.ts for how: standalone
 * against the entries when it imports from `oncely`, else in its own module's scope). Three
 * deliberately broken examples ride along in the same program, so this test is seen to fail on
 * the mistakes it exists for: a call with the wrong arguments, a name an entry does not export,
 * a wrong call on a typed placeholder.
 */
import { describe, expect, it } from 'vitest';
import { allExamples, exampleDiagnostics, type Example } from './jsdoc-examples.js';

const BROKEN: readonly Example[] = [
  { module: 'src/keys.ts', line: 9001, code: "const key = isValidKey();\nconst other = deriveKey('ns', { part: 1 });", tsx: false, standalone: false },
  {
    module: 'src/keys.ts',
    line: 9101,
    code: "import { sqliteKeyStore } from 'oncely/server';\nconst store = sqliteKeyStore({ path: ':memory:' });",
    tsx: false,
    standalone: true,
  },
  { module: 'src/errors.ts', line: 9201, code: 'const r = await client.post(42);', tsx: false, standalone: false },
];

describe('the JSDoc examples of src', () => {
  const examples = allExamples();

  it('are all found: fenced ts blocks of every module, a dozen whole programs among them', () => {
    expect(examples.length).toBeGreaterThanOrEqual(250);
    expect(examples.filter((e) => e.standalone).length).toBeGreaterThanOrEqual(10);
    expect(new Set(examples.map((e) => e.module)).size).toBeGreaterThanOrEqual(90);
  });

  it('compile with strict TypeScript, and only the deliberately broken ones fail', () => {
    const problems = exampleDiagnostics([...examples, ...BROKEN]).problems.sort();
    expect(problems.map((p) => p.replace(/ .*/s, ''))).toEqual(['src/errors.ts:9201', 'src/keys.ts:9001', 'src/keys.ts:9002', 'src/keys.ts:9101']);
    expect(problems[0]).toContain("not assignable to parameter of type 'string'");
    expect(problems[1]).toContain('Expected 1 arguments, but got 0');
    expect(problems[2]).toContain("not assignable to parameter of type 'string | number'");
    expect(problems[3]).toContain("has no exported member 'sqliteKeyStore'");
  }, 180_000);
});
