/**
 * SQL text as MySQL takes it: `Tx`'s `$1, $2, …` placeholders turned into `?` (with the
 * parameters reordered and repeated to match), and an app's migration script cut into its
 * statements. Both read the text once, skipping what is quoted or commented, so a `$1` or a `;`
 * inside a string literal, a quoted identifier or a comment is left alone.
 *
 * @module
 */

/** Calls `visit(index)` at each character outside quotes and comments; answers nothing. */
function scan(sql: string, visit: (index: number) => void): void {
  let i = 0;
  while (i < sql.length) {
    const c = sql[i]!;
    if (c === "'" || c === '"' || c === '`') {
      i += 1;
      while (i < sql.length && sql[i] !== c) i += sql[i] === '\\' && c !== '`' ? 2 : 1;
      i += 1; // the closing quote; a doubled quote ('') reads as a closed and a reopened literal
    } else if ((c === '-' && sql[i + 1] === '-' && /\s/.test(sql[i + 2] ?? ' ')) || c === '#') {
      const end = sql.indexOf('\n', i);
      i = end === -1 ? sql.length : end + 1;
    } else if (c === '/' && sql[i + 1] === '*') {
      const end = sql.indexOf('*/', i + 2);
      i = end === -1 ? sql.length : end + 2;
    } else {
      visit(i);
      i += 1;
    }
  }
}

/**
 * `sql` with each `$n` outside quotes and comments replaced by `?`, and the parameters in the
 * order the `?` take them. SQL already written with `?` (an ORM's compiled query) passes through
 * as it is. `undefined` is sent as NULL and a boolean as 1 or 0, as the other stores do.
 *
 * @example
 * ```ts
 * toQuestionMarks('SELECT * FROM t WHERE a = $2 OR b = $1 OR c = $2', ['x', 'y']);
 * // { sql: 'SELECT * FROM t WHERE a = ? OR b = ? OR c = ?', params: ['y', 'x', 'y'] }
 * ```
 */
export function toQuestionMarks(sql: string, params: readonly unknown[] = []): { sql: string; params: unknown[] } {
  const cuts: { at: number; end: number; n: number }[] = [];
  let marks = 0;
  scan(sql, (i) => {
    if (sql[i] === '?') marks += 1;
    if (sql[i] !== '$') return;
    const digits = /^\d+/.exec(sql.slice(i + 1, i + 8));
    if (digits && !/[A-Za-z0-9_$]/.test(sql[i - 1] ?? '')) cuts.push({ at: i, end: i + 1 + digits[0].length, n: Number(digits[0]) });
  });
  const value = (v: unknown): unknown => (v === undefined ? null : typeof v === 'boolean' ? Number(v) : v);
  if (cuts.length === 0) return { sql, params: params.map(value) };
  if (marks > 0) throw new TypeError('mysqlKeyStore: a statement mixes $n and ? placeholders');
  let text = '';
  let from = 0;
  const ordered: unknown[] = [];
  for (const cut of cuts) {
    if (cut.n < 1 || cut.n > params.length) throw new RangeError(`mysqlKeyStore: $${cut.n} has no parameter (${params.length} given)`);
    text += `${sql.slice(from, cut.at)}?`;
    from = cut.end;
    ordered.push(value(params[cut.n - 1]));
  }
  return { sql: text + sql.slice(from), params: ordered };
}

/**
 * A script's statements, cut at each `;` outside quotes and comments, empty ones dropped. (A
 * routine whose body holds `;` needs the client's DELIMITER, which a driver does not have: create
 * it yourself.)
 *
 * @example
 * ```ts
 * statementsOf('CREATE TABLE a (x INT); CREATE TABLE b (y TEXT);'); // ['CREATE TABLE a (x INT)', 'CREATE TABLE b (y TEXT)']
 * ```
 */
export function statementsOf(script: string): string[] {
  const ends: number[] = [];
  scan(script, (i) => {
    if (script[i] === ';') ends.push(i);
  });
  const parts: string[] = [];
  let from = 0;
  for (const end of [...ends, script.length]) {
    parts.push(script.slice(from, end).trim());
    from = end + 1;
  }
  return parts.filter((part) => part.length > 0);
}
