/**
 * The uploader's two passes over the file, both streamed: {@link inspectFile} proves the file
 * can be uploaded at all (UTF-8, a usable header) and counts its rows; {@link validBatches}
 * maps the rows, batch by batch, reporting the invalid ones as it goes.
 *
 * @module
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { canonicalJson } from '../fingerprint.js';
import { CsvFileError, readCsvBatches, type CsvRecord } from './upload-csv.js';
import type { Tally } from './upload-report.js';
import { createRowMapper, isInvalidRow, type RowMapper, type RowMapperOptions, type RowUpload } from './upload-rows.js';

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
  return createHash('sha256').update(`POST\n${path}\n${canonicalJson(JSON.parse(body))}`).digest('hex');
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
export async function inspectFile(settings: FileSettings): Promise<{ rows: number } | { problem: string }> {
  let header: CsvRecord | undefined;
  let rows = 0;
  try {
    for await (const batch of readCsvBatches(chunks(settings.file))) {
      for (const record of batch) {
        if (header === undefined) {
          header = record;
          const made = createRowMapper(header, settings);
          if (!made.ok) return { problem: made.problem };
        } else {
          rows += 1;
        }
      }
    }
  } catch (error) {
    if (error instanceof CsvFileError) return { problem: error.message };
    const code = (error as { code?: unknown }).code;
    if (code === 'ENOENT' || code === 'EISDIR' || code === 'EACCES') return { problem: `cannot read ${settings.file} (${String(code)})` };
    throw error;
  }
  if (header === undefined) return { problem: 'the file is empty: it needs a header line and at least one row' };
  return { rows };
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
export async function* validBatches(settings: FileSettings, tally: Tally, stop: () => boolean): AsyncGenerator<RowUpload[]> {
  let map: RowMapper | undefined;
  let batch: RowUpload[] = [];
  for await (const records of readCsvBatches(chunks(settings.file))) {
    for (const record of records) {
      if (map === undefined) {
        const made = createRowMapper(record, settings);
        if (!made.ok) throw new CsvFileError(made.problem, record.line);
        map = made.map;
        continue;
      }
      const row = map(record);
      if (isInvalidRow(row)) {
        tally.record('invalid', { line: row.line, reason: row.reason });
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

