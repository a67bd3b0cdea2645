/**
 * The benchmark app's first execution through the PostgreSQL store alone (no HTTP, no handler),
 * ten at a time as the server suite's ten connections, with what each one costs: this process's
 * CPU time, the CPU time of the PostgreSQL server's processes (backends, WAL writer, …; the server
 * must run on this machine) and the WAL it writes. On a machine whose cores Node and PostgreSQL
 * share, these decide throughput; unlike req/s they hardly move with the machine's noise.
 *
 * Usage: `node --import tsx bench/postgres-cpu.ts [operations = 10000] [rounds = 1]`
 * (`ONCELY_PG_URL`, else `postgres://postgres@127.0.0.1:5432/test`; a schema of its own, dropped).
 * Compare two commits by running it alternately in two checkouts.
 *
 * @module
 */
import { readFileSync, readdirSync } from 'node:fs';
import pg from 'pg';
import { postgresKeyStore } from '../src/server/store/postgres.node.js';
import type { Tx } from '../src/server/store/types.js';
import { CHARGE_SQL, EXECUTIONS_DDL, chargeParams, newPayment, type PaymentResult } from './peers/payment.js';

const operations = Number(process.argv[2] ?? 10_000);
const rounds = Number(process.argv[3] ?? 1);
const CONCURRENCY = 10;
const LEASE = 10_000;
const url = process.env['ONCELY_PG_URL'] ?? 'postgres://postgres@127.0.0.1:5432/test';
const schema = `oncely_pg_cpu_${process.pid}`;

const admin = new pg.Client({ connectionString: url });
await admin.connect();
const backend = (await admin.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
/** Fields of /proc/<pid>/stat after the command name (field 3 onwards). */
const statOf = (pid: string | number): string[] => {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
};
const postmaster = statOf(backend)[1]!;
/**
 * CPU time of the server (ms): its live processes, and through the postmaster's children fields
 * those that exited (connections closed during the run).
 */
const serverCpuMs = (): number => {
  const own = statOf(postmaster);
  let ticks = Number(own[11]) + Number(own[12]) + Number(own[13]) + Number(own[14]);
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid) || pid === postmaster) continue;
    try {
      const fields = statOf(pid);
      if (fields[1] === postmaster) ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      // exited between the listing and the read
    }
  }
  return ticks * 10;
};
const walLsn = async (): Promise<string> => (await admin.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn')).rows[0]!.lsn;
const walBytes = async (from: string, to: string): Promise<number> =>
  Number((await admin.query<{ n: string }>('SELECT pg_wal_lsn_diff($1, $2)::text AS n', [to, from])).rows[0]!.n);

const store = postgresKeyStore({ connectionString: url, schema });
await store.migrate({ sqlite: `${EXECUTIONS_DDL};`, postgres: `${EXECUTIONS_DDL};` });
const body = JSON.stringify({ amount: 1250, currency: 'EUR', reference: 'postgres-cpu' });
const prefix = `pg-cpu-${process.pid}-${Date.now().toString(36)}`;

async function firstExecution(key: string): Promise<void> {
  const admitted = await store.admit(
    { clientId: 'bench', key, requestHash: 'a'.repeat(64), endpoint: 'POST /pay', requestBody: body, leaseMs: LEASE, ttlMs: 86_400_000 },
    {
      phase: { recoveryPoint: 'H1_DONE', leaseMs: LEASE, dataFrom: (produced: { payment: PaymentResult } | undefined) => produced, after: { recoveryPoint: 'EXT1_SENT' } },
      work: async (tx: Tx) => {
        const payment = newPayment({ amount: 1250, currency: 'EUR', reference: 'postgres-cpu' });
        await tx.run(CHARGE_SQL, chargeParams(payment));
        return { payment };
      },
    },
  );
  if (!admitted.owned || !admitted.first?.value) throw new Error(`${key}: not admitted`);
  const { payment } = admitted.first.value as { payment: PaymentResult };
  const response = { status: 201, headers: { 'content-type': 'application/json' }, body: JSON.stringify(payment) };
  const finished = await store.finish(admitted.lease, response, undefined, { recoveryPoint: 'EXT1_DONE', data: {} });
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
  for (let round = 0; round < rounds; round += 1) {
    const lsn0 = await walLsn();
    const db0 = serverCpuMs();
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    const from = next;
    await run(from + operations);
    const cpu = process.cpuUsage(cpu0);
    const db = serverCpuMs() - db0;
    const wall = performance.now() - t0;
    const wal = await walBytes(lsn0, await walLsn());
    const done = next - from;
    console.log(
      `node ${((cpu.user + cpu.system) / done).toFixed(0)} µs (system ${(cpu.system / done).toFixed(0)}), postgres ${((1000 * db) / done).toFixed(0)} µs, ` +
        `WAL ${(wal / done).toFixed(0)} B per first execution; ${((1000 * wall) / done).toFixed(0)} µs wall, ${done} operations`,
    );
  }
} finally {
  await store.close();
  await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await admin.end();
}
