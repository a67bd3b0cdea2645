/**
 * The request fingerprint on the server's hot path: WebCrypto (the platform-neutral default)
 * against `node:crypto` (`nodeDigest`, what `oncely serve` passes in).
 *
 * 1. Fingerprint µs/op, one request-sized payment body, awaited one at a time as the handler
 *    does: `fingerprintInput` + WebCrypto vs `fingerprintInput` + `nodeDigest`, and the digest
 *    alone on the same bytes.
 * 2. Replay req/s in process: `app.fetch(Request)` of two reference apps on SQLite that differ
 *    only in the `digest` option, one finished key replayed by `CONCURRENCY` loops, next to a
 *    trivial fetch handler (reads the body, answers JSON) for scale.
 * 3. Replay req/s over HTTP: the same two apps and the trivial handler behind @hono/node-server
 *    in this process, autocannon in its own process (the `replay ≥ 0.5× trivial` goal).
 *
 * Every comparison is measured alternately, round by round (see `lib/stats.ts`), and reported as
 * median/min/max of the rounds plus the per-round ratio.
 *
 * Usage: `npx tsx bench/fingerprint.ts` (env: BENCH_ROUNDS (default 9 here), BENCH_FP_OPS,
 * BENCH_REPLAYS, BENCH_LOAD_SECONDS, BENCH_CONNECTIONS, BENCH_QUICK=1). Prints a table, writes
 * bench/results/fingerprint.json and prints the suite result as its last line.
 *
 * @module
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { type ServerType, serve } from '@hono/node-server';
import { fingerprintInput, webCryptoDigest } from '../src/fingerprint.js';
import { createReferenceApp, type ReferenceApp } from '../src/reference/app.js';
import { nodeDigest } from '../src/digest.node.js';
import { sqliteKeyStore } from '../src/server/store/sqlite.node.js';
import { CONNECTIONS, LOAD_SECONDS, QUICK, emit, figure, type Figure } from './lib/figures.js';
import { runLoad } from './lib/load.js';
import { ROOT } from './lib/proc.js';
import { alternate, ratios } from './lib/stats.js';

const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? (QUICK ? 3 : 9));
const FP_OPS = Number(process.env['BENCH_FP_OPS'] ?? (QUICK ? 2000 : 10_000));
const REPLAYS = Number(process.env['BENCH_REPLAYS'] ?? (QUICK ? 1000 : 4000));
const CONCURRENCY = 10;
const KEY = 'bench-fingerprint-replay';
const BODY = JSON.stringify({ amount: 1250, currency: 'EUR', reference: 'bench-fingerprint-0001' });
const HEADERS = { authorization: 'Bearer test_acme', 'idempotency-key': KEY, 'content-type': 'application/json' };

// ── 1. fingerprint µs/op ───────────────────────────────────────────────────────────────────────
const input = fingerprintInput('POST', '/v1/payments', BODY, { contentType: 'application/json' });
if (nodeDigest(input) !== (await webCryptoDigest(input))) throw new Error('the two digests disagree: nothing to measure');

/** Mean µs per call of `op`, each call awaited before the next (as one request awaits its hash). */
async function perOp(op: () => unknown): Promise<number> {
  const start = process.hrtime.bigint();
  for (let i = 0; i < FP_OPS; i += 1) await op();
  return Number(process.hrtime.bigint() - start) / 1000 / FP_OPS;
}

const fp = await alternate(ROUNDS, {
  webcrypto: () => perOp(() => webCryptoDigest(fingerprintInput('POST', '/v1/payments', BODY, { contentType: 'application/json' }))),
  node: () => perOp(() => nodeDigest(fingerprintInput('POST', '/v1/payments', BODY, { contentType: 'application/json' }))),
  webcryptoDigestOnly: () => perOp(() => webCryptoDigest(input)),
  nodeDigestOnly: () => perOp(() => nodeDigest(input)),
  inputOnly: () => perOp(() => fingerprintInput('POST', '/v1/payments', BODY, { contentType: 'application/json' })),
});

// ── 2. replay req/s through app.fetch ──────────────────────────────────────────────────────────
async function replayApp(digest: typeof nodeDigest | undefined): Promise<ReferenceApp> {
  const app = createReferenceApp({ store: sqliteKeyStore({ path: ':memory:' }), ...(digest ? { digest } : {}) });
  const first = await app.fetch(new Request('http://local/v1/payments', { method: 'POST', headers: HEADERS, body: BODY }));
  if (first.status !== 201) throw new Error(`the first execution answered ${first.status}: ${await first.text()}`);
  return app;
}

const trivial = async (request: Request): Promise<Response> => {
  await request.text();
  return new Response(JSON.stringify({ id: 'pay_1', amount: 1250 }), { status: 201, headers: { 'content-type': 'application/json' } });
};
const before = await replayApp(undefined);
const after = await replayApp(nodeDigest);

/** Replays per second: `REPLAYS` requests spread over `CONCURRENCY` loops; every answer must be a replay. */
async function replayRate(fetch: (request: Request) => Promise<Response>, expectReplay: boolean): Promise<number> {
  let left = REPLAYS;
  const start = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (left > 0) {
        left -= 1;
        const response = await fetch(new Request('http://local/v1/payments', { method: 'POST', headers: HEADERS, body: BODY }));
        await response.arrayBuffer();
        if (response.status !== 201 || (expectReplay && response.headers.get('idempotency-replay') !== 'true')) {
          throw new Error(`expected a replay, got ${response.status}`);
        }
      }
    }),
  );
  return REPLAYS / (Number(process.hrtime.bigint() - start) / 1e9);
}

