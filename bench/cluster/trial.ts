/**
 * One trial: a fresh cluster, the four apps, the clients' load; the fault done to the leader
 * after a warm-up, the load kept on until some seconds after it is undone; then every pending
 * operation resumed, the recovery workers given time to finish what they hold, and the history
 * checked against the primary that leads at the end. Everything is torn down, also on failure.
 *
 * @module
 */
import { cpSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startApps, type App } from './apps.js';
import { NODES, startCluster, type Cluster } from './cluster.js';
import { startDelayProxy } from './delay-proxy.js';
import { nodeMachine } from './netns.js';
import { FAULTS } from './faults.js';
import { checkHistory, type Attempt, type Verdict } from './history-check.js';
import { PG_PORT, type Dcs, type Replication } from './patroni-config.js';
import { currentLeader, pollLeaders, waitFor, type LeaderTimeline } from './rest.js';
import { countStarted, readServerState } from './server-state.js';
import { createWorkload, type Workload } from './workload.js';

/** A trial's settings. */
export interface TrialSpec {
  readonly replication: Replication;
  readonly dcs: Dcs;
  readonly fault: string;
  readonly trial: number;
  readonly concurrency: number;
  /** Load before the fault. */
  readonly warmupMs: number;
  /** Load after the fault is undone. */
  readonly afterMs: number;
}

/** A trial's outcome. */
export interface TrialResult extends LeaderTimeline {
  readonly spec: TrialSpec;
  readonly verdict: Verdict;
  readonly attempts: number;
  /** Attempts answered with a 5xx (`503` + `Retry-After` while there is no primary). */
  readonly status5xx: number;
  /** Attempts with no answer at all (connection refused or reset, timeout). */
  readonly noAnswer: number;
  /** The longest stretch with no attempt answered 2xx, from the fault on. */
  readonly longestGapMs: number;
  /** What each `oncely serve` logged about replication when it started. */
  readonly replicationAtStart: readonly string[];
  readonly seconds: number;
  /** Wall-clock times of the fault and its undoing, to read against the daemons' logs. */
  readonly faultAt: string;
  readonly healedAt: string;
  readonly leaderBefore: string;
  /** The node whose state was checked. */
  readonly leaderAfter: string;
}

/** Where a trial with violations leaves its daemons' logs and the violating keys' attempts. */
export const EVIDENCE_DIR = join(tmpdir(), 'oncely-cluster-evidence');

