/**
 * The faults, each done to the node that leads when it starts, and undone (healed, resumed,
 * restarted) before it returns:
 *
 * | name | what happens to the leader |
 * |---|---|
 * | `kill` | every process in its namespace (Patroni, PostgreSQL) gets SIGKILL — the machine dies; Patroni is started again 20 s later and rejoins (`pg_rewind`) |
 * | `partition` | iptables drops every packet in and out of its namespace for 30 s: clients that still hold connections to it hang |
 * | `etcd-cut` | iptables drops only etcd's address for 30 s: clients still reach it; Patroni must demote it before its leader key expires |
 * | `pause` | every process in its namespace gets SIGSTOP for 20 s, then SIGCONT: it wakes up believing it leads |
 * | `switchover` | `patronictl switchover --force` to a replica, under load |
 * | `lossy` | 5 % of the packets between every node and the apps' host are dropped, both ways, and 50 ms added each way (`delay-proxy.ts`: no netem here), for 30 s |
 * | `cancel-sync` | cut off from its standbys only (it keeps etcd and its clients), so every commit waits for a standby; for 10 s every such wait is cancelled (`pg_cancel_backend`, as an operator or a tool would: PostgreSQL answers that COMMIT with success and a WARNING, the commit on the leader alone); then SIGKILL, as `kill`. Meaningful with `strict` (without it Patroni turns replication asynchronous when the standby is gone) |
 *
 * @module
 */
import { sh, cutFrom, heal, lossyToHost, partition, signalAll, ETCD } from './netns.js';
import type { Cluster, PgNode } from './cluster.js';
import type { DelayProxy } from './delay-proxy.js';
import { join } from 'node:path';
import pg from 'pg';
import { memberStates } from './rest.js';

/** A fault's victim and its cluster. */
export interface FaultContext {
  readonly cluster: Cluster;
  readonly leader: PgNode;
  /** The relays between the apps and each node, when the trial has them (the lossy link's latency). */
  readonly proxies: readonly DelayProxy[];
}

export interface Fault {
  readonly name: string;
  /** Does the fault, waits it out, undoes it. */
  inject(ctx: FaultContext): Promise<void>;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Cancels, for `ms`, every commit of `url`'s server waiting for a standby; resolves with how many it cancelled. */
async function cancelSyncWaits(url: string, ms: number): Promise<number> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000, query_timeout: 2000 });
  client.on('error', () => undefined);
  let cancelled = 0;
  try {
    await client.connect();
    for (const until = Date.now() + ms; Date.now() < until; await sleep(100)) {
      const { rows } = await client.query<{ n: number }>("SELECT count(pg_cancel_backend(pid))::int AS n FROM pg_stat_activity WHERE wait_event = 'SyncRep'");
      cancelled += rows[0]?.n ?? 0;
    }
  } finally {
    await client.end().catch(() => undefined);
  }
  return cancelled;
}

/** Every fault, by name. */
export const FAULTS: Readonly<Record<string, Fault>> = {
  kill: {
    name: 'kill',
    async inject({ cluster, leader }) {
      signalAll(leader.machine.ns, 'SIGKILL');
      await sleep(20_000);
      cluster.restart(leader);
    },
  },
  partition: {
    name: 'partition',
    async inject({ leader }) {
      partition(leader.machine.ns);
      await sleep(30_000);
      heal(leader.machine.ns);
    },
  },
  'etcd-cut': {
    name: 'etcd-cut',
    async inject({ leader }) {
      cutFrom(leader.machine.ns, ETCD.ip);
      await sleep(30_000);
      heal(leader.machine.ns);
    },
  },
  pause: {
    name: 'pause',
    async inject({ leader }) {
      signalAll(leader.machine.ns, 'SIGSTOP');
      await sleep(20_000);
      signalAll(leader.machine.ns, 'SIGCONT');
    },
  },
  switchover: {
    name: 'switchover',
    async inject({ cluster, leader }) {
      // In synchronous mode Patroni only switches over to the synchronous standby.
      const members = await memberStates(cluster.nodes);
      const candidate = members.find((m) => m.role === 'sync_standby') ?? members.find((m) => m.name !== leader.name && m.role !== 'leader')!;
      sh('patronictl', ['-c', join(leader.dir, 'patroni.yml'), 'switchover', '--leader', leader.name, '--candidate', candidate.name, '--force']);
      await sleep(10_000);
    },
  },
  'cancel-sync': {
    name: 'cancel-sync',
    async inject({ cluster, leader }) {
      for (const node of cluster.nodes) if (node !== leader) cutFrom(leader.machine.ns, node.machine.ip);
      const cancelled = await cancelSyncWaits(leader.url, 10_000).catch((error: unknown) => {
        console.error(`[cluster] cancel-sync: ${String(error)}`);
        return 0;
      });
      console.error(`[cluster] cancel-sync: ${cancelled} waits for the standby cancelled on ${leader.name}`);
      signalAll(leader.machine.ns, 'SIGKILL');
      heal(leader.machine.ns);
      await sleep(20_000);
      cluster.restart(leader);
    },
  },
  lossy: {
    name: 'lossy',
    async inject({ cluster, proxies }) {
      for (const node of cluster.nodes) lossyToHost(node.machine.ns, 0.05);
      for (const proxy of proxies) proxy.lagMs = 50;
      await sleep(30_000);
      for (const proxy of proxies) proxy.lagMs = 0;
      for (const node of cluster.nodes) heal(node.machine.ns);
    },
  },
};
