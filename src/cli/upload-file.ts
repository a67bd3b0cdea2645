/**
 * The uploader's two passes over the file, both streamed: {@link inspectFile} proves the file
 * can be uploaded at all (UTF-8, a usable header), counts its rows and finds rows that share a
 * key; {@link validBatches} maps the rows, batch by batch, reporting the invalid ones (those
 * duplicates included) as it goes.
 *
 * Duplicate keys must be found before anything is sent: the first row of a pair may be in the
 * first batch and the second a million rows later. Pass 1 keeps a 30-bit prefix of each key in
 * a set (a few tens of bytes per row, not the keys themselves); a prefix seen twice marks a
 * candidate, and only when there are candidates is the file read once more to compare the full
 * keys of the rows with those prefixes.
 *
 * @module
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { canonicalJson } from '../fingerprint.js';
import { CsvFileError, readCsvBatches } from './upload-csv.js';
import type { Tally } from './upload-report.js';
import { createRowMapper, isInvalidRow, type InvalidRow, type RowMapper, type RowMapperOptions, type RowUpload } from './upload-rows.js';

/** Rows per batch: journaled in one transaction by the uploader. */
export const BATCH_SIZE = 500;
/** Read buffer: large enough that parsing, not I/O, sets the pace. */
const CHUNK_BYTES = 256 * 1024;

/** The file and how its rows map to uploads. */
export interface FileSettings extends RowMapperOptions {
  readonly file: string;
}

/**
 * The protocol fingerprint of a row's POST, the same bytes `fingerprint()` hashes, computed
 * with node:crypto: synchronous and several times cheaper than WebCrypto's `digest` per row,
 * which is what a million-row file needs.
 *
 * @example
 * ```ts
 * rowFingerprint('/v1/payments', '{"amount":1250,"currency":"EUR"}') === await fingerprint('POST', '/v1/payments', body); // true
 * ```
 */
export function rowFingerprint(path: string, body: string): string {
  return createHash('sha256')
    .update(`POST\n${path}\n${canonicalJson(JSON.parse(body))}`)
    .digest('hex');
}

function chunks(file: string): AsyncIterable<Uint8Array> {
  return createReadStream(file, { highWaterMark: CHUNK_BYTES });
}

/**
 * Pass 1: proves the file is readable CSV with a usable header and counts its data rows.
 *
 * @example
 * ```ts
 * const inspected = await inspectFile({ file: 'payroll.csv', keyColumns: DEFAULT_KEY_COLUMNS, bodyColumns: undefined, namespace: undefined });
 * if ('problem' in inspected) console.error(inspected.problem);
 * ```
 */
export async function inspectFile(settings: FileSettings): Promise<Inspected | { problem: string }> {
  const header = { seen: false };
  let rows = 0;
  const seen = new Set<number>();
  const twice = new Set<number>();
  try {
    for await (const mapped of mappedRows(settings, header)) {
      for (const row of mapped) {
        rows += 1;
        if (isInvalidRow(row)) continue;
        const prefix = keyPrefix(row.key);
        if (seen.has(prefix)) twice.add(prefix);
        else seen.add(prefix);
      }
    }
    seen.clear();
    if (!header.seen) return { problem: 'the file is empty: it needs a header line and at least one row' };
    return { rows, duplicates: twice.size === 0 ? new Map() : await confirmDuplicates(settings, twice) };
  } catch (error) {
    if (error instanceof CsvFileError) return { problem: error.message };
    const code = (error as { code?: unknown }).code;
    if (code === 'ENOENT' || code === 'EISDIR' || code === 'EACCES') return { problem: `cannot read ${settings.file} (${String(code)})` };
    throw error;
  }
}

/**
 * The file's data rows, mapped, one array per chunk read; the header is checked first (a
 * `CsvFileError` when it is unusable) and `header.seen` set once it was read.
 */
