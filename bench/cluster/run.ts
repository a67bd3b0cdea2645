/**
 * The cluster matrix: for each replication mode and each fault, `--trials` trials (`trial.ts`),
 * each on a fresh Patroni + etcd cluster; prints one table row per trial and writes
 * `bench/results/cluster.json`. Needs root (network namespaces, iptables) and Debian's
 * `patroni etcd-server haproxy iptables iproute2` and PostgreSQL 15.
 *
 * Usage: `npm run cluster -- [--faults kill,partition,etcd-cut,pause,switchover,lossy,cancel-sync]
 * [--replication sync,strict,async] [--dcs etcd,etcd3] [--trials 3] [--concurrency 6] [--short] [--out FILE]`.
 * `--short`: one trial of `kill` under `sync`, the CI run. `--teardown`: remove what a run that
 * died left behind, and exit.
 *
 * @module
 */
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { ROOT } from '../lib/proc.js';
import { killApps } from './apps.js';
import { teardownLeftovers } from './cluster.js';
import { FAULTS } from './faults.js';
import type { Dcs, Replication } from './patroni-config.js';
import { formatRow, formatSummary, startupCheckHolds, TABLE_HEADER } from './table.js';
import { runTrial, type TrialResult, type TrialSpec } from './trial.js';

const { values } = parseArgs({
  options: {
    // `cancel-sync` only on request: it is meant for `strict` (see `faults.ts`).
    faults: {
      type: 'string',
      default: Object.keys(FAULTS)
        .filter((name) => name !== 'cancel-sync')
        .join(','),
    },
    replication: { type: 'string', default: 'sync,strict,async' },
    dcs: { type: 'string', default: 'etcd' },
    trials: { type: 'string', default: '3' },
    concurrency: { type: 'string', default: '6' },
    short: { type: 'boolean', default: false },
    teardown: { type: 'boolean', default: false },
    out: { type: 'string' },
  },
});

// One run at a time: a second one would tear down the first's namespaces (the names are fixed).
const LOCK = '/tmp/onc-cluster.lock';
const holder = existsSync(LOCK) ? Number(readFileSync(LOCK, 'utf8')) : undefined;
if (holder !== undefined && holder !== process.pid && isAlive(holder)) {
  console.error(`[cluster] another run (pid ${holder}) holds ${LOCK}: wait for it, or stop it`);
  process.exit(2);
}
writeFileSync(LOCK, String(process.pid));
process.once('exit', () => rmSync(LOCK, { force: true }));
teardownLeftovers();
if (values.teardown) process.exit(0);
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    killApps();
    teardownLeftovers();
    process.exit(130);
  });
}

const faults = values.short ? ['kill'] : values.faults.split(',');
const modes = (values.short ? ['sync'] : values.replication.split(',')) as Replication[];
const stores = (values.short ? ['etcd'] : values.dcs.split(',')) as Dcs[];
const trials = values.short ? 1 : Number(values.trials);
const specs: TrialSpec[] = modes.flatMap((replication) =>
  stores.flatMap((dcs) =>
    faults.flatMap((fault) =>
      Array.from({ length: trials }, (_, i) => ({
        replication,
        dcs,
        fault,
        trial: i + 1,
        concurrency: Number(values.concurrency),
        warmupMs: values.short ? 3000 : 5000,
        afterMs: 10_000,
      })),
    ),
  ),
);
const results: TrialResult[] = [];
let failed = 0;

/** Prints a trial's row, and on stderr what it broke; counts a startup check that misreported. */
function report(result: TrialResult): void {
  const { replication, dcs, fault, trial } = result.spec;
  const name = `${replication} ${dcs} ${fault} #${trial}`;
  console.log(formatRow(result));
  if (!startupCheckHolds(result)) {
    failed += 1;
    console.error(`[cluster] ${name}: oncely serve's startup check said ${result.replicationAtStart.join(', ')}`);
  }
  for (const v of result.verdict.violations.slice(0, 10)) console.error(`[cluster] ${name} ${v.property} ${v.key}: ${v.detail}`);
}

console.log(TABLE_HEADER);
try {
  for (const spec of specs) {
    try {
      const result = await runTrial(spec);
      results.push(result);
      report(result);
    } catch (error) {
      failed += 1;
      console.error(`[cluster] ${spec.replication} ${spec.dcs} ${spec.fault} #${spec.trial} did not run: ${(error as Error).message}`);
    }
  }
} finally {
  teardownLeftovers();
}
if (results.length > 0) console.log(`\n${formatSummary(results)}`);
// The short run (CI) writes under bench/results/tmp/, which git ignores.
const file = values.out ?? join(ROOT, values.short ? 'bench/results/tmp/cluster-short.json' : 'bench/results/cluster.json');
mkdirSync(dirname(file), { recursive: true });
writeFileSync(file, `${JSON.stringify({ at: new Date().toISOString(), results }, null, 2)}\n`);
const violations = results.reduce((sum, r) => sum + r.verdict.violations.length, 0);
const syncViolations = results.filter((r) => r.spec.replication !== 'async').reduce((sum, r) => sum + r.verdict.violations.length, 0);
console.error(
  `[cluster] ${results.length} trials, ${failed} did not run or misreported replication, ${violations} violations (${syncViolations} with synchronous replication)`,
);
// Synchronous replication must hold: a violation there, a trial that could not run, or a startup
// check that misreports the replication, fails the command.
process.exit(failed > 0 || syncViolations > 0 ? 1 : 0);

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
