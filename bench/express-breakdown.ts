/**
 * Where the gap between unguarded Express and `oncely/express` goes, per request, on the real
 * HTTP path: CPU in Node (user, system, GC pauses), the server-side wall time split by stage
 * (`express.json()`, the guard's admission, the handler, `res.json` with the response capture,
 * the wait from the handler's `end` to the response leaving: the store's commit), the key store's
 * calls and how long each waits (group commit included), SQLite commits, event-loop utilisation
 * and delay. The three arms live in one server process (`express-breakdown-server.ts`) and are
 * loaded one at a time by autocannon (its own process, 10 connections), alternating round by
 * round; ratios are per round, so they hold on a machine other work shares.
 *
 * Usage: `npx tsx bench/express-breakdown.ts [rounds = 3] [seconds = 4] [--arms a,b] [--prof DIR]`
 * (`--arms`: only these of unguarded, oncely, oncely-tx; `--prof`: a V8 CPU profile of the
 * server's main thread, summarised by package at the end — with one arm, that arm's CPU).
 *
 * @module
 */
import { spawn } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { bundled } from './lib/bundle.js';
import { runLoad, type LoadResult } from './lib/load.js';
import { payBody } from './peers/scenarios.js';
import { summarizeProfile } from './lib/cpu-profile.js';

const args = process.argv.slice(2);
const profAt = args.indexOf('--prof');
const profDir = profAt >= 0 ? args.splice(profAt, 2)[1] : undefined;
const armsAt = args.indexOf('--arms');
const only = armsAt >= 0 ? args.splice(armsAt, 2)[1]!.split(',') : undefined;
const rounds = Number(args[0] ?? 3);
const seconds = Number(args[1] ?? 4);
const CONNECTIONS = 10;
const ALL_ARMS = ['unguarded', 'oncely', 'oncely-tx'] as const;
type Arm = (typeof ALL_ARMS)[number];
const ARMS: readonly Arm[] = ALL_ARMS.filter((arm) => only === undefined || only.includes(arm));
if (ARMS.length === 0) throw new Error(`--arms ${only?.join(',')}: none of ${ALL_ARMS.join(', ')}`);

interface Stats {
  requests: number;
  cpuUserUs: number;
  cpuSystemUs: number;
  gcUs: number;
  elu: number;
  loopDelayMeanMs: number;
  loopDelayP99Ms: number;
  stagesUs: Record<string, number>;
  store: Record<string, { perRequest: number; waitUs: number }>;
  commitsPerRequest: number;
}

const argv = await bundled('bench/express-breakdown-server.ts');
const profile = profDir ? ['--cpu-prof', '--cpu-prof-interval=200', `--cpu-prof-dir=${profDir}`] : [];
const child = spawn(argv[0]!, [...profile, ...argv.slice(1)], { stdio: ['ignore', 'pipe', 'inherit'] });
const control = await new Promise<string>((resolve, reject) => {
  child.on('exit', (code) => reject(new Error(`express-breakdown-server exited with ${code}`)));
  child.stdout!.on('data', (chunk: Buffer) => {
    const match = /listening on (\S+)/.exec(chunk.toString());
    if (match) resolve(match[1]!);
  });
});
const call = async <T>(path: string): Promise<T> => (await (await fetch(`${control}${path}`)).json()) as T;
const urls = await call<Record<Arm, string>>('/arms');
const body = payBody('breakdown');
const load = (arm: Arm, durationSec: number): Promise<LoadResult> =>
  runLoad({
    url: `${urls[arm]}/pay`,
    method: 'POST',
    body,
    keyMode: 'fresh',
    headers: { authorization: 'Bearer bench' },
    connections: CONNECTIONS,
    durationSec,
  });

for (const arm of ARMS) await load(arm, 1); // warm-up: JIT, prepared statements, the first pages
const runs: Record<Arm, Array<{ load: LoadResult; stats: Stats }>> = { unguarded: [], oncely: [], 'oncely-tx': [] };
for (let round = 0; round < rounds; round += 1) {
  // Rotate the order each round, so no arm always follows the same one.
  for (let i = 0; i < ARMS.length; i += 1) {
    const arm = ARMS[(round + i) % ARMS.length]!;
    await call('/reset');
    const result = await load(arm, seconds);
    runs[arm].push({ load: result, stats: await call<Stats>('/stats') });
  }
}
child.kill('SIGTERM');
await new Promise((resolve) => child.on('exit', resolve));

