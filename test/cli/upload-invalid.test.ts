/**
 * `oncely upload` with invalid rows: the report stays readable however many rows share a key or
 * however long a bad field is, and the exit code fails a file none of whose rows can be sent
 * (`--strict`: a file with any such row), in a dry run as in a real one.
 */
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { UploadReport } from '../../src/cli/upload-report.js';
import { ledgerCount, runCli, startServer, type TestServer } from './helpers/processes.js';

const HEADER = 'client_ref,operation,value_date,amount,currency,reference';
const rows = (ref: string, count: number): string[] => Array.from({ length: count }, (_, i) => `${ref}-${i},pay,2026-12-01,${100 + i},EUR,salary ${i}`);

let dir: string;
let server: TestServer;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'oncely-upload-invalid-'));
  server = await startServer(join(dir, 'server.db'), ['allbad', 'strict']);
});
afterAll(async () => {
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
});

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

describe('oncely upload fails the exit code for invalid rows', () => {
  const allBad = (): string => csv('all-bad.csv', ['a,pay,2026-12-01,x,EUR,one', 'b,pay,2026-12-01,1.5,EUR,two', 'c,,2026-12-01,3,EUR,three']);

  it('exits 1 on a --dry-run of a file none of whose rows is valid', async () => {
    const run = await runCli(['upload', allBad(), '--dry-run']);
    expect(run.code).toBe(1);
    expect(run.stdout).toContain('no row of the file is valid: none would be sent; fix the file');
  });

  it('exits 1 on a real run of such a file, having sent nothing', async () => {
    const run = await runCli(['upload', allBad(), '--url', `${server.url}/v1/payments`, '--token', 'tok_allbad', '--journal', join(dir, 'all-bad.db')]);
    expect(run.code).toBe(1);
    expect(run.stdout).toContain('no row of the file is valid: nothing was sent; fix the file');
    expect(run.stdout).not.toContain('every valid row has a final outcome');
    expect(await ledgerCount(server, 'tok_allbad')).toBe(0);
  });

  it('with --strict, exits 1 for one invalid row, in a dry run and in a real run that still sends the valid rows', async () => {
    const file = csv('strict.csv', [...rows('strict', 5), 'strict-x,pay,2026-12-01,x,EUR,bad']);
    const dry = await runCli(['upload', file, '--dry-run', '--strict']);
    expect(dry.code).toBe(1);
    expect(dry.stdout).toContain('1 invalid rows (--strict)');
    const report = join(dir, 'strict.json');
    const args = ['upload', file, '--url', `${server.url}/v1/payments`, '--token', 'tok_strict', '--journal', join(dir, 'strict.db'), '--report', report];
    const run = await runCli([...args, '--strict']);
    expect(run.code).toBe(1);
    expect(readReport(report)).toMatchObject({ strict: true, executed: 5, invalid: 1, complete: true });
    expect(await ledgerCount(server, 'tok_strict')).toBe(5);
    // Without --strict the same file passes: its valid rows all have a final outcome.
    expect((await runCli(args)).code).toBe(0);
    expect(await ledgerCount(server, 'tok_strict')).toBe(5);
  }, 60_000);
});
