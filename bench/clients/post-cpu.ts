/**
 * The client's own CPU per `post()`, without a network: ky's `fetch` answers from memory, so what
 * is left is the client's work. Arms, alternated in rotating order:
 * - `raw`            — a raw ky POST with a fresh key, its body read
 * - `oncely memory`  — `post()` with `memoryJournal()`: the client's work without the journal's
 * - `oncely sqlite`  — `post()` with the SQLite journal (process durability): the whole client
 *
 * Usage: `npx tsx bench/clients/post-cpu.ts [--rounds 9] [--ops 2000] [--only 'oncely memory'] [--src ../main/src]`
 * (run it with `node --import tsx --cpu-prof` to see inside an arm).
 *
 * @module
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import ky from 'ky';
import { join as joinPath, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { summarize } from '../lib/stats.js';
import type * as Index from '../../src/index.js';
import type * as Memory from '../../src/journal/memory.js';
import type * as Sqlite from '../../src/journal/sqlite.node.js';
import type * as Keys from '../../src/keys.js';

const { values: args } = parseArgs({
  options: {
    rounds: { type: 'string', default: '9' },
    ops: { type: 'string', default: '2000' },
    only: { type: 'string' },
    src: { type: 'string', default: 'src' },
  },
});
// `--src ../other/src` measures another tree's client (for an A/B, run both in turn).
const from = async <T>(file: string): Promise<T> => (await import(pathToFileURL(joinPath(resolve(args.src), file)).href)) as T;
const { createClient } = await from<typeof Index>('index.ts');
const { memoryJournal } = await from<typeof Memory>('journal/memory.ts');
const { sqliteJournal } = await from<typeof Sqlite>('journal/sqlite.node.ts');
const { newKey } = await from<typeof Keys>('keys.ts');
const rounds = Number(args.rounds);
const ops = Number(args.ops);
const baseUrl = 'http://127.0.0.1:8787';
const headers = { authorization: 'Bearer test_acme' };
const answer = async (): Promise<Response> =>
  new Response('{"id":"pay_1","status":"succeeded","amount":100,"currency":"EUR"}', { status: 201, headers: { 'content-type': 'application/json' } });
let n = 0;
const json = (): unknown => ({ amount: 100 + (n % 1000), currency: 'EUR', reference: `cpu-${(n += 1)}` });

const dir = mkdtempSync(join(tmpdir(), 'oncely-bench-post-cpu-'));
const raw = ky.create({ prefixUrl: baseUrl, headers, retry: 0, fetch: answer });
const memory = createClient({ baseUrl, headers, journal: memoryJournal(), fetch: answer });
const sqlite = createClient({ baseUrl, headers, journal: sqliteJournal({ path: join(dir, 'j.db') }), fetch: answer });
const arms: Record<string, () => Promise<unknown>> = {
  raw: async () => (await raw.post('v1/payments', { json: json(), headers: { 'idempotency-key': newKey() } })).text(),
  'oncely memory': () => memory.post('v1/payments', { json: json() }),
  'oncely sqlite': () => sqlite.post('v1/payments', { json: json() }),
};
// `--only 'oncely memory'` runs one arm (with raw, the reference), for a profile of it alone.
const names = Object.keys(arms).filter((name) => args.only === undefined || name === 'raw' || name === args.only);
const cpu: Record<string, number[]> = Object.fromEntries(names.map((name) => [name, []]));
const batch = async (name: string, count: number): Promise<number> => {
  const before = process.cpuUsage();
  for (let i = 0; i < count; i += 1) await arms[name]!();
  const used = process.cpuUsage(before);
  return (used.user + used.system) / count;
};
for (const name of names) await batch(name, 500);
for (let r = 0; r < rounds; r += 1) {
  for (let k = 0; k < names.length; k += 1) {
    const name = names[(r + k) % names.length]!;
    cpu[name]!.push(await batch(name, ops));
  }
}
await memory.close();
await sqlite.close();
rmSync(dir, { recursive: true, force: true });
console.log(`client CPU per operation, no network, µs (${rounds} rounds × ${ops} ops; min / median / max; − raw paired by round)`);
for (const name of names) {
  const s = summarize(cpu[name]!);
  const extra = summarize(cpu[name]!.map((value, i) => value - cpu['raw']![i]!));
  console.log(
    `${name.padEnd(14)} ${s.min.toFixed(1).padStart(7)} ${s.median.toFixed(1).padStart(7)} ${s.max.toFixed(1).padStart(7)}   − raw: ${extra.median.toFixed(1)}`,
  );
}