const inProcess = await alternate(ROUNDS, {
  webcrypto: () => replayRate((r) => before.fetch(r), true),
  node: () => replayRate((r) => after.fetch(r), true),
  trivial: () => replayRate(trivial, false),
});

// ── 3. replay req/s over HTTP ──────────────────────────────────────────────────────────────────
function listen(fetch: (request: Request) => Promise<Response>): Promise<{ url: string; server: ServerType }> {
  return new Promise((resolve) => {
    const server = serve({ fetch, hostname: '127.0.0.1', port: 0 }, (info) => resolve({ url: `http://127.0.0.1:${info.port}`, server }));
  });
}
const servers = { webcrypto: await listen((r) => before.fetch(r)), node: await listen((r) => after.fetch(r)), trivial: await listen(trivial) };
const load = (url: string) => async () => {
  const result = await runLoad({
    url: `${url}/v1/payments`,
    method: 'POST',
    headers: HEADERS,
    body: BODY,
    keyMode: 'fixed',
    connections: CONNECTIONS,
    durationSec: LOAD_SECONDS,
  });
  if (result.errors > 0 || result.non2xx > 0) throw new Error(`load run failed: ${JSON.stringify(result.statuses)}, ${result.errors} errors`);
  return result.rps;
};
const http = await alternate(ROUNDS, { webcrypto: load(servers.webcrypto.url), node: load(servers.node.url), trivial: load(servers.trivial.url) });
for (const { server } of Object.values(servers)) server.close();
await Promise.all([before.close(0), after.close(0)]);

// ── report ─────────────────────────────────────────────────────────────────────────────────────
const figures: Figure[] = [
  figure('fingerprint.webcrypto.us', 'fingerprint (input + WebCrypto SHA-256)', 'µs/op', fp.webcrypto),
  figure('fingerprint.node.us', 'fingerprint (input + node:crypto SHA-256)', 'µs/op', fp.node),
  figure('fingerprint.ratio', 'fingerprint WebCrypto / node:crypto', '×', ratios(fp.webcrypto, fp.node)),
  figure('fingerprint.digest.webcrypto.us', 'digest only, WebCrypto', 'µs/op', fp.webcryptoDigestOnly),
  figure('fingerprint.digest.node.us', 'digest only, node:crypto', 'µs/op', fp.nodeDigestOnly),
  figure('fingerprint.input.us', 'fingerprintInput only (canonical JSON + bytes)', 'µs/op', fp.inputOnly),
  figure('replay.fetch.webcrypto.rps', 'replay via app.fetch, WebCrypto digest (before)', 'req/s', inProcess.webcrypto),
  figure('replay.fetch.node.rps', 'replay via app.fetch, nodeDigest (after)', 'req/s', inProcess.node),
  figure('replay.fetch.ratio', 'replay via app.fetch, after / before', '×', ratios(inProcess.node, inProcess.webcrypto)),
  figure('replay.fetch.trivial.rps', 'trivial fetch handler in process', 'req/s', inProcess.trivial),
  figure('replay.http.webcrypto.rps', 'replay over HTTP, WebCrypto digest (before)', 'req/s', http.webcrypto),
  figure('replay.http.node.rps', 'replay over HTTP, nodeDigest (after)', 'req/s', http.node),
  figure('replay.http.ratio', 'replay over HTTP, after / before', '×', ratios(http.node, http.webcrypto)),
  figure('replay.http.trivial.rps', 'trivial @hono/node-server handler over HTTP', 'req/s', http.trivial),
  figure('replay.http.before.vs-trivial', 'replay over HTTP before / trivial', '×', ratios(http.webcrypto, http.trivial), { op: '>=', value: 0.5 }),
  figure('replay.http.after.vs-trivial', 'replay over HTTP after / trivial', '×', ratios(http.node, http.trivial), { op: '>=', value: 0.5 }),
];
const environment = {
  node: process.version,
  cpus: cpus().length,
  loadavg: loadavg().map((v) => Math.round(v * 10) / 10),
  rounds: ROUNDS,
  fpOps: FP_OPS,
  replays: REPLAYS,
  concurrency: CONCURRENCY,
  connections: CONNECTIONS,
  loadSeconds: LOAD_SECONDS,
};
console.log(`fingerprint bench — ${ROUNDS} alternated rounds, node ${process.version}, load average ${environment.loadavg.join(' ')}`);
for (const f of figures) {
  const goal = f.goal ? `  goal ${f.goal.op} ${f.goal.value}: ${f.pass ? 'pass' : 'FAIL'}` : '';
  console.log(`${f.label.padEnd(52)} ${String(f.median).padStart(9)} ${f.unit.padEnd(6)} (min ${f.min}, max ${f.max})${goal}`);
}
mkdirSync(join(ROOT, 'bench/results'), { recursive: true });
writeFileSync(join(ROOT, 'bench/results/fingerprint.json'), `${JSON.stringify({ at: new Date().toISOString(), environment, figures }, null, 2)}\n`);
emit({ suite: 'fingerprint', figures, tables: [] });
