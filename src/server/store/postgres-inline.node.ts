/**
 * The store's own statements as literal SQL text, so that one can share a simple-protocol round
 * trip with BEGIN or COMMIT (see `postgres-runner.node.ts`).
 *
 * @module
 */
/** A statement of the store's own (never application SQL) and its values. */
export interface Statement {
  readonly sql: string;
  readonly params: readonly unknown[];
}

/**
 * `text` quoted exactly as `pg`'s `escapeLiteral` quotes it (right whatever
 * `standard_conforming_strings` says: quotes doubled, and with a backslash, backslashes doubled in
 * an ` E'…'` string), without its character-by-character concatenation, which cost the
 * store's round trips a rope node per character (~24 KB of garbage per first execution) and the
 * flattening of the result.
 */
function quoteText(text: string): string {
  const quoted = `'${text.includes("'") ? text.replaceAll("'", "''") : text}'`;
  return text.includes('\\') ? ` E${quoted.replaceAll('\\', '\\\\')}` : quoted;
}

/**
 * `value` as a PostgreSQL literal, for {@link inline}. Strings are quoted as `pg`'s
 * `escapeLiteral` quotes them ({@link quoteText}); a string holding NUL is refused as
 * PostgreSQL refuses it as a parameter (22021), since the simple protocol would cut the text there.
 */
export function literal(value: unknown): string {
  if (value === null || value === undefined) return 'NULL';
  switch (typeof value) {
    case 'string':
      if (value.includes('\0')) throw Object.assign(new Error('invalid byte sequence for encoding "UTF8": 0x00'), { code: '22021' });
      return quoteText(value);
    case 'number':
      if (!Number.isFinite(value)) throw new RangeError(`literal: ${value} is not a finite number`);
      // Parenthesised when negative, so no neighbouring "-" can make a comment of it.
      return value < 0 ? `(${value})` : String(value);
    case 'bigint':
      return value < 0n ? `(${value})` : String(value);
    case 'boolean':
      return value ? 'TRUE' : 'FALSE';
    default:
      throw new TypeError(`literal: cannot inline a ${typeof value}`);
  }
}

/**
 * A statement of the store's own with its `$n` replaced by literals, so that it can share a
 * simple-protocol round trip with BEGIN or COMMIT: `pg` sends one query at a time and waits for
 * its answer (no pipelining), and each round trip costs both processes far more CPU than parsing
 * a literal. The store's statements hold no `$` anywhere else.
 *
 * @example
 * ```ts
 * inline({ sql: 'SELECT $1, $2', params: ["it's", 3] }); // "SELECT 'it''s', 3"
 * ```
 */
export function inline(statement: Statement): string {
  const parts = template(statement.sql);
  let text = parts[0] as string;
  for (let at = 1; at < parts.length; at += 2) {
    const index = parts[at] as number;
    if (index >= statement.params.length) throw new RangeError(`inline: no value for $${index + 1}`);
    text += literal(statement.params[index]) + (parts[at + 1] as string);
  }
  return text;
}

/**
 * `sql` split at its placeholders — text, value index, text, … — once per text: the store sends
 * a handful of fixed texts, and splitting each at every call was most of a round trip's garbage.
 * The cache stops growing past {@link MAX_TEMPLATES} texts, in case some caller builds them.
 */
const templates = new Map<string, ReadonlyArray<string | number>>();
const MAX_TEMPLATES = 256;

function template(sql: string): ReadonlyArray<string | number> {
  let parts = templates.get(sql);
  if (parts === undefined) {
    parts = sql.split(/\$(\d+)/).map((part, index) => (index % 2 === 1 ? Number(part) - 1 : part));
    if (templates.size < MAX_TEMPLATES) templates.set(sql, parts);
  }
  return parts;
}