function keepEvidence(cluster: Cluster, spec: TrialSpec, verdict: Verdict, attempts: readonly Attempt[]): void {
  const dir = join(EVIDENCE_DIR, `${spec.replication}-${spec.dcs}-${spec.fault}-${spec.trial}-${Date.now()}`);
  mkdirSync(dir, { recursive: true });
  for (const node of cluster.nodes) cpSync(join(node.dir, 'patroni.log'), join(dir, `${node.name}.log`));
  cpSync(join(cluster.dir, 'haproxy.log'), join(dir, 'haproxy.log'));
  const keys = new Set(verdict.violations.map((v) => v.key));
  writeFileSync(join(dir, 'violations.json'), JSON.stringify({ violations: verdict.violations, attempts: attempts.filter((a) => keys.has(a.key)) }, null, 2));
  console.error(`[cluster] evidence kept in ${dir}`);
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Runs one trial. */
export async function runTrial(spec: TrialSpec): Promise<TrialResult> {
  const fault = FAULTS[spec.fault];
  if (!fault) throw new Error(`unknown fault ${spec.fault}; known: ${Object.keys(FAULTS).join(', ')}`);
  const started = performance.now();
  // The lossy link's latency is added by relays on the host (no netem here): then every app, and
  // HAProxy, reach the nodes through them for the whole trial.
  const proxies = spec.fault === 'lossy' ? await Promise.all(Array.from({ length: NODES }, (_, i) => startDelayProxy(nodeMachine(i).ip, PG_PORT))) : [];
  const viaProxy = (index: number): string => proxies[index]!.address;
  const cluster = await startCluster(spec.replication, spec.dcs, proxies.length > 0 ? viaProxy : undefined).catch(async (error: unknown) => {
    await Promise.all(proxies.map((proxy) => proxy.close()));
    throw error;
  });
  let apps: App[] = [];
  let workload: Workload | undefined;
  try {
    const hosts = proxies.length > 0 ? proxies.map((proxy) => proxy.address) : cluster.nodes.map((node) => `${node.machine.ip}:${PG_PORT}`);
    apps = await startApps([`postgres://postgres@${hosts.join(',')}/postgres`, `postgres://postgres@127.0.0.1:${cluster.haproxyPort}/postgres`]);
    const dir = join(cluster.dir, 'clients');
    mkdirSync(dir);
    workload = createWorkload(apps, dir, { concurrency: spec.concurrency, budgetMs: 45_000 });
    const leader = await currentLeader(cluster.nodes);
    if (!leader) throw new Error('no single leader before the fault');
    const poll = pollLeaders(cluster.nodes);
    let stop = false;
    const load = workload.run(() => stop);
    await sleep(spec.warmupMs);
    const faultAt = performance.now();
    const wall = { faultAt: new Date().toISOString(), healedAt: '' };
    await fault.inject({ cluster, leader, proxies });
    wall.healedAt = new Date().toISOString();
    await sleep(spec.afterMs);
    stop = true;
    await load;
    const timeline = await poll.stop();
    const survivor = await waitForLeader(cluster);
    await workload.resumeAll();
    await workload.lateRetry();
    await waitFor('recovery of started keys', 30_000, async () => (await countStarted(survivor.url).catch(() => 1)) === 0).catch(() => undefined);
    const primary = await waitForLeader(cluster);
    const verdict = checkHistory({
      operations: workload.operations,
      attempts: workload.attempts,
      server: await readServerState(primary.url, workload.operations),
      journals: await workload.journals(),
    });
    if (verdict.violations.length > 0) keepEvidence(cluster, spec, verdict, workload.attempts);
    return {
      spec,
      verdict,
      ...wall,
      leaderBefore: leader.name,
      leaderAfter: primary.name,
      ...timeline,
      ...attemptStats(workload.attempts, faultAt),
      replicationAtStart: apps.filter((app) => app.app === 'serve').map((app) => replicationState(app.replicationLine)),
      seconds: (performance.now() - started) / 1000,
    };
  } finally {
    await workload?.close();
    await Promise.all(apps.map((app) => app.stop()));
    cluster.destroy();
    await Promise.all(proxies.map((proxy) => proxy.close()));
  }
}

async function waitForLeader(cluster: Cluster): Promise<Cluster['nodes'][number]> {
  let leader: Cluster['nodes'][number] | undefined;
  await waitFor('single leader', 90_000, async () => (leader = await currentLeader(cluster.nodes)) !== undefined);
  return leader!;
}

function attemptStats(attempts: readonly Attempt[], faultAt: number): { attempts: number; status5xx: number; noAnswer: number; longestGapMs: number } {
  const oks = attempts
    .filter((a) => a.status !== undefined && a.status < 300 && a.endedAt >= faultAt)
    .map((a) => a.endedAt)
    .sort((a, b) => a - b);
  let longestGapMs = 0;
  let previous = faultAt;
  for (const at of oks) {
    longestGapMs = Math.max(longestGapMs, at - previous);
    previous = at;
  }
  return {
    attempts: attempts.length,
    status5xx: attempts.filter((a) => a.status !== undefined && a.status >= 500).length,
    noAnswer: attempts.filter((a) => a.status === undefined).length,
    longestGapMs,
  };
}

/** `synchronous`, `asynchronous`, … from the pino line `oncely serve` logged, or what it said instead. */
function replicationState(line: string | undefined): string {
  if (!line) return 'not logged';
  const parsed = JSON.parse(line) as { state?: string; msg?: string };
  return parsed.state ?? parsed.msg ?? line;
}
