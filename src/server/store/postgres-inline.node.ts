/**
 * The store's own statements as literal SQL text, so that one can share a simple-protocol round
 * trip with BEGIN or COMMIT (see `postgres-runner.node.ts`).
 *
 * @module
 */
import pg from 'pg';

/** A statement of the store's own (never application SQL) and its values. */
export interface Statement {
  readonly sql: string;
  readonly params: readonly unknown[];
}

/**
 * `value` as a PostgreSQL literal, for {@link inline}. Strings go through `pg`'s `escapeLiteral`
 * (right whatever `standard_conforming_strings` says); a string holding NUL is refused as
 * PostgreSQL refuses it as a parameter (22021), since the simple protocol would cut the text there.
 */
export function literal(value: unknown): string {
  if (value === null || value === undefined) return 'NULL';
  switch (typeof value) {
    case 'string':
      if (value.includes('\0')) throw Object.assign(new Error('invalid byte sequence for encoding "UTF8": 0x00'), { code: '22021' });
      return pg.escapeLiteral(value);
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
  return statement.sql.replace(/\$(\d+)/g, (_, n: string) => {
    const index = Number(n) - 1;
    if (index >= statement.params.length) throw new RangeError(`inline: no value for $${n}`);
    return literal(statement.params[index]);
  });
}