async function* mappedRows(settings: FileSettings, header = { seen: false }): AsyncGenerator<Array<RowUpload | InvalidRow>> {
  let map: RowMapper | undefined;
  for await (const records of readCsvBatches(chunks(settings.file))) {
    const mapped: Array<RowUpload | InvalidRow> = [];
    for (const record of records) {
      if (map === undefined) {
        const made = createRowMapper(record, settings);
        if (!made.ok) throw new CsvFileError(made.problem, record.line);
        map = made.map;
        header.seen = true;
        continue;
      }
      mapped.push(map(record));
    }
    yield mapped;
  }
}

/** What pass 1 found out about a readable file. */
export interface Inspected {
  /** Data rows (lines after the header). */
  readonly rows: number;
  /** Rows whose key another row of the file also has, by line: why they are not sent. */
  readonly duplicates: ReadonlyMap<number, string>;
}

/** 30 bits of a derived key (its leading hex digits): small integers keep pass 1's set compact. */
const keyPrefix = (key: string): number => Number.parseInt(key.slice(0, 8), 16) >>> 2;

/**
 * How many of a duplicate row's partners its reason names. A key shared by every row of a file
 * would otherwise give each of n rows a reason naming the other n - 1: n² line numbers (2 000 rows
 * printed 11 MB), held in memory and written to the report.
 */
const PARTNERS_NAMED = 3;

/** `line 29`, `lines 5, 29`, `lines 2, 3, 4 and 1996 more`: the lines `named` of `total` partners. */
function partnerList(named: readonly number[], total: number): string {
  const more = total - named.length;
  return `line${total > 1 ? 's' : ''} ${named.join(', ')}${more > 0 ? ` and ${more} more` : ''}`;
}

/** Reads the file once more for the rows whose key prefix occurs twice, and compares full keys. */
async function confirmDuplicates(settings: FileSettings, prefixes: ReadonlySet<number>): Promise<Map<number, string>> {
  const lines = new Map<string, number[]>();
  for await (const mapped of mappedRows(settings)) {
    for (const row of mapped) {
      if (isInvalidRow(row) || !prefixes.has(keyPrefix(row.key))) continue;
      const at = lines.get(row.key);
      if (at === undefined) lines.set(row.key, [row.line]);
      else at.push(row.line);
    }
  }
  const duplicates = new Map<number, string>();
  const columns = settings.keyColumns.join(', ');
  for (const [key, at] of lines) {
    if (at.length < 2) continue;
    // The partners named are the first lines of the key (or the first others): enough to find the
    // rows in the file, the same few for every row of the key.
    const first = at.slice(0, PARTNERS_NAMED + 1);
    for (const line of at) {
      const named = first.filter((other) => other !== line).slice(0, PARTNERS_NAMED);
      duplicates.set(line, `the same key (${columns}) as ${partnerList(named, at.length - 1)}: key ${key}; neither is sent, fix the file`);
    }
  }
  return duplicates;
}

/**
 * Pass 2: yields batches of valid rows and records the invalid ones in the tally; `stop()` is
 * checked after each chunk of the file.
 *
 * @example
 * ```ts
 * for await (const batch of validBatches(settings, tally, () => false)) await journal.putMany(batch.map(toOperation));
 * ```
 */
export async function* validBatches(
  settings: FileSettings,
  tally: Tally,
  stop: () => boolean,
  duplicates: ReadonlyMap<number, string> = new Map(),
): AsyncGenerator<RowUpload[]> {
  let batch: RowUpload[] = [];
  for await (const mapped of mappedRows(settings)) {
    for (const row of mapped) {
      if (isInvalidRow(row)) {
        tally.record('invalid', { line: row.line, reason: row.reason });
      } else if (duplicates.has(row.line)) {
        tally.record('invalid', { line: row.line, reason: duplicates.get(row.line) as string });
      } else {
        batch.push(row);
        if (batch.length >= BATCH_SIZE) {
          yield batch;
          batch = [];
        }
      }
    }
    if (stop()) return;
  }
  if (batch.length > 0) yield batch;
}
