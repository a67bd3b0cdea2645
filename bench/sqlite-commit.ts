/**
 * The SQLite key store's write path with and without background checkpoints, side by side.
 *
 * Each operation is a first execution's writes — admission with its first phase, two recovery
 * points, the final response — for ten operations at a time (the group commit sees what a server
 * with ten connections sees). Rounds alternate between `checkpointIntervalMs: 0` (SQLite's own
 * checkpoints, inside commits) and the default worker-thread checkpointer, on fresh files.
 *
 * Usage: `npx tsx bench/sqlite-commit.ts [operations per round = 4000] [rounds = 5]`.
 *
 * @module
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sqliteKeyStore } from '../src/server/store/sqlite.node.js';
import type { KeyStore, Tx } from '../src/server/store/types.js';

const OPERATIONS = Number(process.argv[2] ?? 4000);
const ROUNDS = Number(process.argv[3] ?? 5);
const CONCURRENCY = 10;
const dir = mkdtempSync(join(tmpdir(), 'oncely-commit-bench-'));
const body = JSON.stringify({ amount: 1250, currency: 'EUR', reference: 'bench' });
const response = { status: 201, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ id: 'pay_1', status: 'succeeded', amount: 1250 }) };

async function operation(store: KeyStore, key: string): Promise<void> {
  const admitted = await store.admit(
    { clientId: 'bench', key, requestHash: 'a'.repeat(64), endpoint: 'POST /pay', requestBody: body, leaseMs: 10_000, ttlMs: 86_400_000 },
    {
      phase: { recoveryPoint: 'H1_DONE', leaseMs: 10_000, dataFrom: (id: string | undefined) => ({ payment: id }) },
      work: async (tx: Tx) => {
        await tx.run('INSERT INTO bench_effects (id, amount) VALUES ($1, $2)', [key, 1250]);
        return key;
      },
    },
  );
  if (!admitted.owned) throw new Error('not owned');
  for (const point of ['EXT1_SENT', 'EXT1_DONE']) {
    if (!(await store.write(admitted.lease, { kind: 'phase', recoveryPoint: point, leaseMs: 10_000 })).ok) throw new Error('lease lost');
  }
  if (!(await store.write(admitted.lease, { kind: 'finish', response })).ok) throw new Error('lease lost');
}

interface Round {
  readonly usPerOp: number;
  /** The slowest single operation, ms: what a checkpoint's fsync inside a commit does to the tail. */
  readonly worstMs: number;
}

async function round(name: string, checkpointIntervalMs: number, index: number): Promise<Round> {
  const path = join(dir, `${name}-${index}.db`);
  const store = sqliteKeyStore({ path, checkpointIntervalMs });
  await store.migrate({ sqlite: 'CREATE TABLE IF NOT EXISTS bench_effects (id TEXT PRIMARY KEY, amount INTEGER NOT NULL)', postgres: '' });
  let next = 0;
  let worst = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < OPERATIONS) {
        const key = `k${(next += 1)}`;
        const at = performance.now();
        await operation(store, key);
        worst = Math.max(worst, performance.now() - at);
      }
    }),
  );
  const elapsed = performance.now() - started;
  await store.close();
  for (const suffix of ['', '-wal', '-shm']) rmSync(path + suffix, { force: true });
  return { usPerOp: (1000 * elapsed) / OPERATIONS, worstMs: worst };
}

const results: Record<string, Round[]> = { inline: [], background: [] };
await round('warmup', 50, 0);
for (let index = 0; index < ROUNDS; index += 1) {
  results['inline']!.push(await round('inline', 0, index));
  results['background']!.push(await round('background', 50, index));
}
rmSync(dir, { recursive: true, force: true });

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
};
const ratios = results['background']!.map((b, i) => b.usPerOp / results['inline']![i]!.usPerOp);
for (const [name, rounds] of Object.entries(results)) {
  console.log(
    `${name.padEnd(10)} ${median(rounds.map((r) => r.usPerOp)).toFixed(1)} µs/op (${rounds.map((r) => r.usPerOp.toFixed(0)).join(' ')}), worst op ${median(rounds.map((r) => r.worstMs)).toFixed(1)} ms median`,
  );
}
console.log(`background ÷ inline per round: ${ratios.map((r) => r.toFixed(2)).join(' ')} (median ${median(ratios).toFixed(2)})`);
