/**
 * Where `post()`'s time goes, and an A/B of two versions of the client in one process.
 *
 * Against one local reference server, one operation at a time, interleaved one by one in an order
 * that rotates every operation so a noisy stretch of the (shared) machine hits every arm:
 * - `raw`    — a raw ky POST with a fresh key, its body read (as `bench/suites/client-latency.ts`)
 * - `head`   — `post()` of this tree's `src/`, SQLite journal
 * - `base`   — `post()` of another tree's `src/` (`--base /path/to/other/src`), when given
 * - `stages` — `post()` of this tree with the journal and fetch wrapped in timers: per-operation
 *              time in each journal call and in fetch; "client" is what is left (key, fingerprint,
 *              ky and p-retry wrapping, response handling)
 *
 * Each round's figure is the median of its operations; the report gives min / median / max over
 * rounds, and per-round ratios to `raw` (paired, so a drifting machine cancels out). It also gives
 * this process's CPU time per operation (the client's only: the server runs in another process),
 * which a loaded machine stretches far less than wall time.
 *
 * Usage: `npx tsx bench/clients/post-latency.ts [--base ../main/src] [--rounds 7] [--ops 300]`
 *
 * @module
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import ky from 'ky';
import { TSX, startServer } from '../lib/proc.js';
import { summarize } from '../lib/stats.js';
import type { Journal } from '../../src/journal/types.js';

const { values: args } = parseArgs({
  options: { base: { type: 'string' }, rounds: { type: 'string', default: '7' }, ops: { type: 'string', default: '300' } },
});
const rounds = Number(args.rounds);
const ops = Number(args.ops);

type Post = (path: string, options: { json: unknown }) => Promise<{ status: number }>;
interface Tree {
  createClient(options: Record<string, unknown>): { post: Post; close(): Promise<void> };
  sqliteJournal(options: { path: string }): Journal;
}
const load = async (src: string): Promise<Tree> => {
  const index = (await import(pathToFileURL(join(src, 'index.ts')).href)) as Pick<Tree, 'createClient'>;
  const sqlite = (await import(pathToFileURL(join(src, 'journal/sqlite.node.ts')).href)) as Pick<Tree, 'sqliteJournal'>;
  return { createClient: index.createClient, sqliteJournal: sqlite.sqliteJournal };
};

const dir = mkdtempSync(join(tmpdir(), 'oncely-bench-post-'));
const server = await startServer([...TSX, 'src/cli/main.ts', 'serve', '--port', '0', '--db', join(dir, 'server.db'), '--quiet']);
const headers = { authorization: 'Bearer test_acme' };
let n = 0;
const json = (): unknown => ({ amount: 100 + (n % 1000), currency: 'EUR', reference: `lat-${(n += 1)}` });

/** Time spent per stage in the current operation of the `stages` arm. */
const stage: Record<string, number> = {};
const add = (name: string, ms: number): void => void (stage[name] = (stage[name] ?? 0) + ms);
const timedJournal = (journal: Journal): Journal =>
  new Proxy(journal, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (typeof value !== 'function' || typeof prop !== 'string') return value;
      return async (...params: unknown[]) => {
        const started = performance.now();
        try {
          return await (value as (...p: unknown[]) => Promise<unknown>).apply(target, params);
        } finally {
          add(`journal.${prop}`, performance.now() - started);
        }
      };
    },
  });
const timedFetch = async (request: Request): Promise<Response> => {
  const started = performance.now();
  const response = await fetch(request);
  add('fetch (to headers)', performance.now() - started);
  return response;
};

const head = await load(resolve('src'));
const arms: Record<string, () => Promise<number>> = {};
const raw = ky.create({ prefixUrl: server.url, headers, retry: 0 });
const { newKey } = (await import('../../src/keys.js')) as { newKey: () => string };
arms['raw'] = async () => {
  const response = await raw.post('v1/payments', { json: json(), headers: { 'idempotency-key': newKey() } });
  await response.text();
  return response.status;
};
const clients: Array<{ close(): Promise<void> }> = [];
const oncelyArm = (tree: Tree, name: string, timed: boolean): void => {
  const journal = tree.sqliteJournal({ path: join(dir, `${name}.db`) });
  const client = tree.createClient({
    baseUrl: server.url,
    headers,
    journal: timed ? timedJournal(journal) : journal,
    ...(timed ? { fetch: timedFetch } : {}),
  });
  clients.push(client, journal);
  arms[name] = async () => (await client.post('v1/payments', { json: json() })).status;
};
oncelyArm(head, 'head', false);
if (args.base) oncelyArm(await load(resolve(args.base)), 'base', false);
oncelyArm(head, 'stages', true);

