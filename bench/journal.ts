/**
 * Journal cost per operation: journal it (`put`), then settle it (`update` to succeeded with a
 * stored response) — what the client adds to every request on top of the network.
 *
 * Variants, measured alternately in rotating order within each round so that a noisy stretch
 * of the (shared, 2-core) machine hits every variant of that round:
 * - memory          — `memoryJournal()`, the floor
 * - sqlite process  — one `put` + one `update` per operation, WAL, synchronous=NORMAL
 * - sqlite power    — the same with synchronous=FULL (an fsync per commit)
 * - sqlite batched  — `putMany` of a whole batch in one transaction, then the batch settled with
 *                     concurrent `update`s, which the journal's group commit puts in one
 *                     transaction (an uploader settling rows as a batch of responses returns)
 *
 * Usage: `npx tsx bench/journal.ts [--rounds 7] [--ops 2000] [--batch 1000] [--power-ops 200]`
 * Prints a table and writes bench/results/journal.json.
 *
 * @module
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { memoryJournal } from '../src/journal/memory.js';
import { sqliteJournal } from '../src/journal/sqlite.node.js';
import { OperationState, type Journal, type NewOperation, type StoredResult } from '../src/journal/types.js';

const { values: args } = parseArgs({
  options: {
    rounds: { type: 'string', default: '7' },
    ops: { type: 'string', default: '2000' },
    batch: { type: 'string', default: '1000' },
    'power-ops': { type: 'string', default: '200' },
  },
});
const rounds = Number(args.rounds);
const ops = Number(args.ops);
const batch = Number(args.batch);
const powerOps = Number(args['power-ops']);

const TARGET_BATCHED_OPS_PER_S = 20_000;
const TARGET_PROCESS_US_PER_OP = 100;

const result: StoredResult = {
  status: 201,
  headers: { 'content-type': 'application/json' },
  body: '{"id":"pay_0193b8a0","status":"succeeded","amount":1250,"currency":"EUR"}',
  replayed: false,
};

let serial = 0;
// Keys are built from a counter, not uuid's v7(): minting is the client's cost, not the journal's.
const makeOps = (count: number): NewOperation[] =>
  Array.from({ length: count }, () => {
    serial += 1;
    const hex = serial.toString(16).padStart(12, '0');
    return {
      scope: 'http://127.0.0.1:8787',
      key: `0193b8a0-0000-7000-8000-${hex}`,
      method: 'POST',
      url: 'http://127.0.0.1:8787/v1/payments',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ amount: 1250, currency: 'EUR', reference: `payroll-2026-12-row-${serial}`, beneficiary: 'DE89370400440532013000' }),
      fingerprint: `sha256:${hex}`,
    };
  });

const dir = mkdtempSync(join(tmpdir(), 'oncely-bench-journal-'));
let files = 0;
const freshFile = (): string => join(dir, `j${(files += 1)}.db`);

/** Times `count` operations through `run`, on a journal opened (and warmed) outside the timing. */
interface Sample {
  /** Wall-clock µs per operation. */
  readonly wall: number;
  /** CPU (user + system) µs per operation: steadier than wall time on a shared machine. */
  readonly cpu: number;
}

async function measure(open: () => Journal, count: number, run: (journal: Journal, batchOps: NewOperation[]) => Promise<void>): Promise<Sample> {
  const journal = open();
  await journal.list({ limit: 1 });
  const batchOps = makeOps(count);
  const cpuBefore = process.cpuUsage();
  const started = process.hrtime.bigint();
  await run(journal, batchOps);
  const elapsedUs = Number(process.hrtime.bigint() - started) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  await journal.close();
  return { wall: elapsedUs / count, cpu: (cpu.user + cpu.system) / count };
}

const oneByOne = async (journal: Journal, list: NewOperation[]): Promise<void> => {
  for (const op of list) {
    await journal.put(op);
    await journal.update(op.scope, op.key, { state: OperationState.Succeeded, attempts: 1, lastStatus: 201, result });
  }
};

const batched = async (journal: Journal, list: NewOperation[]): Promise<void> => {
  for (let i = 0; i < list.length; i += batch) {
    const chunk = list.slice(i, i + batch);
    await journal.putMany(chunk);
    await Promise.all(chunk.map((op) => journal.update(op.scope, op.key, { state: OperationState.Succeeded, attempts: 1, lastStatus: 201, result })));
  }
};

const variants = {
  memory: () => measure(memoryJournal, ops, oneByOne),
  'sqlite process': () => measure(() => sqliteJournal({ path: freshFile(), durability: 'process' }), ops, oneByOne),
  'sqlite power': () => measure(() => sqliteJournal({ path: freshFile(), durability: 'power' }), powerOps, oneByOne),
  'sqlite batched': () => measure(() => sqliteJournal({ path: freshFile(), durability: 'process' }), Math.max(ops, batch), batched),
} as const;
type Variant = keyof typeof variants;
const names = Object.keys(variants) as Variant[];

