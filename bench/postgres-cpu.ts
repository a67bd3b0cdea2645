/**
 * The benchmark app's first execution through the PostgreSQL store alone (no HTTP, no handler),
 * ten at a time as the server suite's ten connections, with what each one costs: this process's
 * CPU time, the CPU time of the PostgreSQL processes serving it (its database's backends, and the
 * WAL writer, checkpointer and background writer; the server must run on this machine), the WAL
 * written, the commits and the round trips, both counted in this process: a COMMIT, or a statement
 * sent outside BEGIN … COMMIT (autocommit), on the store's `pg` clients; a round trip is a
 * request/answer turn on a PostgreSQL socket. (`pg_stat_database.xact_commit` would count them on
 * the server, but a busy backend flushes its statistics only every second and an idle one after
 * ten: a delta read right after the run misses some.) It runs in a database of its own. On a machine whose cores Node and PostgreSQL share, these
 * decide throughput; unlike req/s they hardly move with the machine's noise. WAL is the whole
 * server's: run it on a server nothing else writes to for that column.
 *
 * Usage: `node --import tsx bench/postgres-cpu.ts [operations = 10000] [rounds = 1]`
 * (`ONCELY_PG_URL`, else `postgres://postgres@127.0.0.1:5432/test`: it creates a database of its
 * own on that server, and drops it).
 * Compare two commits by running it alternately in two checkouts.
 *
 * @module
 */
import { readFileSync } from 'node:fs';
import net from 'node:net';
import pg from 'pg';
import { postgresKeyStore } from '../src/server/postgres.js';
import type { Tx } from '../src/server/store/types.js';
import { CHARGE_SQL, EXECUTIONS_DDL, chargeParams, newPayment, type PaymentResult } from './peers/payment.js';

const operations = Number(process.argv[2] ?? 10_000);
const rounds = Number(process.argv[3] ?? 1);
const CONCURRENCY = 10;
const LEASE = 10_000;
const serverUrl = process.env['ONCELY_PG_URL'] ?? 'postgres://postgres@127.0.0.1:5432/test';
const schema = `oncely_pg_cpu_${process.pid}`;
const database = schema;
const url = Object.assign(new URL(serverUrl), { pathname: `/${database}` }).toString();

const server = new pg.Client({ connectionString: serverUrl });
await server.connect();
await server.query(`CREATE DATABASE ${database}`);
const admin = new pg.Client({ connectionString: url });
await admin.connect();

// Round trips: a write to a PostgreSQL socket after its last answer starts one (a corked batch of
// statements, or a pipeline sent before the answers, is one).
const AWAITING = Symbol('awaiting');
type Counted = net.Socket & { [AWAITING]?: boolean };
let roundTrips = 0;
const pgPort = Number(new URL(url).port || 5432);
const { write, emit } = net.Socket.prototype;
net.Socket.prototype.write = function (this: Counted, ...args: unknown[]) {
  if (this.remotePort === pgPort && !this[AWAITING]) {
    this[AWAITING] = true;
    roundTrips += 1;
  }
  return (write as (...a: unknown[]) => boolean).apply(this, args);
} as typeof write;
net.Socket.prototype.emit = function (this: Counted, event: string | symbol, ...args: unknown[]) {
  if (event === 'data') this[AWAITING] = false;
  return (emit as (...a: unknown[]) => boolean).call(this, event, ...args);
} as typeof emit;
// Commits: what each client's statements commit, following BEGIN … COMMIT per client.
const IN_TX = Symbol('inTx');
let commitCount = 0;
const query = pg.Client.prototype.query as (...a: unknown[]) => unknown;
pg.Client.prototype.query = function (this: pg.Client & { [IN_TX]?: boolean }, ...args: unknown[]) {
  const first = args[0] as string | { text?: string } | undefined;
  const text = typeof first === 'string' ? first : (first?.text ?? '');
  for (const statement of text
    .split(';')
    .map((t) => t.trim().toUpperCase())
    .filter(Boolean)) {
    if (statement.startsWith('BEGIN') || statement.startsWith('START TRANSACTION')) this[IN_TX] = true;
    else if (statement.startsWith('COMMIT') || statement.startsWith('END')) {
      this[IN_TX] = false;
      commitCount += 1;
    } else if (statement.startsWith('ROLLBACK')) this[IN_TX] = false;
    else if (!this[IN_TX]) commitCount += 1;
  }
  return query.apply(this, args);
} as typeof pg.Client.prototype.query;
/** Fields of /proc/<pid>/stat after the command name (field 3 onwards). */
const statOf = (pid: string | number): string[] => {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
};
/**
 * CPU time (ms) of the PostgreSQL processes serving this run: the backends of its database (the
 * store's pool, kept open through the run) and the WAL writer, checkpointer and background writer.
 */
const serverCpuMs = async (): Promise<number> => {
  const { rows } = await admin.query<{ pid: number }>(
    `SELECT pid FROM pg_stat_activity WHERE datname = current_database() OR backend_type IN ('walwriter', 'checkpointer', 'background writer')`,
  );
  let ticks = 0;
  for (const { pid } of rows) {
    try {
      const fields = statOf(pid);
      ticks += Number(fields[11]) + Number(fields[12]);
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
      phase: {
        recoveryPoint: 'H1_DONE',
        leaseMs: LEASE,
        dataFrom: (produced: { payment: PaymentResult } | undefined) => produced,
        after: { recoveryPoint: 'EXT1_SENT' },
      },
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
  for (let round = 0; round < rounds; round += 1) {
    const lsn0 = await walLsn();
    const db0 = await serverCpuMs();
    const trips0 = roundTrips;
    const commits0 = commitCount;
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    const from = next;
    await run(from + operations);
    const cpu = process.cpuUsage(cpu0);
    const trips = roundTrips - trips0;
    const committed = commitCount - commits0;
    const db = (await serverCpuMs()) - db0;
    const wall = performance.now() - t0;
    const wal = await walBytes(lsn0, await walLsn());
    const done = next - from;
    if (round === 0)
      console.log(
        '| per first execution | Node CPU µs | of which system | PostgreSQL CPU µs | WAL bytes | round trips | commits | wall µs |\n|---|---:|---:|---:|---:|---:|---:|---:|',
      );
    console.log(
      `| round ${round + 1} (${done} operations) | ${((cpu.user + cpu.system) / done).toFixed(0)} | ${(cpu.system / done).toFixed(0)} | ${((1000 * db) / done).toFixed(0)} | ` +
        `${(wal / done).toFixed(0)} | ${(trips / done).toFixed(2)} | ${(committed / done).toFixed(2)} | ${((1000 * wall) / done).toFixed(0)} |`,
    );
  }
} finally {
  await store.close();
  await admin.end();
  await server.query(`DROP DATABASE IF EXISTS ${database}`);
  await server.end();
}
