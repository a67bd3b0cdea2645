/**
 * Client suite: per-operation latency of oncely's `post()` with the SQLite journal vs a raw ky
 * POST with no journal (same body, a fresh key of its own, its response body read), one operation at a time against the
 * same local reference server, operations interleaved one by one, five rounds or more (information, no goal: issue 47).
 *
 * A third arm is the bound a durable client cannot go below: the same raw ky POST, preceded by
 * the SQLite journal's own write of it — its schema and its statement texts, run directly in
 * one immediate transaction: the new operation's row, and the previous operation's outcome
 * (which the journal writes behind, in that same transaction). `post()` ÷ that bound is what
 * oncely's code costs over the write it must make: the client's latency goal, ≤ 1.2 (issue 47).
 *
 * Run alone: `node --import tsx bench/suites/client-latency.ts`; `BENCH_CLIENT_JOURNAL=memory` gives
 * `post()` a memory journal instead (what the client costs without the journal's write).
 *
 * @module
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import ky from 'ky';
import { createClient } from '../../src/index.js';
import { memoryJournal } from '../../src/journal/memory.js';
import { prepareSchema } from '../../src/journal/sqlite-schema.node.js';
import { statements } from '../../src/journal/sqlite-statements.node.js';
import { fromBetterSqlite3 } from '../../src/sqlite/driver.node.js';
import { sqliteJournal } from '../../src/journal/sqlite.node.js';
import { OperationState } from '../../src/journal/types.js';
import { newKey } from '../../src/keys.js';
import { QUICK, ROUNDS, emit, figure } from '../lib/figures.js';
import { TSX, startServer } from '../lib/proc.js';
import { ratios, summarize } from '../lib/stats.js';

const OPS_PER_BATCH = Number(process.env['BENCH_LATENCY_OPS'] ?? (QUICK ? 100 : 300));
// Operations per arm before anything is timed: V8 optimises each path's code only after many calls
// (with 30 the rounds' medians still fell by a third from the first round to the last).
const WARM_UP = Number(process.env['BENCH_LATENCY_WARM_UP'] ?? (QUICK ? 300 : 1000));
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

// The bound's journal: a file of the journal's schema, as sqliteJournal() opens it (WAL, synchronous=NORMAL).
const boundDb = new Database(join(dir, 'bound.db'));
boundDb.pragma('synchronous = NORMAL');
prepareSchema(fromBetterSqlite3(boundDb));
boundDb.pragma('journal_mode = WAL');
const sql = statements(fromBetterSqlite3(boundDb));
const scope = server.url;
let previous: { key: string; status: number; body: string } | undefined;
// A row's seal (src/journal/seal.node.ts) is a base64url SHA-256: the bound writes one of that length, computing none.
const SEAL = 'A'.repeat(43);
const writeIntent = boundDb.transaction((key: string, body: string, now: number) => {
  if (previous) {
    const result = { status: previous.status, headers: { 'content-type': 'application/json' }, body: previous.body, replayed: false };
    // The journal reads the row back (to check its seal) before it writes the outcome over it.
    sql.get.get(scope, previous.key);
    sql.update.run({
      scope,
      key: previous.key,
      state: OperationState.Succeeded,
      submittedAt: now,
      attempts: 1,
      lastStatus: previous.status,
      result: JSON.stringify(result),
      updatedAt: now,
      seal: SEAL,
      settles: 1,
    });
  }
  sql.insert.run({
    scope,
    key,
    method: 'POST',
    url: `${server.url}/v1/payments`,
    headers: '{"content-type":"application/json"}',
    body,
    fingerprint: '0'.repeat(64),
    createdAt: now,
    submittedAt: now,
    now,
    claimOwner: 'bound',
    claimedUntil: now + 30_000,
    claimProcess: null,
    seal: SEAL,
  });
}).immediate;
const sendBound = async (): Promise<number> => {
  const key = newKey();
  const body = JSON.stringify(json());
  writeIntent(key, body, Date.now());
  const response = await raw.post('v1/payments', { body, headers: { 'content-type': 'application/json', 'idempotency-key': key } });
  previous = { key, status: response.status, body: await response.text() };
  return response.status;
};

async function timed(send: () => Promise<number>): Promise<number> {
  const started = performance.now();
  const status = await send();
  const elapsed = performance.now() - started;
  if (status !== 201) throw new Error(`unexpected status ${status}`);
  return elapsed;
}

/** Per arm, the median latency of each round. */
interface Runs {
  raw: number[];
  bound: number[];
  oncely: number[];
}

/**
 * One round: OPS_PER_BATCH operations of each arm, interleaved one by one (raw, bound, oncely,
 * the order rotating with every operation), so that all see the same moment of a noisy machine;
 * the medians of the round's samples.
 */
async function round(index: number): Promise<Runs> {
  const arms: Array<[keyof Runs, () => Promise<number>]> = [
    ['raw', sendRaw],
    ['bound', sendBound],
    ['oncely', sendOncely],
  ];
  const samples: Runs = { raw: [], bound: [], oncely: [] };
  for (let i = 0; i < OPS_PER_BATCH; i += 1) {
    for (let k = 0; k < arms.length; k += 1) {
      const [name, send] = arms[(i + index + k) % arms.length]!;
      samples[name].push(await timed(send));
      // What an arm leaves for the next turn (post()'s outcome, written behind) runs here, outside
      // every timing: it would otherwise land in the next arm's, making the raw POST look slower.
      await new Promise((resolve) => setImmediate(resolve));
    }
  }
  return { raw: [summarize(samples.raw).median], bound: [summarize(samples.bound).median], oncely: [summarize(samples.oncely).median] };
}

// Warm every path (JIT, connection pool, SQLite page cache) before anything is measured.
for (let i = 0; i < WARM_UP; i += 1) {
  await sendRaw();
  await sendBound();
  await sendOncely();
}

const runs: Runs = { raw: [], bound: [], oncely: [] };
// At least five rounds: a latency ratio is a small difference of two noisy medians.
for (let r = 0; r < Math.max(ROUNDS, 5); r += 1) {
  const medians = await round(r);
  for (const name of ['raw', 'bound', 'oncely'] as const) runs[name].push(...medians[name]);
}
await client.close();
boundDb.close();
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
    // Information, no goal (issue 47): over loopback it measures the journal's own write as much as oncely.
    figure('client.ratio', 'oncely post() ÷ raw ky POST latency (information: includes the journal’s own write)', '×', ratios(runs.oncely, runs.raw)),
    figure('client.bound.latency', "raw ky POST after the journal's own write of it (the bound): median latency per operation", 'ms', runs.bound),
    figure('client.bound.ratio', "the bound ÷ raw ky POST latency: what the journal's write alone costs", '×', ratios(runs.bound, runs.raw)),
    // The client's latency goal (issue 47): what oncely's code costs over the write it must make.
    figure('client.ratio.bound', 'oncely post() ÷ the bound (a raw POST after the journal’s own write of it)', '×', ratios(runs.oncely, runs.bound), {
      op: '<=',
      value: 1.2,
    }),
  ],
  tables: [],
  details: { opsPerBatch: OPS_PER_BATCH, runs },
});
