/**
 * Benchmark: `oncely upload` rows/s against a local reference server (SQLite) at several
 * concurrencies, and the uploader's peak RSS; plus the peak RSS of a `--dry-run` over a
 * 1 000 000-row file, which shows that reading and keying a file keeps memory flat.
 *
 * ```sh
 * npx tsx bench/upload.ts                      # 100 000 rows at concurrency 1, 8, 32
 * npx tsx bench/upload.ts --rows 5000 --concurrency 1,8,32 --dry-rows 1000000
 * npx tsx bench/upload.ts --rows 0 --dry-rows 100000   # memory of the dry run alone
 * ```
 *
 * Each run is a real uploader process with a fresh journal and its own key namespace (so every
 * row executes), against one `oncely serve` process. Peak RSS is the kernel's VmHWM of the
 * uploader process, read from /proc while it runs (Linux).
 *
 * @module
 */
import { spawn } from 'node:child_process';
import { createWriteStream, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { v4 as uuidv4 } from 'uuid';

const MAIN = fileURLToPath(new URL('../src/cli/main.ts', import.meta.url));
const NODE = [process.execPath, '--import', 'tsx', MAIN] as const;

const { values } = parseArgs({
  options: {
    rows: { type: 'string', default: '100000' },
    concurrency: { type: 'string', default: '1,8,32' },
    'dry-rows': { type: 'string', default: '1000000' },
  },
});
const rows = Number(values.rows);
const concurrencies = values.concurrency.split(',').map(Number);
const dryRows = Number(values['dry-rows']);

async function writeCsv(path: string, count: number): Promise<void> {
  const out = createWriteStream(path);
  const write = (text: string): Promise<void> => new Promise((resolve) => (out.write(text) ? resolve() : out.once('drain', () => resolve())));
  await write('client_ref,operation,value_date,amount,currency,reference\n');
  let chunk = '';
  for (let i = 0; i < count; i += 1) {
    chunk += `bench-${i},pay,2026-12-01,${100 + (i % 900_000)},EUR,salary ${i}\n`;
    if (chunk.length > 1 << 16) {
      await write(chunk);
      chunk = '';
    }
  }
  await write(chunk);
  await new Promise<void>((resolve) => out.end(() => resolve()));
}

function peakRssKb(pid: number): number {
  try {
    const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) : 0;
  } catch {
    return 0; // the process has just exited
  }
}

/** Runs `oncely <args>`, sampling its peak RSS until it exits. */
async function measured(args: readonly string[]): Promise<{ code: number | null; wallMs: number; peakMb: number }> {
  const started = Date.now();
  const child = spawn(NODE[0], [...NODE.slice(1), ...args], { stdio: ['ignore', 'ignore', 'inherit'] });
  let peak = 0;
  const timer = setInterval(() => {
    peak = Math.max(peak, peakRssKb(child.pid ?? 0));
  }, 100);
  const code = await new Promise<number | null>((resolve) => child.once('exit', (exitCode) => resolve(exitCode)));
  clearInterval(timer);
  return { code, wallMs: Date.now() - started, peakMb: Math.round(peak / 1024) };
}

async function startServer(db: string): Promise<{ url: string; stop: () => void }> {
  const child = spawn(NODE[0], [...NODE.slice(1), 'serve', '--port', '0', '--db', db, '--quiet'], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, ONCELY_FAULTS: '' },
  });
  const url = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout }).on('line', (line) => {
      const match = /^oncely listening on (\S+)/.exec(line);
      if (match) resolve(match[1] as string);
    });
    child.once('exit', (code) => reject(new Error(`oncely serve exited with ${code}`)));
  });
  return { url, stop: () => child.kill('SIGTERM') };
}

const dir = mkdtempSync(join(tmpdir(), 'oncely-bench-upload-'));
try {
  const file = join(dir, 'rows.csv');
  await writeCsv(file, rows);
  const server = await startServer(join(dir, 'server.db'));
  const results: Array<Record<string, number | string>> = [];
  try {
    for (const concurrency of rows > 0 ? concurrencies : []) {
      const report = join(dir, `report-${concurrency}.json`);
      const run = await measured([
        'upload',
        file,
        '--url',
        `${server.url}/v1/payments`,
        '--token',
        'test_acme',
        '--journal',
        join(dir, `journal-${concurrency}.db`),
        '--concurrency',
        String(concurrency),
        '--namespace',
        uuidv4(),
        '--report',
        report,
      ]);
      const parsed = JSON.parse(readFileSync(report, 'utf8')) as { executed: number; rowsPerSecond: number };
      results.push({
        run: `upload c=${concurrency}`,
        rows,
        executed: parsed.executed,
        'rows/s': parsed.rowsPerSecond,
        'peak RSS MB': run.peakMb,
        exit: String(run.code),
      });
    }
  } finally {
    server.stop();
  }
  if (dryRows > 0) {
    const big = join(dir, 'dry.csv');
    await writeCsv(big, dryRows);
    const run = await measured(['upload', big, '--dry-run']);
    results.push({
      run: 'dry-run',
      rows: dryRows,
      executed: 0,
      'rows/s': Math.round((dryRows * 1000) / run.wallMs),
      'peak RSS MB': run.peakMb,
      exit: String(run.code),
    });
  }
  console.table(results);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
