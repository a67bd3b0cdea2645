/**
 * Where a `post()`'s latency goes, against a raw ky POST, on a real `oncely serve` over loopback:
 * each operation is cut at the moment its `fetch` is called and the moment it resolves, so
 * - `before`: from the call to `fetch` (the key, the fingerprint, the journal's write, the retry
 *   loop, ky's request),
 * - `wire`: `fetch` itself (the server's work and the round trip; the same request for every arm),
 * - `after`: from the response to the caller (the body, the outcome stored, the result parsed),
 * and, for the oncely arms, how long the journal's `put` took inside `before`. Arms: a raw ky POST,
 * `post()` with the SQLite journal, `post()` with a memory journal; interleaved one by one in
 * rotating order, each operation followed by a turn of the event loop outside its timing.
 *
 * Usage: `npx tsx bench/clients/post-phases.ts [--ops 3000] [--warm-up 1000]`; medians in µs.
 *
 * @module
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import ky from 'ky';
import { createClient } from '../../src/index.js';
import { memoryJournal } from '../../src/journal/memory.js';
import { sqliteJournal } from '../../src/journal/sqlite.node.js';
import type { Journal } from '../../src/journal/types.js';
import { newKey } from '../../src/keys.js';
import { TSX, startServer } from '../lib/proc.js';
import { summarize } from '../lib/stats.js';

const { values: args } = parseArgs({ options: { ops: { type: 'string', default: '3000' }, 'warm-up': { type: 'string', default: '1000' } } });
const ops = Number(args.ops);
const warmUp = Number(args['warm-up']);

const dir = mkdtempSync(join(tmpdir(), 'oncely-bench-post-phases-'));
const server = await startServer([...TSX, 'src/cli/main.ts', 'serve', '--port', '0', '--db', join(dir, 'server.db'), '--quiet']);
const headers = { authorization: 'Bearer test_acme' };

// One fetch for every arm, stamping when it is called and when it resolves.
let called = 0;
let answered = 0;
const stamped = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
  called = performance.now();
  const response = await fetch(input, init);
  answered = performance.now();
  return response;
};
let putMs = 0;
/** `journal` with its `put` timed (the last one in `putMs`). */
function timedPut(journal: Journal): Journal {
  const put = journal.put.bind(journal);
  journal.put = async (operation) => {
    const started = performance.now();
    const outcome = await put(operation);
    putMs = performance.now() - started;
    return outcome;
  };
  return journal;
}

const raw = ky.create({ prefixUrl: server.url, headers, retry: 0, fetch: stamped });
const onSqlite = createClient({ baseUrl: server.url, headers, journal: timedPut(sqliteJournal({ path: join(dir, 'journal.db') })), fetch: stamped });
const inMemory = createClient({ baseUrl: server.url, headers, journal: timedPut(memoryJournal()), fetch: stamped });
let n = 0;
const json = (): unknown => ({ amount: 100 + (n % 1000), currency: 'EUR', reference: `phases-${(n += 1)}` });
const arms: Record<string, () => Promise<unknown>> = {
  'raw ky': async () => (await raw.post('v1/payments', { json: json(), headers: { 'idempotency-key': newKey() } })).text(),
  'oncely sqlite': () => onSqlite.post('v1/payments', { json: json() }),
  'oncely memory': () => inMemory.post('v1/payments', { json: json() }),
};
const names = Object.keys(arms);
type Phases = { before: number[]; wire: number[]; after: number[]; total: number[]; put: number[] };
const phases: Record<string, Phases> = Object.fromEntries(names.map((name) => [name, { before: [], wire: [], after: [], total: [], put: [] }]));

for (let i = 0; i < warmUp + ops; i += 1) {
  for (let k = 0; k < names.length; k += 1) {
    const name = names[(i + k) % names.length]!;
    putMs = Number.NaN;
    const started = performance.now();
    await arms[name]!();
    const ended = performance.now();
    if (i >= warmUp) {
      const into = phases[name]!;
      into.before.push((called - started) * 1000);
      into.wire.push((answered - called) * 1000);
      into.after.push((ended - answered) * 1000);
      into.total.push((ended - started) * 1000);
      into.put.push(putMs * 1000);
    }
    // The outcome post() writes behind commits here, outside every timing.
    await new Promise((resolve) => setImmediate(resolve));
  }
}
await onSqlite.close();
await inMemory.close();
await server.stop();
rmSync(dir, { recursive: true, force: true });

const median = (values: number[]): string => summarize(values).median.toFixed(0).padStart(6);
console.log(`post() phases over loopback, median µs (${ops} operations per arm after ${warmUp} to warm up)`);
console.log(`${'arm'.padEnd(14)} before   wire  after  total   (journal put)`);
for (const name of names) {
  const p = phases[name]!;
  const put = p.put.filter((value) => !Number.isNaN(value));
  console.log(`${name.padEnd(14)} ${median(p.before)} ${median(p.wire)} ${median(p.after)} ${median(p.total)}   ${put.length > 0 ? median(put) : '     –'}`);
}
