/**
 * What tracing costs on the first-execution path: the benchmark app's payment (a local step that
 * inserts the charge, an external step, the final response) through the idempotency handler
 * in-process, over a SQLite file, ten requests at a time, with a fresh key each. Three handlers,
 * each on its own store, run in interleaved rounds (order rotated every round) so that a drift of
 * the machine's speed falls on all three alike:
 *
 * - `off`: no `telemetry` option (what every app gets by default), and `control`, the same again
 *   (its ratio to `off` shows how far the machine's noise alone moves a ratio);
 * - `noop`: `telemetry: { api }` with no tracer provider registered (the API's no-op tracer);
 * - `memory`: a real SDK tracer (`BasicTracerProvider`, `SimpleSpanProcessor`: each span exported
 *   as it ends, to an in-memory exporter);
 * - `batch`: the same with `BatchSpanProcessor` (spans handed to the exporter in batches, as a
 *   production setup does).
 *
 * Prints, per variant, the median over rounds of wall and CPU microseconds per request, and the
 * median of the per-round ratios to `off`.
 *
 * Usage: `npx tsx bench/telemetry.ts [rounds = 15] [requests per round = 2000] [variants = off,control,noop,memory,batch]`
 * (`off` alone, run in two worktrees in turn, compares the untraced path before and after a change).
 *
 * @module
 */
import * as api from '@opentelemetry/api';
import { BasicTracerProvider, BatchSpanProcessor, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createIdempotencyHandler, type IdempotencyHandler } from '../src/server/handler.js';
import { sqliteKeyStore } from '../src/server/store/sqlite.node.js';
import type { KeyStore, StoredResponse } from '../src/server/store/types.js';
import type { IdempotentOperation } from '../src/server/types.js';
import type { TelemetryOptions } from '../src/telemetry/types.js';
import { CHARGE_SQL, EXECUTIONS_DDL, chargeParams, newPayment, parsePayment, type PaymentInput } from './peers/payment.js';

const rounds = Number(process.argv[2] ?? 15);
const perRound = Number(process.argv[3] ?? 2000);
const only = new Set((process.argv[4] ?? 'off,control,noop,memory,batch').split(','));
const CONCURRENCY = 10;
const dir = mkdtempSync(join(tmpdir(), 'oncely-telemetry-bench-'));

/** The benchmark app's payment (bench/peers/oncely-app.ts), with no simulated work. */
const payment: IdempotentOperation<PaymentInput> = {
  method: 'POST',
  path: '/pay',
  parse: (body) => {
    const input = parsePayment(body);
    return typeof input === 'string' ? { ok: false, detail: input } : { ok: true, input };
  },
  steps: [
    {
      kind: 'local',
      point: 'H1_DONE',
      async run(ctx, tx) {
        const charged = newPayment(ctx.input);
        await tx.run(CHARGE_SQL, chargeParams(charged));
        return { payment: charged };
      },
    },
    { kind: 'external', system: 1, sent: 'EXT1_SENT', done: 'EXT1_DONE', call: async () => ({ outcome: 'done' }), probe: async () => ({ outcome: 'absent' }) },
  ],
  final: {
    kind: 'final',
    run: (ctx): Promise<StoredResponse> =>
      Promise.resolve({ status: 201, headers: { 'content-type': 'application/json' }, body: JSON.stringify(ctx.data['payment']) }),
  },
};

interface Variant {
  readonly name: string;
  readonly store: KeyStore;
  readonly handler: IdempotencyHandler;
  readonly wall: number[];
  readonly cpu: number[];
}

const exporter = new InMemorySpanExporter();
const sdk = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const batched = new BasicTracerProvider({
  spanProcessors: [new BatchSpanProcessor(exporter, { maxQueueSize: 65_536, maxExportBatchSize: 512, scheduledDelayMillis: 200 })],
});

async function variant(name: string, telemetry: TelemetryOptions | undefined): Promise<Variant> {
  const store = sqliteKeyStore({ path: join(dir, `${name}.db`) });
  await store.migrate({ sqlite: `${EXECUTIONS_DDL};`, postgres: `${EXECUTIONS_DDL};` });
  const handler = createIdempotencyHandler({
    store,
    operations: [payment as IdempotentOperation<unknown>],
    authenticate: () => 'bench',
    ...(telemetry ? { telemetry } : {}),
  });
  return { name, store, handler, wall: [], cpu: [] };
}

let sequence = 0;
const body = JSON.stringify({ amount: 1250, currency: 'EUR', reference: 'inv-7' });
async function one(handler: IdempotencyHandler): Promise<void> {
  sequence += 1;
  const request = new Request('http://bench.local/pay', {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': `k-${sequence}` },
    body,
  });
  const response = await handler.handle(request);
  if (response?.status !== 201) throw new Error(`expected 201, got ${response?.status}`);
}

async function round(v: Variant, requests: number): Promise<void> {
  let left = requests;
  const cpu = process.cpuUsage();
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (left > 0) {
        left -= 1;
        await one(v.handler);
      }
    }),
  );
  if (v.name === 'batch') await batched.forceFlush();
  const used = process.cpuUsage(cpu);
  v.wall.push(((performance.now() - started) * 1000) / requests);
  v.cpu.push((used.user + used.system) / requests);
  exporter.reset();
}

const median = (values: readonly number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

const all: Array<[string, TelemetryOptions | undefined]> = [
  ['off', undefined],
  // A second untraced handler: its ratio to `off` is the noise floor of the run.
  ['control', undefined],
  ['noop', { api }],
  ['memory', { api, tracer: sdk.getTracer('oncely') }],
  ['batch', { api, tracer: batched.getTracer('oncely') }],
];
const variants: Variant[] = [];
for (const [name, telemetry] of all) if (only.has(name)) variants.push(await variant(name, telemetry));
for (const v of variants) await round(v, 500); // warm-up, not counted
for (const v of variants) v.wall.length = v.cpu.length = 0;
for (let r = 0; r < rounds; r += 1) {
  for (let i = 0; i < variants.length; i += 1) await round(variants[(r + i) % variants.length]!, perRound);
}
const [off] = variants;
console.log(`first execution, in-process handler, SQLite file, concurrency ${CONCURRENCY}: ${rounds} rounds × ${perRound} requests per variant`);
console.log('variant  wall µs/req  cpu µs/req  wall ÷ off (median of rounds)  cpu ÷ off');
for (const v of variants) {
  const wallRatio = median(v.wall.map((w, i) => w / off!.wall[i]!));
  const cpuRatio = median(v.cpu.map((c, i) => c / off!.cpu[i]!));
  console.log(
    `${v.name.padEnd(8)} ${median(v.wall).toFixed(1).padStart(11)} ${median(v.cpu).toFixed(1).padStart(11)} ${wallRatio.toFixed(3).padStart(30)} ${cpuRatio.toFixed(3).padStart(10)}`,
  );
}
for (const v of variants) await v.store.close?.();
rmSync(dir, { recursive: true, force: true });
