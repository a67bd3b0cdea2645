/**
 * Turns CSV records into uploads: which columns make the key, which make the body, and why a
 * row cannot be sent. Pure functions, so the rules are tested without a server.
 *
 * A row's key is `deriveKey(namespace, ...keyColumns)`: the same row in a resubmitted file
 * gets the same key, which is what makes resubmission safe.
 *
 * @module
 */
import { deriveKey } from '../keys.js';
import type { CsvRecord } from './upload-csv.js';

/** The key columns used when `--key-columns` is not given. */
export const DEFAULT_KEY_COLUMNS: readonly string[] = ['client_ref', 'operation', 'value_date'];

/** A row ready to be journaled and sent. */
export interface RowUpload {
  readonly line: number;
  readonly key: string;
  /** The JSON body, serialised once so every attempt sends the same bytes. */
  readonly body: string;
}

/** A row that cannot be sent, and why. */
export interface InvalidRow {
  readonly line: number;
  readonly reason: string;
}

/** What {@link createRowMapper} needs besides the header. */
export interface RowMapperOptions {
  readonly keyColumns: readonly string[];
  /** The body columns; `undefined` means every column that is not a key column. */
  readonly bodyColumns: readonly string[] | undefined;
  /** The uuid5 namespace of {@link deriveKey}; `undefined` uses the default namespace. */
  readonly namespace: string | undefined;
}

/** Maps one record of the file to an upload or an invalid row. */
export type RowMapper = (record: CsvRecord) => RowUpload | InvalidRow;

/**
 * Whether a mapped row is an {@link InvalidRow}.
 *
 * @example
 * ```ts
 * const row = map(record);
 * if (isInvalidRow(row)) console.log(`line ${row.line}: ${row.reason}`);
 * ```
 */
export function isInvalidRow(row: RowUpload | InvalidRow): row is InvalidRow {
  return 'reason' in row;
}

const INTEGER = /^-?\d+$/;

/**
 * A field's value as a reason quotes it: cut to its first 40 characters, since a field may be of
 * any length (a megabyte of junk) and the reason is printed and kept in the report.
 */
const quoted = (value: string): string => (value.length > 40 ? `${JSON.stringify(value.slice(0, 40))}… (${value.length} characters)` : JSON.stringify(value));

/**
 * Checks the header against the options and returns the mapper for the rows under it, or
 * why the file cannot be uploaded at all (no header, a missing or repeated column).
 *
 * @example
 * ```ts
 * const made = createRowMapper(headerRow, { keyColumns: DEFAULT_KEY_COLUMNS, bodyColumns: undefined, namespace: undefined });
 * if (made.ok) made.map(record); // { line, key, body: '{"amount":1250,...}' } or { line, reason }
 * ```
 */
export function createRowMapper(
  header: CsvRecord,
  options: RowMapperOptions,
): { readonly ok: true; readonly map: RowMapper; readonly bodyColumns: readonly string[] } | { readonly ok: false; readonly problem: string } {
  const names = header.fields.map((name) => name.trim());
  if (header.problem !== undefined) return { ok: false, problem: `the header (line ${header.line}) is malformed: ${header.problem}` };
  const seen = new Set<string>();
  for (const name of names) {
    if (name === '') return { ok: false, problem: `the header (line ${header.line}) has an empty column name` };
    if (seen.has(name)) return { ok: false, problem: `the header (line ${header.line}) names the column ${JSON.stringify(name)} twice` };
    seen.add(name);
  }
  const missing = [...options.keyColumns, ...(options.bodyColumns ?? [])].filter((name) => !seen.has(name));
  if (missing.length > 0) {
    return {
      ok: false,
      problem:
        `the first line must be a header naming the columns ${missing.map((m) => JSON.stringify(m)).join(', ')}; ` +
        `found ${names.map((n) => JSON.stringify(n)).join(', ')}`,
    };
  }
  const keyColumns = new Set(options.keyColumns);
  const bodyColumns = options.bodyColumns ?? names.filter((name) => !keyColumns.has(name));
  if (bodyColumns.length === 0) return { ok: false, problem: 'no body columns: every column is a key column' };
  const keyIndexes = options.keyColumns.map((name) => names.indexOf(name));
  const bodyIndexes = bodyColumns.map((name) => names.indexOf(name));
  const namespace = options.namespace;

  const map: RowMapper = (record) => {
    const { line, fields } = record;
    if (record.problem !== undefined) return { line, reason: record.problem };
    if (fields.length !== names.length) {
      return { line, reason: `${fields.length} fields where the header has ${names.length}` };
    }
    const parts: string[] = [];
    for (const [n, index] of keyIndexes.entries()) {
      const value = (fields[index] ?? '').trim();
      if (value === '') return { line, reason: `the key column ${options.keyColumns[n]} is empty` };
      parts.push(value);
    }
    const body: Record<string, string | number> = {};
    for (const [n, index] of bodyIndexes.entries()) {
      const name = bodyColumns[n] as string;
      const value = fields[index] ?? '';
      if (name === 'amount') {
        // Amounts are minor units: an integer, never a float that could round.
        const amount = INTEGER.test(value.trim()) ? Number(value.trim()) : Number.NaN;
        if (!Number.isSafeInteger(amount)) return { line, reason: `amount ${quoted(value)} is not an integer (minor units)` };
        body[name] = amount;
      } else {
        body[name] = value;
      }
    }
    return { line, key: deriveKey(namespace, ...parts), body: JSON.stringify(body) };
  };
  return { ok: true, map, bodyColumns };
}
