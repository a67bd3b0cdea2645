import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { UploadReport } from '../../src/cli/upload-report.js';
import { NODE_ARGS, ledgerCount, runCli, startServer, type RunResult, type TestServer } from './helpers/processes.js';

const PAYROLL = fileURLToPath(new URL('../../examples/batch-upload/payroll.csv', import.meta.url));
const SETTLE = fileURLToPath(new URL('../../examples/node-backend/settle-payment.ts', import.meta.url));

let dir: string;
let server: TestServer;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'oncely-examples-'));
  server = await startServer(join(dir, 'server.db'));
});

afterAll(async () => {
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
});

function runSettle(journal: string, ids: readonly string[]): Promise<RunResult> {
  const child = spawn(process.execPath, [...NODE_ARGS, SETTLE, ...ids], {
    env: { ...process.env, ONCELY_URL: server.url, ONCELY_TOKEN: 'test_acme', ONCELY_JOURNAL: journal },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve) => child.once('close', (code, signal) => resolve({ code, signal, stdout, stderr })));
}

describe('examples/batch-upload', () => {
  it('uploads the sample payroll: 22 executed, the over-limit salary declined, the malformed amount reported on line 8', async () => {
    const before = await ledgerCount(server);
    const args = ['upload', PAYROLL, '--url', `${server.url}/v1/payments`, '--token', 'test_acme', '--journal', join(dir, 'payroll.db')];
    const first = await runCli([...args, '--report', join(dir, 'first.json')]);
    expect(first.code, first.stderr).toBe(0);
    const report = JSON.parse(readFileSync(join(dir, 'first.json'), 'utf8')) as UploadReport;
    expect([report.rows, report.executed, report.declined, report.invalid]).toEqual([24, 22, 1, 1]);
    expect(report.invalidRows).toEqual([{ line: 8, reason: 'amount "3,125.00" is not an integer (minor units)' }]);
    expect(report.declinedRows.map((row) => [row.line, row.status])).toEqual([[19, 402]]);
    expect((await ledgerCount(server)) - before).toBe(22);

    const again = await runCli([...args, '--report', join(dir, 'again.json')]);
    expect(again.code).toBe(0);
    const replay = JSON.parse(readFileSync(join(dir, 'again.json'), 'utf8')) as UploadReport;
    expect([replay.executed, replay.replayed, replay.declined]).toEqual([0, 22, 1]);
    expect((await ledgerCount(server)) - before).toBe(22);
  });
});

describe('examples/node-backend', () => {
  it('pays each step of a settlement once, even when the whole job runs again with a fresh journal', async () => {
    const before = await ledgerCount(server);
    const ids = ['pay_1001', 'pay_1002'];
    const first = await runSettle(join(dir, 'settle-a.db'), ids);
    expect(first.code, first.stderr).toBe(0);
    const steps = first.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { step: string; status: number; replayed: boolean });
    expect(steps.map((s) => [s.step, s.status, s.replayed])).toEqual([
      ['principal', 201, false],
      ['fee', 201, false],
      ['principal', 201, false],
      ['fee', 201, false],
    ]);

    const second = await runSettle(join(dir, 'settle-b.db'), ids);
    expect(second.code, second.stderr).toBe(0);
    const replays = second.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { replayed: boolean });
    expect(replays.map((s) => s.replayed)).toEqual([true, true, true, true]);
    expect((await ledgerCount(server)) - before).toBe(4);
  });
});