const median = (values: readonly number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};
const med = (arm: Arm, pick: (r: { load: LoadResult; stats: Stats }) => number): number => median(runs[arm].map(pick));
const perRound = (arm: Arm, pick: (r: { load: LoadResult; stats: Stats }) => number): number =>
  runs.unguarded.length && runs[arm].length ? median(runs[arm].map((r, i) => pick(r) - pick(runs.unguarded[i]!))) : Number.NaN;
const f = (v: number, digits = 0): string => (Number.isFinite(v) ? v.toFixed(digits) : '—');

type Pick = (r: { load: LoadResult; stats: Stats }) => number;
const rows: Array<[string, Pick, number?]> = [
  ['req/s', (r) => r.load.rps],
  ['µs per request (1e6 ÷ req/s: the throughput cost)', (r) => 1e6 / r.load.rps],
  ['client latency p50 ms', (r) => r.load.p50, 2],
  ['  Node CPU µs/request (user + system)', (r) => r.stats.cpuUserUs + r.stats.cpuSystemUs],
  ['    of which system', (r) => r.stats.cpuSystemUs],
  ['    of which GC pauses', (r) => r.stats.gcUs],
  ['  idle µs/request (throughput cost − CPU)', (r) => 1e6 / r.load.rps - r.stats.cpuUserUs - r.stats.cpuSystemUs],
  ['event-loop utilisation', (r) => r.stats.elu, 2],
  ['event-loop delay mean ms', (r) => r.stats.loopDelayMeanMs, 2],
  ['server wall µs: express.json()', (r) => r.stats.stagesUs['bodyParse']!],
  ['server wall µs: guard admission (decide)', (r) => r.stats.stagesUs['guardDecide']!],
  ['server wall µs: handler (charge)', (r) => r.stats.stagesUs['handler']!],
  ['server wall µs: res.json (+ capture)', (r) => r.stats.stagesUs['resJson']!],
  ['server wall µs: end → response sent (store commit)', (r) => r.stats.stagesUs['afterEnd']!],
  ['server wall µs: arrival → response sent', (r) => r.stats.stagesUs['total']!],
  ['SQLite commits per request', (r) => r.stats.commitsPerRequest, 2],
];
const storeMethods = [...new Set(ARMS.flatMap((arm) => runs[arm].flatMap((r) => Object.keys(r.stats.store))))];
for (const m of storeMethods) {
  rows.push([`store.${m}: calls/request`, (r) => r.stats.store[m]?.perRequest ?? 0, 2]);
  rows.push([`store.${m}: wait µs per call`, (r) => r.stats.store[m]?.waitUs ?? Number.NaN]);
}

const line = (cells: readonly string[]): string => `| ${cells.join(' | ')} |`;
console.log(
  `express-breakdown: ${rounds} rounds × ${seconds} s per arm, ${CONNECTIONS} connections, arms alternated; medians over rounds; "Δ" columns: per-round difference to unguarded, median.\n`,
);
console.log(line(['per request', ...ARMS, 'Δ oncely', 'Δ oncely-tx']));
console.log(line(['---', ...ARMS.map(() => '---:'), '---:', '---:']));
for (const [label, pick, digits] of rows) {
  console.log(line([label, ...ARMS.map((arm) => f(med(arm, pick), digits)), f(perRound('oncely', pick), digits), f(perRound('oncely-tx', pick), digits)]));
}
const ratio = (arm: Arm): number =>
  runs.unguarded.length && runs[arm].length ? median(runs[arm].map((r, i) => r.load.rps / runs.unguarded[i]!.load.rps)) : Number.NaN;
console.log(`\nreq/s ÷ unguarded, per round, median: oncely ${ratio('oncely').toFixed(2)}×, oncely-tx ${ratio('oncely-tx').toFixed(2)}×`);
const bad = ARMS.flatMap((arm) => runs[arm].map((r) => r.load.errors + r.load.non2xx)).reduce((a, b) => a + b, 0);
if (bad) console.log(`WARNING: ${bad} errors or non-2xx answers`);

if (profDir) {
  // The main thread's profile: CPU.<date>.<time>.<pid>.<thread 0>.<seq>.cpuprofile (workers have their own).
  const file = readdirSync(profDir).find((n) => n.includes(`.${child.pid}.0.`) && n.endsWith('.cpuprofile'));
  if (file)
    console.log(
      `\nCPU profile ${join(profDir, file)} (${ARMS.join(', ')}; main thread), self time by package:\n${summarizeProfile(JSON.parse(readFileSync(join(profDir, file), 'utf8')))}`,
    );
}
