/**
 * Client suite: per-operation latency of oncely's `post()` with the SQLite journal vs a raw ky
 * POST with no journal (same body, a fresh key of its own, its response body read), one operation at a time against the
 * same local reference server, operations interleaved one by one, five rounds or more (goal ≤ 1.2×, issue 36).
 *
 * Run alone: `node --import tsx bench/suites/client-latency.ts`; `BENCH_CLIENT_JOURNAL=memory` gives
 * `post()` a memory journal instead (what the client costs without the journal's write).
 *
 * @module
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import ky from 'ky';
import { createClient } from '../../src/index.js';
import { memoryJournal } from '../../src/journal/memory.js';
import { sqliteJournal } from '../../src/journal/sqlite.node.js';
import { newKey } from '../../src/keys.js';
import { QUICK, ROUNDS, emit, figure } from '../lib/figures.js';
import { TSX, startServer } from '../lib/proc.js';
import { ratios, summarize } from '../lib/stats.js';

const OPS_PER_BATCH = Number(process.env['BENCH_LATENCY_OPS'] ?? (QUICK ? 100 : 300));
const dir = mkdtempSync(join(tmpdir(), 'oncely-bench-latency-'));
const server = await startServer([...TSX, 'src/cli/main.ts', 'serve', '--port', '0', '--db', join(dir, 'server.db'), '--quiet']);
const headers = { authorization: 'Bearer test_acme' };
const raw = ky.create({ prefixUrl: server.url, headers, retry: 0 });
const inMemory = process.env['BENCH_CLIENT_JOURNAL'] === 'memory';
const journal = inMemory ? memoryJournal() : sqliteJournal({ path: join(dir, 'journal.db') });
const client = createClient({ baseUrl: server.url, headers, journal });

let n = 0;
const json = (): { amount: number; currency: string; reference: string } => ({ amount: 100 + (n % 1000), currency: 'EUR', reference: `lat-${(n += 1)}` });

// The raw POST reads its response body, as every caller does: oncely's post() hands the body
// back, and an unread body would leave undici's connection to be drained inside the next timing.
const sendRaw = async (): Promise<number> => {
  const response = await raw.post('v1/payments', { json: json(), headers: { 'idempotency-key': newKey() } });
  await response.text();
  return response.status;
};
const sendOncely = async (): Promise<number> => (await client.post('v1/payments', { json: json() })).status;

async function timed(send: () => Promise<number>): Promise<number> {
  const started = performance.now();
  const status = await send();
  const elapsed = performance.now() - started;
  if (status !== 201) throw new Error(`unexpected status ${status}`);
  return elapsed;
}

/**
 * One round: OPS_PER_BATCH operations of each kind, interleaved one by one (raw, oncely, raw, …,
 * the order flipped every other round), so that both see the same moment of a noisy machine;
 * the medians of the round's two samples.
 */
async function round(index: number): Promise<{ raw: number; oncely: number }> {
  const samples = { raw: [] as number[], oncely: [] as number[] };
  for (let i = 0; i < OPS_PER_BATCH; i += 1) {
    if ((i + index) % 2 === 0) {
      samples.raw.push(await timed(sendRaw));
      samples.oncely.push(await timed(sendOncely));
    } else {
      samples.oncely.push(await timed(sendOncely));
      samples.raw.push(await timed(sendRaw));
    }
  }
  return { raw: summarize(samples.raw).median, oncely: summarize(samples.oncely).median };
}

// Warm both paths (JIT, connection pool, SQLite page cache) before anything is measured.
for (let i = 0; i < 30; i += 1) {
  await raw.post('v1/payments', { json: json(), headers: { 'idempotency-key': newKey() } });
  await client.post('v1/payments', { json: json() });
}

const runs = { raw: [] as number[], oncely: [] as number[] };
// At least five rounds: a latency ratio is a small difference of two noisy medians.
for (let r = 0; r < Math.max(ROUNDS, 5); r += 1) {
  const { raw: rawMedian, oncely } = await round(r);
  runs.raw.push(rawMedian);
  runs.oncely.push(oncely);
}
await client.close();
await server.stop();
rmSync(dir, { recursive: true, force: true });

emit({
  suite: 'client-latency',
  figures: [
    figure('client.raw.latency', 'raw ky POST (no journal): median latency per operation', 'ms', runs.raw),
    figure('client.oncely.latency', `oncely post() with the ${inMemory ? 'memory' : 'SQLite'} journal: median latency per operation`, 'ms', runs.oncely),
    figure(
      'client.overhead',
      'oncely post() − raw ky POST, per operation',
      'ms',
      runs.oncely.map((o, i) => o - (runs.raw[i] ?? Number.NaN)),
    ),
    figure('client.ratio', 'oncely post() ÷ raw ky POST latency', '×', ratios(runs.oncely, runs.raw), { op: '<=', value: 1.2 }),
  ],
  tables: [],
  details: { opsPerBatch: OPS_PER_BATCH, runs },
});
