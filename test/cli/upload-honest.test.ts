/**
 * `oncely upload` reports what the server settled, nothing more: a refused token leaves every row
 * pending and fails the run; two rows with one key are caught before anything is sent; a row the
 * server refused with 400 can be corrected and sent on the next run, a declined one cannot.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
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
  dir = mkdtempSync(join(tmpdir(), 'oncely-upload-honest-'));
  server = await startServer(join(dir, 'server.db'), ['wrongtoken', 'dupes', 'fixed']);
});
afterAll(async () => {
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('oncely upload with a token the server refuses', () => {
  it('stops, says unauthorized, leaves every row pending, reports complete: false and exits 1', async () => {
    const file = join(dir, 'wrong.csv');
    const journal = join(dir, 'wrong.db');
    writeFileSync(file, `${[HEADER, ...rows('wrong', 40)].join('\n')}\n`);
    const report = join(dir, 'wrong.json');
    const run = await runCli(['upload', file, '--url', `${server.url}/v1/payments`, '--token', 'not-a-token', '--journal', journal, '--report', report]);
    expect(run.code).toBe(1);
    expect(run.stdout).toContain('unauthorized: check --token');
    expect(run.stdout).not.toContain('every valid row has a final outcome');
    const json = JSON.parse(readFileSync(report, 'utf8')) as UploadReport;
    expect([json.complete, json.executed, json.replayed, json.declined, json.stopReason]).toEqual([false, 0, 0, 0, 'unauthorized']);
    expect(json.pendingRows.filter((row) => row.status === 401).length).toBeGreaterThan(0);
    expect(json.pendingRows.filter((row) => row.status !== undefined && row.status !== 401)).toEqual([]);
    // Rows cut off in flight say the server ran nothing for them, not that a caller aborted them.
    expect(json.pendingRows.filter((row) => row.status === undefined && !/not run: the server refused the token/.test(row.reason))).toEqual([]);
    // Every row in one figure, the rows journaled but never sent among the pending.
    expect(json.executed + json.replayed + json.declined + json.pending + json.unread + json.invalid).toBe(40);

    const pending = await runCli(['pending', '--journal', journal, '--url', server.url, '--json']);
    const listed = JSON.parse(pending.stdout) as Array<{ state: string }>;
    expect(listed.length).toBe(json.pending);
    expect(listed.every((row) => row.state === 'pending')).toBe(true);

    // The right token finishes the same file: every row once.
    const rerun = await runCli(['upload', file, '--url', `${server.url}/v1/payments`, '--token', 'tok_wrongtoken', '--journal', journal]);
    expect(rerun.code).toBe(0);
    expect(await ledgerCount(server, 'tok_wrongtoken')).toBe(40);
  }, 60_000);
});

describe('oncely upload with two rows of one key', () => {
  const file = (): string => {
    const path = join(dir, 'dupes.csv');
    const body = rows('dupes', 30);
    // Line 5 (data row 3) and line 29 (data row 27) share client_ref, operation and value_date.
    body[27] = 'dupes-3,pay,2026-12-01,999,EUR,salary again';
    writeFileSync(path, `${[HEADER, ...body].join('\n')}\n`);
    return path;
  };

  it('reports both lines in --dry-run', async () => {
    const report = join(dir, 'dupes-dry.json');
    const run = await runCli(['upload', file(), '--dry-run', '--report', report]);
    expect(run.code).toBe(0);
    const json = JSON.parse(readFileSync(report, 'utf8')) as UploadReport;
    expect(json.invalidRows.map((row) => row.line)).toEqual([5, 29]);
    expect(json.invalidRows[0]?.reason).toMatch(/the same key \(client_ref, operation, value_date\) as line 29/);
    expect(json.invalidRows[1]?.reason).toMatch(/as line 5/);
    expect(run.stdout).toMatch(/line 5: the same key/);
  });

  it('sends neither of the two, and every other row once', async () => {
    const report = join(dir, 'dupes.json');
    const run = await runCli([
      'upload',
      file(),
      '--url',
      `${server.url}/v1/payments`,
      '--token',
      'tok_dupes',
      '--journal',
      join(dir, 'dupes.db'),
      '--report',
      report,
    ]);
    expect(run.code).toBe(0);
    const json = JSON.parse(readFileSync(report, 'utf8')) as UploadReport;
    expect([json.executed, json.invalid, json.declined]).toEqual([28, 2, 0]);
    expect(await ledgerCount(server, 'tok_dupes')).toBe(28);
  }, 60_000);
});

describe('oncely upload of a corrected file', () => {
  it('sends a row the server refused with 400 once it is fixed, and keeps a declined row declined', async () => {
    const path = join(dir, 'fixed.csv');
    const journal = join(dir, 'fixed.db');
    const body = rows('fixed', 10);
    body[2] = 'fixed-2,pay,2026-12-01,102,eur,salary 2'; // line 4: the server wants upper-case currency
    body[5] = 'fixed-5,pay,2026-12-01,2000000,EUR,salary 5'; // line 7: declined by the rail (402)
    writeFileSync(path, `${[HEADER, ...body].join('\n')}\n`);
    const upload = async (name: string): Promise<UploadReport> => {
      const report = join(dir, name);
      await runCli(['upload', path, '--url', `${server.url}/v1/payments`, '--token', 'tok_fixed', '--journal', journal, '--report', report]);
      return JSON.parse(readFileSync(report, 'utf8')) as UploadReport;
    };
    const first = await upload('fixed-1.json');
    expect([first.executed, first.declined]).toEqual([8, 2]);
    expect(first.declinedRows.map((row) => [row.line, row.status])).toEqual([
      [4, 400],
      [7, 402],
    ]);

    body[2] = 'fixed-2,pay,2026-12-01,102,EUR,salary 2';
    body[5] = 'fixed-5,pay,2026-12-01,200000,EUR,salary 5';
    writeFileSync(path, `${[HEADER, ...body].join('\n')}\n`);
    const second = await upload('fixed-2.json');
    expect([second.executed, second.replayed, second.declined]).toEqual([1, 8, 1]);
    expect(second.declinedRows.map((row) => row.line)).toEqual([7]);
    expect(second.declinedRows[0]?.reason).toMatch(/change a key column/);
    expect(await ledgerCount(server, 'tok_fixed')).toBe(9);
  }, 60_000);
});
