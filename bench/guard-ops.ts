/**
 * The framework guard's first execution alone — no HTTP, no framework: `decide` for a new key
 * (an already-parsed JSON body, as after `express.json()`), then `complete` with a 201, over the
 * SQLite key store, ten at a time as the peer suites' ten connections. Prints the process's CPU
 * time per request: the figure to compare when changing the guard or the store's write path (run
 * it alternately in two worktrees, or under `valgrind --tool=callgrind` for instruction counts).
 *
 * Usage: `node --import tsx bench/guard-ops.ts [operations = 20000] [plain|tx]`.
 *
 * @module
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createGuard } from '../src/server/middleware/guard.js';
import { sqliteKeyStore } from '../src/server/store/sqlite.node.js';
import { CHARGE_SQL, EXECUTIONS_DDL, chargeParams, newPayment } from './peers/payment.js';

const operations = Number(process.argv[2] ?? 20_000);
const transaction = process.argv[3] === 'tx';
const CONCURRENCY = Number(process.env.GUARD_OPS_CONCURRENCY ?? 10);
const dir = mkdtempSync(join(tmpdir(), 'oncely-guard-ops-'));
const store = sqliteKeyStore({ path: join(dir, 'oncely.db') });
await store.migrate({ sqlite: `${EXECUTIONS_DDL};`, postgres: `${EXECUTIONS_DDL};` });
const guard = createGuard({ store, leaseMs: 10_000, transaction });
const input = { amount: 1250, currency: 'EUR', reference: 'guard-ops' };
const prefix = `guard-ops-${process.pid}-${Date.now().toString(36)}`;

async function firstExecution(key: string): Promise<void> {
  const decision = await guard.decide({
    clientId: 'bench',
    keyHeader: key,
    method: 'POST',
    route: '/pay',
    path: '/pay',
    contentType: 'application/json',
    body: { parsed: { ...input } },
    prefer: null,
  });
  if (decision.kind !== 'run') throw new Error(`${key}: ${decision.kind}`);
  const payment = newPayment(input);
  const tx = decision.execution.context.tx;
  if (tx) await tx.run(CHARGE_SQL, chargeParams(payment));
  const body = Buffer.from(JSON.stringify(payment));
  const answer = await decision.execution.complete({
    status: 201,
    headers: { 'content-type': 'application/json; charset=utf-8', 'content-length': String(body.length), etag: 'W/"7b-x"' },
    body,
  });
  if (answer.status !== 201) throw new Error(`${key}: ${answer.status}`);
}

let next = 0;
const run = (until: number): Promise<unknown> =>
  Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < until) await firstExecution(`${prefix}-${(next += 1)}`);
    }),
  );
try {
  await run(Math.min(2000, operations)); // warm-up: JIT, prepared statements, the first pages
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const from = next;
  await run(from + operations);
  const cpu = process.cpuUsage(cpu0);
  const done = next - from;
  console.log(
    `guard ${transaction ? 'tx' : 'plain'}: ${((cpu.user + cpu.system) / done).toFixed(1)} µs CPU per first execution (user ${(cpu.user / done).toFixed(1)}, system ${(cpu.system / done).toFixed(1)}), ` +
      `${((1000 * (performance.now() - t0)) / done).toFixed(1)} µs wall, ${done} operations`,
  );
} finally {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
}
