/**
 * `oncely upload` with invalid rows: the report stays readable however many rows share a key or
 * however long a bad field is.
 */
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { UploadReport } from '../../src/cli/upload-report.js';
import { runCli } from './helpers/processes.js';

const HEADER = 'client_ref,operation,value_date,amount,currency,reference';
const rows = (ref: string, count: number): string[] => Array.from({ length: count }, (_, i) => `${ref}-${i},pay,2026-12-01,${100 + i},EUR,salary ${i}`);

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'oncely-upload-invalid-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const csv = (name: string, lines: readonly string[]): string => {
  const path = join(dir, name);
  writeFileSync(path, `${[HEADER, ...lines].join('\n')}\n`);
  return path;
};
const readReport = (path: string): UploadReport => JSON.parse(readFileSync(path, 'utf8')) as UploadReport;

describe('oncely upload lists invalid rows within bounds', () => {
  it('names a few of a duplicate row’s partners and how many more, when 2 000 rows share one key', async () => {
    const shared = Array.from({ length: 2_000 }, (_, i) => `same,pay,2026-12-01,${100 + i},EUR,salary ${i}`);
    const report = join(dir, 'shared.json');
    const run = await runCli(['upload', csv('shared.csv', shared), '--dry-run', '--report', report]);
    const json = readReport(report);
    expect(json.invalid).toBe(2_000);
    expect(json.invalidRows[0]?.reason).toMatch(/the same key \(client_ref, operation, value_date\) as lines 3, 4, 5 and 1996 more: key /);
    expect(json.invalidRows[1]?.reason).toMatch(/as lines 2, 4, 5 and 1996 more/);
    expect(Math.max(...json.invalidRows.map((row) => row.reason.length))).toBeLessThan(200);
    expect(statSync(report).size).toBeLessThan(300_000);
    // The terminal gets a screenful and the count of the rest.
    expect(run.stdout.split('\n').filter((line) => line.startsWith('  line ')).length).toBe(20);
    expect(run.stdout).toContain('… and 1980 more (--report FILE lists the first 1000)');
    expect(run.stdout.length).toBeLessThan(10_000);
  });

  it('quotes the start of a bad field, not the whole of it', async () => {
    const huge = '9'.repeat(500_000) + 'x';
    const run = await runCli(['upload', csv('huge.csv', [...rows('huge', 2), `huge-9,pay,2026-12-01,${huge},EUR,salary`]), '--dry-run']);
    expect(run.stdout).toMatch(/line 4: amount "9{40}"… \(500001 characters\) is not an integer/);
    expect(run.stdout.length).toBeLessThan(5_000);
  });
});
