import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { UploadReport } from '../../src/cli/upload-report.js';
import { ledgerCount, runCli, startCli, startServer, type TestServer } from './helpers/processes.js';

const HEADER = 'client_ref,operation,value_date,amount,currency,reference';

function payroll(rows: number, ref: string, malformed: ReadonlyMap<number, string> = new Map()): string {
  const lines = [HEADER];
  for (let i = 0; i < rows; i += 1) lines.push(malformed.get(i) ?? `${ref}-${i},pay,2026-12-01,${100 + i},EUR,salary ${i}`);
  return `${lines.join('\n')}\n`;
}

let dir: string;
let server: TestServer;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'oncely-upload-test-'));
  server = await startServer(join(dir, 'server.db'), ['mixed', 'badfile', 'dry', 'big', 'sigint', 'twice', 'stopped']);
});

afterAll(async () => {
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** Every test pays as a caller of its own, so a leftover process of one test never moves another's ledger. */
const upload = (caller: string, file: string, journal: string, ...extra: string[]) => [
  'upload',
  file,
  '--url',
  `${server.url}/v1/payments`,
  '--token',
  `tok_${caller}`,
  '--journal',
  journal,
  ...extra,
];
const ledger = (caller: string): Promise<number> => ledgerCount(server, `tok_${caller}`);

describe('oncely upload', () => {
  it('executes the 97 valid rows of a file with 3 malformed rows and reports those 3 with their line numbers', async () => {
    const file = join(dir, 'mixed.csv');
    const malformed = new Map([
      [9, 'mixed-9,pay,2026-12-01,12.50,EUR,salary 9'],
      [49, 'mixed-49,pay,2026-12-01,5,EUR'],
      [89, 'mixed-89,,2026-12-01,5,EUR,salary 89'],
    ]);
    writeFileSync(file, payroll(100, 'mixed', malformed));
    const report = join(dir, 'mixed.json');
    const run = await runCli(upload('mixed', file, join(dir, 'mixed.db'), '--report', report));
    expect(run.code).toBe(0);
    const json = JSON.parse(readFileSync(report, 'utf8')) as UploadReport;
    expect([json.rows, json.executed, json.invalid, json.pending, json.declined]).toEqual([100, 97, 3, 0, 0]);
    // Data row i is on line i + 2 (line 1 is the header).
    expect(json.invalidRows.map((row) => row.line)).toEqual([11, 51, 91]);
    expect(json.invalidRows.map((row) => row.reason)).toEqual([
      expect.stringMatching(/amount "12.50" is not an integer/),
      expect.stringMatching(/5 fields where the header has 6/),
      expect.stringMatching(/key column operation is empty/),
    ]);
    expect(run.stdout).toMatch(/line 51: 5 fields/);
    expect(await ledger('mixed')).toBe(97);
  });

  it('sends nothing for a file that is not UTF-8, or has no header, and says why', async () => {
    const latin1 = join(dir, 'latin1.csv');
    writeFileSync(latin1, Buffer.concat([Buffer.from(payroll(5, 'latin')), Buffer.from([0x4a, 0x6f, 0x73, 0xe9, 0x0a])]));
    const bad = await runCli(upload('badfile', latin1, join(dir, 'latin1.db')));
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/not valid UTF-8 \(line 7\).*\n.*nothing was sent/);

    const headless = join(dir, 'headless.csv');
    writeFileSync(headless, payroll(5, 'headless').split('\n').slice(1).join('\n'));
    const noHeader = await runCli(upload('badfile', headless, join(dir, 'headless.db')));
    expect(noHeader.code).toBe(1);
    expect(noHeader.stderr).toMatch(/first line must be a header naming the columns "client_ref", "operation", "value_date"/);
    expect(await ledger('badfile')).toBe(0);
  });

  it('sends and journals nothing on --dry-run, and still reports the invalid rows', async () => {
    const file = join(dir, 'dry.csv');
    writeFileSync(file, payroll(20, 'dry', new Map([[3, 'dry-3,pay,2026-12-01,x,EUR,salary']])));
    const run = await runCli(['upload', file, '--dry-run']);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/valid\s+19[\s\S]*invalid\s+1[\s\S]*line 5: amount "x"/);
    expect(await ledger('dry')).toBe(0);
  });

  it('posts exactly 10 000 ledger entries for 10 000 rows when the uploader is SIGKILLed at a random point and run again', async () => {
    const file = join(dir, 'big.csv');
    writeFileSync(file, payroll(10_000, 'big'));
    const journal = join(dir, 'big.db');
    const killAfter = 1_000 + Math.floor(Math.random() * 6_000);

    const first = startCli(upload('big', file, journal, '--concurrency', '16'));
    await new Promise<void>((resolve) => {
      const timer = setInterval(() => {
        void ledger('big').then((count) => {
          if (count >= killAfter || first.child.exitCode !== null) {
            clearInterval(timer);
            first.child.kill('SIGKILL');
            resolve();
          }
        });
      }, 50);
    });
    const killed = await first.done;
    expect(killed.signal).toBe('SIGKILL');
    const partial = await ledger('big');
    expect(partial).toBeGreaterThan(0);
    expect(partial).toBeLessThan(10_000);

    const second = await runCli(upload('big', file, journal, '--concurrency', '16', '--report', join(dir, 'big.json')));
    expect(second.code, `${second.stdout}\n${second.stderr.slice(-3000)}`).toBe(0);
    const report = JSON.parse(readFileSync(join(dir, 'big.json'), 'utf8')) as UploadReport;
    expect(report.executed + report.replayed).toBe(10_000);
    expect(report.pending).toBe(0);
    expect(await ledger('big')).toBe(10_000);

    // A finished file, resubmitted: every row is a replay and the ledger does not move.
    const again = await runCli(upload('big', file, journal, '--report', join(dir, 'again.json')));
    expect(again.code, `${again.stdout}\n${again.stderr.slice(-3000)}`).toBe(0);
    const replay = JSON.parse(readFileSync(join(dir, 'again.json'), 'utf8')) as UploadReport;
    expect([replay.replayed, replay.executed]).toEqual([10_000, 0]);
    expect(await ledger('big')).toBe(10_000);
  }, 600_000);

  it('stops cleanly on Ctrl-C (exit 130, a report, nothing lost) and finishes the file when run again', async () => {
    const file = join(dir, 'interrupted.csv');
    writeFileSync(file, payroll(1_000, 'sigint'));
    const journal = join(dir, 'interrupted.db');
    const first = startCli(upload('sigint', file, journal, '--report', join(dir, 'interrupted.json')));
    await new Promise<void>((resolve) => {
      const timer = setInterval(() => {
        void ledger('sigint').then((count) => {
          if (count >= 100 || first.child.exitCode !== null) {
            clearInterval(timer);
            first.child.kill('SIGINT');
            resolve();
          }
        });
      }, 50);
    });
    const stopped = await first.done;
    expect(stopped.code).toBe(130);
    expect(stopped.stderr).toMatch(/stopping: .*run the same command again to resume/);
    const report = JSON.parse(readFileSync(join(dir, 'interrupted.json'), 'utf8')) as UploadReport;
    expect(report.interrupted).toBe(true);
    expect(report.executed).toBeLessThan(1_000);

    const second = await runCli(upload('sigint', file, journal));
    expect(second.code, second.stderr).toBe(0);
    expect(await ledger('sigint')).toBe(1_000);
  }, 180_000);

  it("ends --dry-run's progress at 100 % without a terminal", async () => {
    const file = join(dir, 'dry-big.csv');
    writeFileSync(file, payroll(2_000, 'drybig', new Map([[1_999, 'drybig-1999,pay,2026-12-01,x,EUR,salary']])));
    const run = await runCli(['upload', file, '--dry-run']);
    expect(run.code).toBe(0);
    const lines = run.stderr.split('\n').filter((line) => line.startsWith('progress:'));
    expect(lines.at(-1)).toMatch(/^progress: 100% 2000\/2000 rows /);
  });

  it("after Ctrl-C, reports figures that add up to the file's rows, a pending count `oncely pending` agrees with, and a rate of the rows it sent", async () => {
    const file = join(dir, 'stopped.csv');
    writeFileSync(file, payroll(1_000, 'stopped'));
    const journal = join(dir, 'stopped.db');
    const reportFile = join(dir, 'stopped.json');
    const first = startCli(upload('stopped', file, journal, '--concurrency', '2', '--report', reportFile));
    await new Promise<void>((resolve) => {
      const timer = setInterval(() => {
        void ledger('stopped').then((count) => {
          if (count >= 50 || first.child.exitCode !== null) {
            clearInterval(timer);
            first.child.kill('SIGINT');
            resolve();
          }
        });
      }, 50);
    });
    expect((await first.done).code).toBe(130);
    const report = JSON.parse(readFileSync(reportFile, 'utf8')) as UploadReport;
    expect(report.executed).toBeLessThan(1_000);
    // Every row in exactly one figure; the batch journaled but never sent is pending, not missing.
    expect(report.executed + report.replayed + report.declined + report.pending + report.unread + report.invalid).toBe(1_000);
    expect(report.unsent).toBeGreaterThan(0);
    const pending = await runCli(['pending', '--journal', journal, '--url', server.url, '--json']);
    expect((JSON.parse(pending.stdout) as unknown[]).length).toBe(report.pending);
    // The rate counts the rows this run sent, not the file's rows.
    expect(report.sent).toBe(
      report.executed +
        report.replayed +
        report.declined +
        report.pending -
        report.unsent -
        report.pendingRows.filter((row) => /Ctrl-C/.test(row.reason)).length,
    );
    expect(report.rowsPerSecond).toBe(Math.round((report.sent * 1000) / report.elapsedMs));
    expect(report.pendingRows.filter((row) => /aborted by the caller/.test(row.reason))).toEqual([]);

    const second = await runCli(upload('stopped', file, journal));
    expect(second.code, second.stderr).toBe(0);
    expect(await ledger('stopped')).toBe(1_000);
  }, 180_000);

  it('stops early with exit 1 and every sent row pending when nothing answers at the URL', async () => {
    const port = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const { port: free } = probe.address() as { port: number };
        probe.close(() => resolve(free));
      });
    });
    const file = join(dir, 'unreachable.csv');
    writeFileSync(file, payroll(200, 'unreachable'));
    const report = join(dir, 'unreachable.json');
    const run = await runCli([
      'upload',
      file,
      '--url',
      `http://127.0.0.1:${port}/v1/payments`,
      '--token',
      'test_acme',
      '--journal',
      join(dir, 'unreachable.db'),
      '--report',
      report,
    ]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/stopping: 16 rows in a row got no final outcome/);
    const json = JSON.parse(readFileSync(report, 'utf8')) as UploadReport;
    expect(json.stopReason).toBe('unreachable');
    expect(json.executed + json.replayed + json.declined).toBe(0);
    // Sent: at least the 16 in a row that got no final outcome, and not the whole file.
    expect(json.pending - json.unsent).toBeGreaterThanOrEqual(16);
    expect(json.pending - json.unsent).toBeLessThan(200);
    // The rest of the batch was journaled but never sent: pending too, as `oncely pending` lists it.
    expect(json.pending).toBe(200);
  }, 120_000);

  it('replays every row from the server when a finished file is resubmitted from another machine (a fresh journal)', async () => {
    const file = join(dir, 'twice.csv');
    writeFileSync(file, payroll(50, 'twice'));
    expect((await runCli(upload('twice', file, join(dir, 'twice-a.db')))).code).toBe(0);
    const second = await runCli(upload('twice', file, join(dir, 'twice-b.db'), '--report', join(dir, 'twice.json')));
    expect(second.code).toBe(0);
    const report = JSON.parse(readFileSync(join(dir, 'twice.json'), 'utf8')) as UploadReport;
    expect([report.replayed, report.executed]).toEqual([50, 0]);
    expect(await ledger('twice')).toBe(50);
  });
});
