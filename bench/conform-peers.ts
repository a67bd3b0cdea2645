/**
 * `oncely conform` against the server peers of the benchmarks, each wired as in `bench/peers/`
 * guarding the same payment handler, and against `oncely serve` for reference. Correctness, not
 * timing, and not part of `npm run bench`'s results: it prints a Markdown table (check × peer)
 * and each failure's details, and writes `bench/results/conformance.json`.
 *
 * Run: `node --import tsx bench/conform-peers.ts` (Redis on 127.0.0.1:6379 for the Redis peers;
 * a peer that cannot start gets a row saying why).
 *
 * Every peer gets the same arguments: the payment body, two callers (bearer tokens), the
 * `x-bench-fault` header that makes the handler answer 503, and a `hold…` reference that keeps
 * the handler busy for 400 ms; every payment takes 50 ms, so the burst meets one in flight.
 *
 * @module
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ConformReport } from '../src/cli/conform-report.js';
import { ROOT, TSX, startServer, type ServerProcess } from './lib/proc.js';
import { discard, freshState, startPeer } from './peers/scenarios.js';
import type { PeerName } from './peers/serve.js';

const BODY = '{"amount":1250,"currency":"EUR","reference":"{{unique}}"}';
const SLOW_BODY = '{"amount":1250,"currency":"EUR","reference":"hold-{{unique}}"}';

const PEERS: ReadonlyArray<{ readonly name: PeerName | 'oncely-serve'; readonly label: string }> = [
  { name: 'oncely-serve', label: 'oncely serve (SQLite)' },
  { name: 'node-idempotency-memory', label: '@node-idempotency/core + memory' },
  { name: 'node-idempotency-redis', label: '@node-idempotency/core + Redis' },
  { name: 'express-idempotency', label: 'express-idempotency' },
  { name: 'powertools-redis', label: 'Powertools + Redis (payload validation on)' },
  { name: 'powertools-redis-unvalidated', label: 'Powertools + Redis (no payload validation)' },
];

/** Runs the CLI to its end; conform exits 1 when a check fails, which is a result here, not an error. */
function conformJson(args: readonly string[]): Promise<ConformReport> {
  return new Promise((resolve, reject) => {
    const child = spawn(TSX[0], [...TSX.slice(1), 'src/cli/main.ts', 'conform', ...args, '--json'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('close', (code) => {
      try {
        resolve(JSON.parse(stdout) as ConformReport);
      } catch {
        reject(new Error(`oncely conform exited ${String(code)}: ${stderr.trim() || stdout.trim()}`));
      }
    });
  });
}

async function start(name: PeerName | 'oncely-serve'): Promise<{ server: ServerProcess; url: string; args: string[]; done(): void }> {
  if (name === 'oncely-serve') {
    const state = freshState();
    // The rail slowed for every payment: serve has no per-request slow path, so --slow-body is the body.
    const server = await startServer([...TSX, 'src/cli/main.ts', 'serve', '--port', '0', '--db', state.oncelyDb, '--faults', 'slow:ext2:300', '--quiet']);
    return { server, url: `${server.url}/v1/payments`, args: ['--slow-body', BODY], done: () => discard(state) };
  }
  const server = await startPeer(name, { workMs: 50, holdMs: 400 });
  return { server, url: `${server.url}/pay`, args: ['--slow-body', SLOW_BODY, '--fault-header', 'x-bench-fault: 1'], done: () => discard(server.state) };
}

const reports: Array<{ readonly label: string; readonly report?: ConformReport; readonly error?: string }> = [];
for (const { name, label } of PEERS) {
  try {
    const { server, url, args, done } = await start(name);
    try {
      const token = name === 'oncely-serve' ? ['--token', 'test_acme', '--token-b', 'test_globex'] : ['--token', 'bench', '--token-b', 'bench-b'];
      reports.push({ label, report: await conformJson([url, '--body', BODY, ...token, ...args]) });
      console.error(`conform: ${label} done`);
    } finally {
      await server.stop();
      done();
    }
  } catch (error) {
    // A peer that cannot start (no Redis) costs its own row only.
    reports.push({ label, error: (error as Error).message.split('\n')[0] ?? String(error) });
    console.error(`conform: ${label} failed: ${(error as Error).message}`);
  }
}

const first = reports.find((entry) => entry.report !== undefined)?.report;
const cell = (report: ConformReport | undefined, id: string): string => {
  const check = report?.checks.find((c) => c.id === id);
  return check === undefined ? '—' : check.verdict === 'pass' ? 'pass' : check.verdict === 'fail' ? '**FAIL**' : 'n/a';
};
const lines = [
  `| check | ${reports.map((entry) => entry.label).join(' | ')} |`,
  `|---|${reports.map(() => '---').join('|')}|`,
  ...(first?.checks ?? []).map((check) => `| ${check.title} | ${reports.map((entry) => cell(entry.report, check.id)).join(' | ')} |`),
  `| **failed** | ${reports.map((entry) => (entry.report ? String(entry.report.failed) : `not run: ${entry.error}`)).join(' | ')} |`,
  '',
];
for (const { label, report } of reports) {
  const failures = report?.checks.filter((check) => check.verdict === 'fail') ?? [];
  if (failures.length === 0) continue;
  lines.push(`**${label}**`, '', ...failures.map((check) => `- ${check.title}: ${check.observed}`), '');
}
console.log(lines.join('\n'));
writeFileSync(join(ROOT, 'bench/results/conformance.json'), `${JSON.stringify({ measuredAt: new Date().toISOString(), reports }, null, 2)}\n`);
