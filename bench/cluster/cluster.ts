/**
 * A Patroni + etcd PostgreSQL 15 cluster, from Debian's packages, built and torn down by the run:
 * one etcd member and three Patroni nodes, each in its own network namespace (`netns.ts`), and
 * HAProxy on the host's loopback routing to whichever node answers Patroni's `/primary`.
 *
 * `destroy()` kills every process in the namespaces (etcd, Patroni, PostgreSQL), HAProxy, the
 * namespaces, the bridge and the data directory; it is safe to call on a half-built cluster and
 * twice. `teardownLeftovers()` does the same from the fixed names alone, for a run that died.
 *
 * @module
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../failover/cluster.js';
import { ETCD, createNetwork, destroyNetwork, nodeMachine, type Machine } from './netns.js';
import { PG_PORT, haproxyConfig, patroniYaml, type Dcs, type Replication } from './patroni-config.js';
import { memberStates, waitFor } from './rest.js';

export const NODES = 3;
const DIR_PREFIX = 'onc-cluster-';

/** One Patroni node. */
export interface PgNode {
  readonly name: string;
  readonly machine: Machine;
  readonly dir: string;
  /** `postgres://postgres@IP:5432/postgres` */
  readonly url: string;
}

/** A running cluster. */
export interface Cluster {
  readonly replication: Replication;
  readonly nodes: readonly PgNode[];
  readonly dir: string;
  /** HAProxy's loopback port (routes to the node whose `/primary` answers 200). */
  readonly haproxyPort: number;
  /** Starts Patroni again on a node whose processes were killed. */
  restart(node: PgNode): void;
  destroy(): void;
}

const machines = (): Machine[] => [ETCD, ...Array.from({ length: NODES }, (_, i) => nodeMachine(i))];

/** Spawns `args` detached (its own process group), stdout and stderr to `log`. */
function daemon(args: readonly string[], log: string, env: NodeJS.ProcessEnv = {}): ChildProcess {
  const out = openSync(log, 'a');
  const child = spawn(args[0]!, args.slice(1), { detached: true, stdio: ['ignore', out, out], env: { ...process.env, ...env } });
  child.unref();
  return child;
}

function startEtcd(dir: string): void {
  const url = (port: number): string => `http://${ETCD.ip}:${port}`;
  daemon(
    [
      'ip',
      'netns',
      'exec',
      ETCD.ns,
      'etcd',
      '--name=onc-etcd',
      `--data-dir=${join(dir, 'etcd')}`,
      `--listen-client-urls=${url(2379)}`,
      `--advertise-client-urls=${url(2379)}`,
      `--listen-peer-urls=${url(2380)}`,
      `--initial-advertise-peer-urls=${url(2380)}`,
      `--initial-cluster=onc-etcd=${url(2380)}`,
      // Patroni's `etcd` module speaks the v2 API, off by default in etcd 3.4.
      '--enable-v2=true',
    ],
    join(dir, 'etcd.log'),
  );
}

/** Patroni as user postgres (PostgreSQL refuses root) inside the node's namespace. */
function startPatroni(node: PgNode): void {
  daemon(
    ['ip', 'netns', 'exec', node.machine.ns, 'setpriv', '--reuid=postgres', '--regid=postgres', '--init-groups', 'patroni', join(node.dir, 'patroni.yml')],
    join(node.dir, 'patroni.log'),
    { HOME: node.dir },
  );
}

/**
 * Builds the network, starts etcd, the three Patroni nodes and HAProxy, and waits until a leader
 * serves and both replicas stream (with a synchronous standby unless `async`). `via` maps a node's
 * index to the address HAProxy should forward to instead of the node itself (a latency proxy).
 *
 * @example
 * ```ts
 * const cluster = await startCluster('sync', 'etcd');
 * try { … } finally { cluster.destroy(); }
 * ```
 */
export async function startCluster(replication: Replication, dcs: Dcs, via?: (index: number) => string): Promise<Cluster> {
  const dir = mkdtempSync(join(tmpdir(), DIR_PREFIX));
  // mkdtemp makes it 0700: user postgres must reach its node's directory inside.
  chmodSync(dir, 0o755);
  const nodes: PgNode[] = Array.from({ length: NODES }, (_, i) => {
    const machine = nodeMachine(i);
    return { name: `pg${i + 1}`, machine, dir: join(dir, `pg${i + 1}`), url: `postgres://postgres@${machine.ip}:${PG_PORT}/postgres` };
  });
  let haproxy: ChildProcess | undefined;
  const destroy = (): void => {
    if (haproxy?.pid !== undefined) killGroup(haproxy.pid);
    destroyNetwork(machines());
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    createNetwork(machines());
    startEtcd(dir);
    for (const node of nodes) {
      mkdirSync(node.dir, { mode: 0o700 });
      chownSync(node.dir, 101, 104);
      writeFileSync(join(node.dir, 'patroni.yml'), patroniYaml(node.name, node.machine, node.dir, replication, dcs));
      startPatroni(node);
    }
    const haproxyPort = await freePort();
    const config = join(dir, 'haproxy.cfg');
    writeFileSync(
      config,
      haproxyConfig(
        haproxyPort,
        nodes.map((node, i) => ({ name: node.name, machine: node.machine, ...(via ? { via: via(i) } : {}) })),
      ),
    );
    haproxy = daemon(['haproxy', '-db', '-f', config], join(dir, 'haproxy.log'));
    writeFileSync(join(dir, 'haproxy.pid'), String(haproxy.pid));
    await waitHealthy(nodes, replication, 120_000);
    return { replication, nodes, dir, haproxyPort, restart: startPatroni, destroy };
  } catch (error) {
    const logs = logTails(dir, nodes);
    destroy();
    throw new Error(`${(error as Error).message}\n${logs}`, { cause: error });
  }
}

/** The last lines of each daemon's log, for a bring-up that failed. */
function logTails(dir: string, nodes: readonly PgNode[]): string {
  const tail = (file: string): string => {
    try {
      return `--- ${file}\n${readFileSync(file, 'utf8').split('\n').slice(-15).join('\n')}`;
    } catch {
      return `--- ${file}: none`;
    }
  };
  return [join(dir, 'etcd.log'), join(dir, 'haproxy.log'), ...nodes.map((node) => join(node.dir, 'patroni.log'))].map(tail).join('\n');
}

/** Until one leader runs and every replica streams, with a synchronous standby unless `async`. */
export async function waitHealthy(nodes: readonly PgNode[], replication: Replication, timeoutMs: number): Promise<void> {
  await waitFor(`a leader and ${nodes.length - 1} streaming replicas (${replication})`, timeoutMs, async () => {
    const states = await memberStates(nodes);
    const running = states.filter((s) => s.state === 'running' || s.state === 'streaming');
    const leaders = states.filter((s) => s.role === 'leader');
    const sync = states.filter((s) => s.role === 'sync_standby');
    return running.length === nodes.length && leaders.length === 1 && (replication === 'async' || sync.length >= 1);
  });
}

function killGroup(pid: number): void {
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // gone
  }
}

/** Removes what a run that died left behind: the namespaces, the bridge, HAProxy, the data directories. */
export function teardownLeftovers(): void {
  destroyNetwork(machines());
  for (const entry of readdirSync(tmpdir())) {
    if (!entry.startsWith(DIR_PREFIX)) continue;
    const pidFile = join(tmpdir(), entry, 'haproxy.pid');
    if (existsSync(pidFile)) killGroup(Number(readFileSync(pidFile, 'utf8')));
    rmSync(join(tmpdir(), entry), { recursive: true, force: true });
  }
}
