/**
 * The benchmark app's first execution through a key store alone — no HTTP, no handler: admission
 * with its first local step (one INSERT of the app's), `EXT1_SENT` with it, then the outcome mark
 * `EXT1_DONE` with the final response — ten at a time, as the server suite's ten connections.
 * Prints the process's CPU time per operation: the figure to compare when changing a store's write
 * path (run it alternately in two worktrees).
 *
 * Usage: `node --import tsx bench/store-ops.ts [sqlite|postgres] [operations = 20000]`
 * (`postgres` uses `ONCELY_PG_URL`, else `postgres://postgres@127.0.0.1:5432/test`, in a schema of
 * its own that it drops).
 *
 * @module
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sqliteKeyStore } from '../src/server/store/sqlite.node.js';
import type { KeyStore, Tx } from '../src/server/store/types.js';
import { CHARGE_SQL, EXECUTIONS_DDL, chargeParams, newPayment, type PaymentResult } from './peers/payment.js';

const dialect = process.argv[2] ?? 'sqlite';
const operations = Number(process.argv[3] ?? 20_000);
const CONCURRENCY = 10;
if (dialect !== 'sqlite' && dialect !== 'postgres') throw new Error('usage: store-ops.ts [sqlite|postgres] [operations]');
const pgUrl = process.env['ONCELY_PG_URL'] ?? 'postgres://postgres@127.0.0.1:5432/test';
const schema = `oncely_store_ops_${process.pid}`;
const dir = mkdtempSync(join(tmpdir(), 'oncely-store-ops-'));

async function open(): Promise<KeyStore> {
  if (dialect === 'sqlite') return sqliteKeyStore({ path: join(dir, 'oncely.db') });
  const { postgresKeyStore } = await import('../src/server/store/postgres.node.js');
  return postgresKeyStore({ connectionString: pgUrl, schema });
}

const store = await open();
await store.migrate?.({ sqlite: `${EXECUTIONS_DDL};`, postgres: `${EXECUTIONS_DDL};` });
const body = JSON.stringify({ amount: 1250, currency: 'EUR', reference: 'store-ops' });
const prefix = `store-ops-${process.pid}-${Date.now().toString(36)}`;
const LEASE = 10_000;

async function firstExecution(key: string): Promise<void> {
  const admitted = await store.admit(
    { clientId: 'bench', key, requestHash: 'a'.repeat(64), endpoint: 'POST /pay', requestBody: body, leaseMs: LEASE, ttlMs: 86_400_000 },
    {
      phase: {
        recoveryPoint: 'H1_DONE',
        leaseMs: LEASE,
        dataFrom: (produced: { payment: PaymentResult } | undefined) => produced,
        after: { recoveryPoint: 'EXT1_SENT' },
      },
      work: async (tx: Tx) => {
        const payment = newPayment({ amount: 1250, currency: 'EUR', reference: 'store-ops' });
        await tx.run(CHARGE_SQL, chargeParams(payment));
        return { payment };
      },
    },
  );
  if (!admitted.owned || !admitted.first?.value) throw new Error(`${key}: not admitted`);
  const { payment } = admitted.first.value as { payment: PaymentResult };
  const response = { status: 201, headers: { 'content-type': 'application/json' }, body: JSON.stringify(payment) };
  const finished = await store.write(admitted.lease, { kind: 'finish', response, before: { recoveryPoint: 'EXT1_DONE', data: {} } });
  if (!finished.ok) throw new Error(`${key}: lease lost`);
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
    `${dialect}: ${((cpu.user + cpu.system) / done).toFixed(1)} µs CPU per first execution (user ${(cpu.user / done).toFixed(1)}, system ${(cpu.system / done).toFixed(1)}), ` +
      `${((1000 * (performance.now() - t0)) / done).toFixed(1)} µs wall, ${done} operations`,
  );
} finally {
  await store.close?.();
  rmSync(dir, { recursive: true, force: true });
  if (dialect === 'postgres') {
    const { default: pg } = await import('pg');
    const client = new pg.Client({ connectionString: pgUrl });
    await client.connect();
    await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await client.end();
  }
}