const samples = Object.fromEntries(names.map((name) => [name, [] as Sample[]])) as Record<Variant, Sample[]>;
try {
  for (const name of names) await variants[name](); // warm-up: JIT, page cache, native module
  for (let round = 0; round < rounds; round += 1) {
    for (let i = 0; i < names.length; i += 1) {
      const name = names[(i + round) % names.length]!;
      samples[name].push(await variants[name]());
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}

const median = (values: readonly number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};
const r1 = (value: number): number => Math.round(value * 10) / 10;

const rows = names.map((name) => {
  const wall = samples[name].map((sample) => sample.wall);
  const us = median(wall);
  return {
    variant: name,
    medianUsPerOp: r1(us),
    minUsPerOp: r1(Math.min(...wall)),
    maxUsPerOp: r1(Math.max(...wall)),
    opsPerSecond: Math.round(1e6 / us),
    medianCpuUsPerOp: r1(median(samples[name].map((sample) => sample.cpu))),
    /** What one core sustains when the journal is all it runs: the figure a loaded machine cannot hide. */
    cpuBoundOpsPerSecond: Math.round(1e6 / median(samples[name].map((sample) => sample.cpu))),
  };
});

const byName = (name: Variant) => rows.find((row) => row.variant === name)!;
const judge = (measured: number, target: number, atMost: boolean) => ({ target, measured, met: atMost ? measured <= target : measured >= target });
// Judged on wall time (what the issue asks) and on CPU time (what the code costs when the shared
// machine's other work is taken out); both are reported.
const targets = {
  wall: {
    batchedOpsPerSecond: judge(byName('sqlite batched').opsPerSecond, TARGET_BATCHED_OPS_PER_S, false),
    processUsPerOp: judge(byName('sqlite process').medianUsPerOp, TARGET_PROCESS_US_PER_OP, true),
  },
  cpu: {
    batchedOpsPerSecond: judge(byName('sqlite batched').cpuBoundOpsPerSecond, TARGET_BATCHED_OPS_PER_S, false),
    processUsPerOp: judge(byName('sqlite process').medianCpuUsPerOp, TARGET_PROCESS_US_PER_OP, true),
  },
};

console.log(`journal cost per operation (put + settle), median of ${rounds} alternating rounds; ops/round: ${ops} (power: ${powerOps}), batch ${batch}`);
console.log(
  `${'variant'.padEnd(16)} ${'µs/op'.padStart(9)} ${'min'.padStart(9)} ${'max'.padStart(9)} ${'ops/s'.padStart(9)} ${'cpu µs/op'.padStart(10)} ${'cpu ops/s'.padStart(10)}`,
);
for (const row of rows) {
  const cells = [row.medianUsPerOp, row.minUsPerOp, row.maxUsPerOp].map((v) => v.toFixed(1).padStart(9));
  console.log(
    `${row.variant.padEnd(16)} ${cells.join(' ')} ${String(row.opsPerSecond).padStart(9)} ${row.medianCpuUsPerOp.toFixed(1).padStart(10)} ${String(row.cpuBoundOpsPerSecond).padStart(10)}`,
  );
}
console.log(
  `load average while measuring: ${loadavg()
    .map((v) => v.toFixed(2))
    .join(' ')} on ${cpus().length} cores`,
);
for (const basis of ['wall', 'cpu'] as const) {
  const { batchedOpsPerSecond: batchedTarget, processUsPerOp: processTarget } = targets[basis];
  console.log(
    `targets (${basis} time): batched ≥ ${TARGET_BATCHED_OPS_PER_S} ops/s: ${batchedTarget.met ? 'met' : 'MISSED'} (${batchedTarget.measured}); ` +
      `process ≤ ${TARGET_PROCESS_US_PER_OP} µs/op: ${processTarget.met ? 'met' : 'MISSED'} (${processTarget.measured})`,
  );
}

const out = fileURLToPath(new URL('./results/journal.json', import.meta.url));
mkdirSync(join(out, '..'), { recursive: true });
writeFileSync(
  out,
  `${JSON.stringify(
    {
      benchmark: 'journal',
      command: 'npx tsx bench/journal.ts',
      date: new Date().toISOString(),
      machine: { node: process.version, cpu: cpus()[0]?.model ?? 'unknown', cores: cpus().length, loadavg: loadavg(), tmpdir: tmpdir() },
      parameters: { rounds, ops, powerOps, batch },
      rows,
      samplesUsPerOp: samples,
      targets,
    },
    null,
    2,
  )}\n`,
);
console.log(`wrote ${out}`);
