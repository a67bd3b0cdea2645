/**
 * A streaming RFC 4180 reader for the uploader: bytes in, one record at a time out, so a
 * 1 000 000-row file is never held in memory.
 *
 * - Fields are separated by `,`; a field may be quoted with `"`, and `""` inside quotes is a
 *   literal quote. Quoted fields may hold commas and line breaks.
 * - Records end at `\n`, `\r\n` or a lone `\r`. Blank lines are skipped. A leading UTF-8 BOM
 *   is dropped.
 * - Every record carries the physical line it starts on (the header is line 1), so a report
 *   can point at the row a person has to fix.
 * - A record that breaks the grammar (a quote inside an unquoted field, text after a closing
 *   quote, a quote left open at the end of the file) is still returned, with `problem` set:
 *   one bad row never stops the rows after it.
 * - Bytes that are not UTF-8 make the whole file unreadable: {@link CsvFileError}.
 *
 * @module
 */

/** One record of a CSV file. */
export interface CsvRecord {
  /** The 1-based physical line the record starts on. */
  readonly line: number;
  readonly fields: readonly string[];
  /** Why the record breaks the CSV grammar, when it does. */
  readonly problem?: string;
}

/**
 * The file as a whole cannot be read as CSV (not UTF-8). Nothing should be sent.
 *
 * @example
 * ```ts
 * try {
 *   for await (const record of readCsv(stream)) rows.push(record);
 * } catch (error) {
 *   if (error instanceof CsvFileError) console.error(`line ${error.line}: ${error.message}`);
 * }
 * ```
 */
export class CsvFileError extends Error {
  override readonly name = 'CsvFileError';
  readonly code = 'ERR_CSV_FILE' as const;
  /** The line the problem was found on. */
  readonly line: number;

  constructor(message: string, line: number, options?: ErrorOptions) {
    super(message, options);
    this.line = line;
  }
}

const COMMA = 44;
const QUOTE = 34;
const LF = 10;
const CR = 13;
const BOM = 0xfeff;

/**
 * The parser's state between chunks. Chunks may split a record, a quoted field or a `\r\n`
 * anywhere; everything needed to continue lives here.
 */
class CsvTokenizer {
  private fields: string[] = [];
  private field = '';
  private inQuotes = false;
  /** The current field was quoted and its closing quote has been read. */
  private closedQuote = false;
  /** Inside quotes, the previous character was a quote: either `""` or the closing quote. */
  private pendingQuote = false;
  private afterCr = false;
  private problem: string | undefined;
  private line = 1;
  private recordLine = 1;
  private fieldStarted = false;
  private started = false;

  push(text: string, out: CsvRecord[]): void {
    const length = text.length;
    let i = 0;
    if (!this.started && length > 0) {
      this.started = true;
      if (text.charCodeAt(0) === BOM) i = 1; // string input: no decoder stripped it
    }
    for (; i < length; i += 1) {
      const code = text.charCodeAt(i);
      if (this.afterCr) {
        this.afterCr = false;
        if (code === LF) {
          // The \n of a \r\n: the \r already ended the line (or, inside quotes, counted it).
          if (this.inQuotes) this.field += '\n';
          continue;
        }
      }
      if (this.pendingQuote) {
        this.pendingQuote = false;
        if (code === QUOTE) {
          this.field += '"';
          continue;
        }
        this.inQuotes = false;
        this.closedQuote = true;
      }
      if (this.inQuotes) {
        if (code === QUOTE) {
          this.pendingQuote = true;
        } else {
          if (code === LF || code === CR) {
            this.line += 1;
            this.afterCr = code === CR;
          }
          this.field += text[i];
        }
        continue;
      }
      if (code === COMMA) {
        this.endField();
      } else if (code === LF || code === CR) {
        this.afterCr = code === CR;
        this.endRecord(out);
        this.line += 1;
        this.recordLine = this.line;
      } else if (code === QUOTE) {
        if (!this.fieldStarted) {
          this.inQuotes = true;
          this.fieldStarted = true;
        } else {
          this.problem ??= `a quote (") inside an unquoted field; quote the whole field and double the quote`;
          this.field += '"';
        }
      } else {
        if (this.closedQuote) this.problem ??= 'text after the closing quote of a field';
        this.fieldStarted = true;
        this.field += text[i];
      }
    }
  }

