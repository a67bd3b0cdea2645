/**
 * The recipes docs/orm.md shows are the code the ORM suite runs: each named snippet
 * (`// drizzle-tx.ts` …) is examples/orm's file of that name, but for its import of `Tx`
 * (`oncely/server` for a reader, the source entry here).
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const read = (path: string): string => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');
const page = read('docs/orm.md');

describe('docs/orm.md', () => {
  it.each(['drizzle-tx.ts', 'kysely-tx.ts', 'knex-tx.ts', 'prisma-tx.ts'])('shows examples/orm/%s as the suite runs it', (name) => {
    const snippet = new RegExp(`^\`\`\`ts\\n// ${name.replace('.', '\\.')}\\n([\\s\\S]*?)^\`\`\``, 'm').exec(page)?.[1];
    expect(snippet).toBeDefined();
    expect(snippet!.replace("from 'oncely/server'", "from '../../src/server/index.js'")).toBe(read(`examples/orm/${name}`));
  });
});
