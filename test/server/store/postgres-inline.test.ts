/**
 * The literals the PostgreSQL store sends with BEGIN and COMMIT: every value comes back as
 * itself from a real engine, under either setting of `standard_conforming_strings`, and what
 * cannot be written as a literal is refused instead of cut or reinterpreted.
 */
import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { inline, literal } from '../../../src/server/store/postgres-inline.node.js';
import { resolvePgUrl } from '../../support/pg.js';

const TEXTS = ["it's", "''", '\\', "\\'", "E'\\x41'", '$1 $$ $fn$', '/* x', '-- x\n;', '\t\r\n', 'Zürich 日本 😀 \u202E', ''];
const NUMBERS = [0, 1, -1, 10_000, 86_400_000, -0.5, 1.25, 2 ** 53 - 1];

/** Evaluates each literal on `run` (simple protocol, one script), with the given string setting. */
async function evaluate(run: (script: string) => Promise<unknown[]>, conforming: 'on' | 'off'): Promise<unknown[]> {
  const values: unknown[] = [];
  for (const value of [...TEXTS, ...NUMBERS]) {
    const rows = await run(`SET standard_conforming_strings = ${conforming}; SELECT ${literal(value)} AS v`);
    values.push(typeof value === 'number' ? Number(rows[0]) : rows[0]);
  }
  return values;
}

describe('literal and inline', () => {
  it('writes numbers, booleans and NULL so that no neighbouring operator changes them', () => {
    expect(inline({ sql: 'SELECT 1-$1, $2, $3, $4, $5', params: [-5, 7, true, null, 12n] })).toBe('SELECT 1-(-5), 7, TRUE, NULL, 12');
  });

  it('quotes text exactly as pg.escapeLiteral does (which it replaces for speed)', () => {
    const alphabet = ["'", '\\', 'a', 'é', '😀', '$', '1', ' ', '\n', 'E'];
    const random = Array.from({ length: 500 }, (_, n) => Array.from({ length: n % 23 }, (_, i) => alphabet[(n * 7 + i * i * 13) % alphabet.length]).join(''));
    for (const text of [...TEXTS, ...random]) expect(literal(text), text).toBe(pg.escapeLiteral(text));
  });

  it('replaces each placeholder once, and never the placeholders a value contains', () => {
    expect(inline({ sql: 'SELECT $1, $2, $10', params: ['$2', 'b', 3, 4, 5, 6, 7, 8, 9, 'ten'] })).toBe("SELECT '$2', 'b', 'ten'");
  });

  it('refuses what has no literal: NUL in text (as PostgreSQL refuses it), non-finite numbers, objects, a missing value', () => {
    expect(() => literal('a\0b')).toThrow(expect.objectContaining({ code: '22021' }));
    expect(() => literal(Number.NaN)).toThrow(RangeError);
    expect(() => literal(Number.POSITIVE_INFINITY)).toThrow(RangeError);
    expect(() => literal({ a: 1 })).toThrow(TypeError);
    expect(() => inline({ sql: 'SELECT $1, $2', params: [1] })).toThrow(RangeError);
  });

  describe('evaluated by an engine', () => {
    const expected = [...TEXTS, ...NUMBERS];
    let pglite: PGlite | undefined;
    afterAll(async () => {
      await pglite?.close();
    });

    it('PGlite reads every value back as itself', async () => {
      pglite = await PGlite.create();
      const db = pglite;
      const run = async (script: string) => ((await db.exec(script)).at(-1)?.rows ?? []).map((row) => (row as { v: unknown }).v);
      expect(await evaluate(run, 'on')).toEqual(expected);
      expect(await evaluate(run, 'off')).toEqual(expected);
    });

    it('PostgreSQL reads every value back as itself (when a server is reachable)', async (context) => {
      const url = await resolvePgUrl();
      if (!url) return context.skip();
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        const run = async (script: string) => {
          const results = (await client.query(script)) as unknown as pg.QueryResult[];
          return results.at(-1)!.rows.map((row: { v: unknown }) => row.v);
        };
        expect(await evaluate(run, 'on')).toEqual(expected);
        expect(await evaluate(run, 'off')).toEqual(expected);
      } finally {
        await client.end();
      }
    });
  });
});