  end(out: CsvRecord[]): void {
    if (this.pendingQuote) {
      this.pendingQuote = false;
      this.inQuotes = false;
    }
    if (this.inQuotes) {
      this.problem ??= 'a quoted field is never closed (the rest of the file became part of it)';
      this.inQuotes = false;
    }
    this.endRecord(out);
  }

  private endField(): void {
    this.fields.push(this.field);
    this.field = '';
    this.fieldStarted = false;
    this.closedQuote = false;
  }

  private endRecord(out: CsvRecord[]): void {
    const blank = this.fields.length === 0 && !this.fieldStarted && this.field === '';
    if (!blank) {
      this.endField();
      const record: CsvRecord =
        this.problem === undefined ? { line: this.recordLine, fields: this.fields } : { line: this.recordLine, fields: this.fields, problem: this.problem };
      out.push(record);
    }
    this.fields = [];
    this.field = '';
    this.fieldStarted = false;
    this.closedQuote = false;
    this.problem = undefined;
  }

  get currentLine(): number {
    return this.line;
  }
}

/**
 * Reads CSV records from a byte stream (a `fs.createReadStream`, a `Response.body`, an array
 * of chunks), one batch of records per input chunk.
 *
 * @throws CsvFileError when the bytes are not UTF-8
 *
 * @example
 * ```ts
 * for await (const batch of readCsvBatches(createReadStream('payroll.csv'))) {
 *   for (const record of batch) console.log(record.line, record.fields);
 * }
 * ```
 */
export async function* readCsvBatches(source: AsyncIterable<Uint8Array | string>): AsyncGenerator<CsvRecord[]> {
  const decoder = new TextDecoder('utf-8', { fatal: true });
  const tokenizer = new CsvTokenizer();
  const decode = (chunk: Uint8Array | undefined): string => {
    try {
      return chunk === undefined ? decoder.decode() : decoder.decode(chunk, { stream: true });
    } catch (cause) {
      // Point at the line: count the line breaks of this chunk before its first bad byte.
      const lenient = chunk === undefined ? '' : new TextDecoder('utf-8').decode(chunk);
      const bad = lenient.indexOf('\uFFFD');
      const before = bad < 0 ? '' : lenient.slice(0, bad);
      const line = tokenizer.currentLine + (before.match(/\r\n|\r|\n/g)?.length ?? 0);
      throw new CsvFileError(`the file is not valid UTF-8 (line ${line}); save it as UTF-8 and try again`, line, { cause });
    }
  };
  for await (const chunk of source) {
    const out: CsvRecord[] = [];
    tokenizer.push(typeof chunk === 'string' ? chunk : decode(chunk), out);
    if (out.length > 0) yield out;
  }
  const out: CsvRecord[] = [];
  tokenizer.push(decode(undefined), out);
  tokenizer.end(out);
  if (out.length > 0) yield out;
}

/**
 * Reads CSV records one at a time; see {@link readCsvBatches}.
 *
 * @example
 * ```ts
 * for await (const record of readCsv(['a,b\n1,"x, y"\n'])) console.log(record.fields);
 * // ['a', 'b'] then ['1', 'x, y']
 * ```
 */
export async function* readCsv(source: AsyncIterable<Uint8Array | string> | Iterable<Uint8Array | string>): AsyncGenerator<CsvRecord> {
  const iterable: AsyncIterable<Uint8Array | string> =
    Symbol.asyncIterator in source
      ? source
      : (async function* () {
          yield* source;
        })();
  for await (const batch of readCsvBatches(iterable)) yield* batch;
}