const names = Object.keys(arms);
const perRound: Record<string, number[]> = Object.fromEntries(names.map((name) => [name, []]));
const stageRounds: Record<string, number[]> = {};
/** This process's CPU (the client's: the server is another process) per arm, per round. */
const cpuRound: Record<string, number> = {};
const cpuRounds: Record<string, number[]> = Object.fromEntries(names.map((name) => [name, []]));
const once = async (name: string): Promise<number> => {
  const cpu = process.cpuUsage();
  const started = performance.now();
  const status = await arms[name]!();
  const elapsed = performance.now() - started;
  const used = process.cpuUsage(cpu);
  cpuRound[name] = (cpuRound[name] ?? 0) + (used.user + used.system) / 1000;
  if (status !== 201) throw new Error(`${name}: unexpected status ${status}`);
  return elapsed;
};

for (let i = 0; i < 50; i += 1) for (const name of names) await once(name); // JIT, pools, page cache
for (let r = 0; r < rounds; r += 1) {
  const samples: Record<string, number[]> = Object.fromEntries(names.map((name) => [name, []]));
  for (const name of names) cpuRound[name] = 0;
  const stageSamples: Record<string, number[]> = {};
  for (let i = 0; i < ops; i += 1) {
    for (let k = 0; k < names.length; k += 1) {
      const name = names[(i + k) % names.length]!;
      for (const key of Object.keys(stage)) delete stage[key];
      const elapsed = await once(name);
      samples[name]!.push(elapsed);
      if (name === 'stages') {
        const parts = Object.values(stage).reduce((a, b) => a + b, 0);
        for (const [key, ms] of [...Object.entries(stage), ['client (rest)', elapsed - parts] as const]) (stageSamples[key] ??= []).push(ms);
      }
    }
  }
  for (const name of names) perRound[name]!.push(summarize(samples[name]!).median);
  for (const name of names) cpuRounds[name]!.push(cpuRound[name]! / ops);
  for (const [key, values] of Object.entries(stageSamples)) (stageRounds[key] ??= []).push(summarize(values).median);
}
for (const client of clients) await client.close();
await server.stop();
rmSync(dir, { recursive: true, force: true });

const fmt = (value: number): string => value.toFixed(3).padStart(8);
console.log(`post() latency, ${rounds} rounds × ${ops} ops per arm, interleaved; ms per operation (round medians: min / median / max)`);
for (const name of names) {
  const s = summarize(perRound[name]!);
  const ratio = summarize(perRound[name]!.map((value, i) => value / perRound['raw']![i]!));
  console.log(
    `${name.padEnd(8)} ${fmt(s.min)} ${fmt(s.median)} ${fmt(s.max)}   ÷ raw: ${ratio.min.toFixed(3)} / ${ratio.median.toFixed(3)} / ${ratio.max.toFixed(3)}`,
  );
}
console.log('client process CPU per operation, ms (mean of a round; min / median / max over rounds); this counts the work, not the waiting:');
for (const name of names) {
  const s = summarize(cpuRounds[name]!);
  const extra = summarize(cpuRounds[name]!.map((value, i) => value - cpuRounds['raw']![i]!));
  console.log(
    `${name.padEnd(8)} ${fmt(s.min)} ${fmt(s.median)} ${fmt(s.max)}   − raw: ${extra.min.toFixed(3)} / ${extra.median.toFixed(3)} / ${extra.max.toFixed(3)}`,
  );
}
if (perRound['base']) {
  const ab = summarize(perRound['head']!.map((value, i) => value / perRound['base']![i]!));
  console.log(`head ÷ base: ${ab.min.toFixed(3)} / ${ab.median.toFixed(3)} / ${ab.max.toFixed(3)}`);
}
console.log('stages of post() (median per operation, ms; medians do not add up exactly):');
for (const [key, values] of Object.entries(stageRounds)) console.log(`  ${key.padEnd(22)} ${fmt(summarize(values).median)}`);
