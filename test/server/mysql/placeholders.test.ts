import { describe, expect, it } from 'vitest';
import { statementsOf, toQuestionMarks } from '../../../src/server/mysql/placeholders.js';

describe('toQuestionMarks', () => {
  it('turns $n into ? and orders (and repeats) the parameters to match', () => {
    expect(toQuestionMarks('SELECT * FROM t WHERE a = $2 OR b = $1 OR c = $2', ['x', 'y'])).toEqual({
      sql: 'SELECT * FROM t WHERE a = ? OR b = ? OR c = ?',
      params: ['y', 'x', 'y'],
    });
  });

  it('leaves $n alone inside string literals, quoted identifiers and comments', () => {
    const sql = "SELECT '$1', \"$1\", `$1`, 'it''s $1', 'a\\'$1' /* $1 */ FROM t WHERE a = $1 -- $1\n AND b = $1 # $1";
    const { sql: out, params } = toQuestionMarks(sql, ['v']);
    expect(out).toBe("SELECT '$1', \"$1\", `$1`, 'it''s $1', 'a\\'$1' /* $1 */ FROM t WHERE a = ? -- $1\n AND b = ? # $1");
    expect(params).toEqual(['v', 'v']);
  });

  it('passes SQL written with ? through (an ORM compiled it), parameters as given', () => {
    expect(toQuestionMarks('INSERT INTO t (a, b) VALUES (?, ?)', ['a', 2])).toEqual({ sql: 'INSERT INTO t (a, b) VALUES (?, ?)', params: ['a', 2] });
  });

  it('sends undefined as NULL and booleans as 1 and 0', () => {
    expect(toQuestionMarks('SELECT $1, $2, $3', [undefined, true, false]).params).toEqual([null, 1, 0]);
  });

  it('refuses a placeholder with no parameter and a statement mixing both styles', () => {
    expect(() => toQuestionMarks('SELECT $2', ['only one'])).toThrow(RangeError);
    expect(() => toQuestionMarks('SELECT $1, ?', ['a', 'b'])).toThrow(/mixes/);
  });

  it('does not take a $ inside an identifier or a longer number for a placeholder', () => {
    expect(
      toQuestionMarks(
        'SELECT a$1 FROM t WHERE x = $10',
        Array.from({ length: 10 }, (_, i) => i),
      ).params,
    ).toEqual([9]);
  });
});

describe('statementsOf', () => {
  it('cuts a script at each ; outside quotes and comments, and drops empty statements', () => {
    expect(statementsOf("CREATE TABLE a (x TEXT DEFAULT ';');\n-- a comment; still\nCREATE TABLE b (y INT) /* ; */;\n;")).toEqual([
      "CREATE TABLE a (x TEXT DEFAULT ';')",
      '-- a comment; still\nCREATE TABLE b (y INT) /* ; */',
    ]);
  });
});
