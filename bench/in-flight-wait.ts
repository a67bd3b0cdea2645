/**
 * What a duplicate's wait costs on PostgreSQL: the reference app three times on one schema, each
 * with its own store and pool: A runs the originals (slowed with `slow:ext2:…`), B waits as the
 * store lets it (`LISTEN/NOTIFY`), P waits as on a store without `watch` (its poll of the row).
 *
 * 1. Latency: the time from the original's answer (its finish committed) to the waiting
 *    duplicate's answer, the duplicate sent to A itself (woken in-process), to B or to P. Each
 *    duplicate is sent at a random moment of its original's run, so a poll's phase is not
 *    flattered, and the trials are staggered, so no two replays queue together.
 * 2. Queries: the store queries B (or P) issues per second while N duplicates wait on it (N
 *    originals of distinct keys, or one original and N duplicates of its key). Admissions are one
 *    per request and not counted; what is counted is every `load` of a row (the poll, the check
 *    after a notification).
 *
 * Usage: `node --import tsx bench/in-flight-wait.ts` (`ONCELY_PG_URL`, else
 * `postgres://postgres@127.0.0.1:5432/test`, in a schema of its own that it drops).
 *
 * @module
 */
import pg from 'pg';
import { createReferenceApp, type ReferenceApp } from '../src/reference/app.js';
import { postgresKeyStore } from '../src/server/store/postgres.node.js';
import type { KeyStore } from '../src/server/store/types.js';

const pgUrl = process.env['ONCELY_PG_URL'] ?? 'postgres://postgres@127.0.0.1:5432/test';
const schema = `oncely_bench_wait_${process.pid}`;
const TRIALS = 20;
const SLOW_MS = 2000;

/**
 * `store` with its row loads counted (every other primitive its own, so nothing else changes); without
 * its `watch` when `watching` is false, so that its waits poll as on a store that has none.
 */
function counted(store: KeyStore, watching: boolean): { readonly store: KeyStore; loads: () => number } {
  let loads = 0;
  const { watch, ...primitives } = store;
  const wrapped: KeyStore = {
    ...primitives,
    ...(watching && watch !== undefined ? { watch } : {}),
    load: (clientId, key) => {
      loads += 1;
      return store.load(clientId, key);
    },
  };
  return { store: wrapped, loads: () => loads };
}

/** The `q`-quantile of `values` (nearest rank). */
const quantile = (values: readonly number[], q: number): number => {
  const sorted = [...values].sort((x, y) => x - y);
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!;
};

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function post(app: ReferenceApp, key: string): Promise<{ status: number; at: number }> {
  const request = new Request('http://oncely.bench/v1/payments', {
    method: 'POST',
    headers: { authorization: 'Bearer test_acme', 'idempotency-key': key, 'content-type': 'application/json' },
    body: JSON.stringify({ amount: 1250, currency: 'EUR', reference: key.slice(0, 140) }),
  });
  return app.fetch(request).then(async (response) => {
    await response.arrayBuffer();
    return { status: response.status, at: performance.now() };
  });
}

type Instance = { readonly app: ReferenceApp; loads: () => number };

async function open(slowMs: number, watching = true): Promise<Instance> {
  const { store, loads } = counted(postgresKeyStore({ connectionString: pgUrl, schema }), watching);
  const app = createReferenceApp({ store, faults: slowMs > 0 ? `slow:ext2:${slowMs}` : undefined, leaseMs: 10_000, inFlightWaitMs: 8000 });
  await app.ready;
  return { app, loads };
}

async function latency(a: ReferenceApp, dup: ReferenceApp, label: string, run: string): Promise<void> {
  const gaps = await Promise.all(
    Array.from({ length: TRIALS }, async (_, i) => {
      const key = `lat-${run}-${label.replace(/[^a-z]+/g, '-')}-${i}`;
      // Started 150 ms apart, so that no two originals finish (and no two replays queue) together.
      await sleep(i * 150);
      const original = post(a, key);
      await sleep(100 + Math.random() * (SLOW_MS - 300));
      const duplicate = await post(dup, key);
      const first = await original;
      if (first.status !== 201 || duplicate.status !== 201) throw new Error(`${key}: ${first.status}/${duplicate.status}`);
      return duplicate.at - first.at;
    }),
  );
  const [p50, p90, max] = [0.5, 0.9, 1].map((q) => quantile(gaps, q).toFixed(1));
  console.log(`  ${label.padEnd(24)} original's answer → duplicate's answer: median ${p50} ms, p90 ${p90} ms, max ${max} ms (${TRIALS} trials)`);
}

async function queries(a: ReferenceApp, b: Instance, label: string, n: number, oneKey: boolean, run: string): Promise<void> {
  const keys = Array.from({ length: oneKey ? 1 : n }, (_, i) => `q-${run}-${label}-${oneKey ? 'one' : 'distinct'}-${n}-${i}`);
  const originals = keys.map((key) => post(a, key));
  await sleep(300);
  const duplicates = Array.from({ length: n }, (_, i) => post(b.app, keys[i % keys.length]!));
  // Counted from 0.5 s after the duplicates arrived (their admissions done) to 0.5 s before the originals end.
  await sleep(500);
  const from = b.loads();
  const t0 = performance.now();
  await sleep(3000 - 300 - 500 - 500);
  const perSecond = ((b.loads() - from) * 1000) / (performance.now() - t0);
  const answers = await Promise.all([...originals, ...duplicates]);
  if (answers.some((answer) => answer.status !== 201)) throw new Error(`queries ${n}: ${answers.map((x) => x.status).join(',')}`);
  console.log(`  ${String(n).padStart(3)} waiting duplicates of ${oneKey ? 'one key      ' : 'distinct keys'}: ${perSecond.toFixed(1)} row loads/s (${label})`);
}

const run = Date.now().toString(36);
const a = await open(SLOW_MS);
const b = await open(0);
const p = await open(0, false);
try {
  console.log(`in-flight wait on PostgreSQL (${pgUrl}), slow:ext2:${SLOW_MS}`);
  await latency(a.app, a.app, 'same instance', run);
  await latency(a.app, b.app, 'other instance, notified', run);
  await latency(a.app, p.app, 'other instance, polling', run);
  await a.app.close(0);
  const slowA = await open(3000);
  console.log('store queries while duplicates wait on another instance (originals slow:ext2:3000):');
  for (const [label, instance] of [
    ['notified', b],
    ['polling', p],
  ] as const) {
    for (const oneKey of [false, true]) for (const n of [1, 10, 100]) await queries(slowA.app, instance, label, n, oneKey, run);
  }
  await slowA.app.close(0);
} finally {
  await Promise.all([a.app.close(0).catch(() => 0), b.app.close(0), p.app.close(0)]);
  const admin = new pg.Client({ connectionString: pgUrl });
  await admin.connect();
  await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await admin.end();
}
