import { describe, expect, it } from 'vitest';
import { CsvFileError, readCsv, type CsvRecord } from '../../src/cli/upload-csv.js';

async function parse(chunks: ReadonlyArray<string | Uint8Array>): Promise<CsvRecord[]> {
  const records: CsvRecord[] = [];
  for await (const record of readCsv(chunks)) records.push(record);
  return records;
}

/** Splits a text into chunks of `size` bytes, so every boundary case is crossed. */
function chunked(text: string, size: number): Uint8Array[] {
  const bytes = new TextEncoder().encode(text);
  const out: Uint8Array[] = [];
  for (let i = 0; i < bytes.length; i += size) out.push(bytes.subarray(i, i + size));
  return out;
}

describe('readCsv', () => {
  it('reads quoted fields with commas, doubled quotes and line breaks, with the line each record starts on', async () => {
    const text = 'a,b,c\r\n1,"x, y","say ""hi"""\r\n2,"two\r\nlines",z\n3,,\n';
    const records = await parse([text]);
    expect(records).toEqual([
      { line: 1, fields: ['a', 'b', 'c'] },
      { line: 2, fields: ['1', 'x, y', 'say "hi"'] },
      { line: 3, fields: ['2', 'two\r\nlines', 'z'] },
      { line: 5, fields: ['3', '', ''] },
    ]);
  });

  it('gives the same records whatever the chunk boundaries, including inside a multi-byte character', async () => {
    const text = '\uFEFFname,amount\n"Zoë ""Z""",12\r\n\r\nJosé,"1\r\n2"\rlast,€5';
    const whole = await parse([text]);
    expect(whole).toHaveLength(4);
    expect(whole[0]).toEqual({ line: 1, fields: ['name', 'amount'] });
    expect(whole[2]).toEqual({ line: 4, fields: ['José', '1\r\n2'] });
    expect(whole[3]).toEqual({ line: 6, fields: ['last', '€5'] });
    for (const size of [1, 2, 3, 5, 7]) {
      expect(await parse(chunked(text, size))).toEqual(whole);
    }
  });

  it('skips blank lines but counts them in line numbers', async () => {
    expect(await parse(['h\n\n\nv\n'])).toEqual([
      { line: 1, fields: ['h'] },
      { line: 4, fields: ['v'] },
    ]);
  });

  it('flags a record that breaks the grammar and keeps reading the records after it', async () => {
    const records = await parse(['h1,h2\nok,1\nbad"quote,2\n"closed"junk,3\nok2,4\n"open,5\n']);
    expect(records.map((r) => [r.line, r.problem === undefined])).toEqual([
      [1, true],
      [2, true],
      [3, false],
      [4, false],
      [5, true],
      [6, false],
    ]);
    expect(records[5]?.problem).toMatch(/never closed/);
  });

  it('rejects a file that is not UTF-8 with the line it failed near', async () => {
    const bad = new Uint8Array([...new TextEncoder().encode('a,b\n1,2\n'), 0xff, 0xfe, 0x0a]);
    await expect(parse([bad])).rejects.toSatisfy((error: unknown) => error instanceof CsvFileError && error.line === 3);
  });
});
