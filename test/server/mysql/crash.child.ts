/**
 * Child process of crash.test.ts (this folder): the crash matrix's payment (`../crash.child.ts`)
 * on `mysqlKeyStore`. Its external systems keep their state in the same database (so it survives
 * the SIGKILL), and honour their derived keys.
 *
 * - `crash <url> <point>`: posts one payment and SIGKILLs itself right after `point` commits.
 * - `retry <url>`: posts the same payment like a client (waiting out 409s) and prints the result.
 * - `worker <url>`: runs the recovery worker until the row is finished, then posts the payment.
 */
import { createIdempotencyHandler, createRecoveryWorker } from '../../../src/server/index.js';
import type { ExternalStep, IdempotentOperation, Tx } from '../../../src/server/index.js';
import { mysqlKeyStore } from '../../../src/server/mysql.js';

const [mode = '', url = '', point = ''] = process.argv.slice(2);
const store = mysqlKeyStore({ uri: url });
await store.migrate?.({
  mysql: `CREATE TABLE IF NOT EXISTS ext_applied (kn VARCHAR(255) PRIMARY KEY, system INT NOT NULL);
          CREATE TABLE IF NOT EXISTS ext_calls (kn VARCHAR(255) NOT NULL);
          CREATE TABLE IF NOT EXISTS step_runs (step VARCHAR(64) NOT NULL);
          CREATE TABLE IF NOT EXISTS ledger (idem_key VARCHAR(255) NOT NULL);`,
});

const count = async (sql: string, params: unknown[] = []) => Number((await store.transaction((tx) => tx.get<{ n: number }>(sql, params)))?.n ?? 0);

const external = (system: number): ExternalStep<{ amount: number }> => ({
  kind: 'external',
  system,
  sent: `EXT${system}_SENT`,
  done: `EXT${system}_DONE`,
  async call(_ctx, kn) {
    await store.transaction(async (tx) => {
      await tx.run('INSERT INTO ext_calls (kn) VALUES ($1)', [kn]);
      await tx.run('INSERT INTO ext_applied (kn, system) VALUES ($1, $2) ON DUPLICATE KEY UPDATE kn = kn', [kn, system]);
    });
    return { outcome: 'done', data: { [`ext${system}`]: kn } };
  },
  async probe(_ctx, kn) {
    const found = await count('SELECT COUNT(*) AS n FROM ext_applied WHERE kn = $1', [kn]);
    return found === 1 ? { outcome: 'done', data: { [`ext${system}`]: kn } } : { outcome: 'absent' };
  },
});
const local = (name: string) => ({
  kind: 'local' as const,
  point: name,
  run: async (_ctx: unknown, tx: Tx) => {
    await tx.run('INSERT INTO step_runs (step) VALUES ($1)', [name]);
  },
});
const operation: IdempotentOperation<{ amount: number }> = {
  method: 'POST',
  path: '/v1/payments',
  parse: (body) => ({ ok: true, input: body as { amount: number } }),
  steps: [local('H1_DONE'), external(1), local('H2_DONE'), external(2)],
  final: {
    kind: 'final',
    async run(ctx, tx) {
      await tx.run('INSERT INTO ledger (idem_key) VALUES ($1)', [ctx.key]);
      return { status: 201, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ id: ctx.key, amount: ctx.input.amount }) };
    },
  },
};
const handler = createIdempotencyHandler({
  store,
  operations: [operation],
  authenticate: () => 'acme',
  leaseMs: 300,
  hooks: {
    afterCommit(committed) {
      if (mode === 'crash' && committed === point) process.kill(process.pid, 'SIGKILL');
    },
  },
});

const post = () =>
  handler.handle(
    new Request('http://oncely.test/v1/payments', {
      method: 'POST',
      headers: { 'idempotency-key': 'crash-key', 'content-type': 'application/json' },
      body: '{"amount":500}',
    }),
  );

if (mode === 'worker') {
  const worker = createRecoveryWorker({ store, handler });
  for (let i = 0; i < 100 && (await store.load('acme', 'crash-key'))?.state !== 'finished'; i += 1) {
    await worker.runOnce();
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
let response = await post();
for (let i = 0; i < 50 && response?.status === 409; i += 1) {
  await new Promise((resolve) => setTimeout(resolve, 100));
  response = await post();
}
const result = {
  status: response?.status,
  replay: response?.headers.get('idempotency-replay') ?? null,
  recoveries: handler.metrics.snapshot().events.recoveries,
  ledger: await count('SELECT COUNT(*) AS n FROM ledger'),
  h1: await count("SELECT COUNT(*) AS n FROM step_runs WHERE step = 'H1_DONE'"),
  h2: await count("SELECT COUNT(*) AS n FROM step_runs WHERE step = 'H2_DONE'"),
  applied1: await count('SELECT COUNT(*) AS n FROM ext_applied WHERE system = 1'),
  applied2: await count('SELECT COUNT(*) AS n FROM ext_applied WHERE system = 2'),
};
process.stdout.write(JSON.stringify(result));
await store.close?.();
