/**
 * The cluster's private network: one bridge on the host and one network namespace per machine
 * (etcd, and each PostgreSQL node), joined to the bridge by a veth pair, on 10.213.0.0/24 — a
 * subnet and names (`onc-…`) chosen to collide with nothing on the host. The host keeps
 * 10.213.0.1 on the bridge: the apps, HAProxy and the run itself talk to the nodes from there.
 *
 * Faults are real network faults: iptables rules inside a node's namespace (a partition drops
 * every packet in and out; an etcd cut drops only the etcd address; random loss drops a share of
 * the packets to and from the host). Everything here needs root (`ip netns add`).
 *
 * @module
 */
import { execFileSync } from 'node:child_process';

/** The bridge the run creates, and the host's address on it. */
export const BRIDGE = 'onc-br0';
export const HOST_IP = '10.213.0.1';
/** etcd's machine. */
export const ETCD = { ns: 'onc-etcd', ip: '10.213.0.10' } as const;

/** One machine of the cluster: its namespace and address. */
export interface Machine {
  readonly ns: string;
  readonly ip: string;
}

/** The PostgreSQL nodes `pg1`…`pgN`, at 10.213.0.11…. */
export function nodeMachine(index: number): Machine {
  return { ns: `onc-pg${index + 1}`, ip: `10.213.0.${11 + index}` };
}

/** Runs a command and returns its stdout; throws with its stderr when it fails. */
export function sh(cmd: string, args: readonly string[]): string {
  return execFileSync(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], timeout: 60_000 }).toString();
}

/** `sh` that ignores a failure: for tear-down, where the thing may already be gone. */
export function shQuiet(cmd: string, args: readonly string[]): void {
  try {
    sh(cmd, args);
  } catch {
    // already gone
  }
}

/** Runs `args` inside `ns`. */
export function inNs(ns: string, args: readonly string[]): string {
  return sh('ip', ['netns', 'exec', ns, ...args]);
}

/** The bridge with the host's address, then each machine's namespace wired to it. */
export function createNetwork(machines: readonly Machine[]): void {
  sh('ip', ['link', 'add', BRIDGE, 'type', 'bridge']);
  sh('ip', ['addr', 'add', `${HOST_IP}/24`, 'dev', BRIDGE]);
  sh('ip', ['link', 'set', BRIDGE, 'up']);
  for (const machine of machines) {
    const hostSide = `${machine.ns}-h`;
    sh('ip', ['netns', 'add', machine.ns]);
    sh('ip', ['link', 'add', hostSide, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', machine.ns]);
    sh('ip', ['link', 'set', hostSide, 'master', BRIDGE]);
    sh('ip', ['link', 'set', hostSide, 'up']);
    inNs(machine.ns, ['ip', 'addr', 'add', `${machine.ip}/24`, 'dev', 'eth0']);
    inNs(machine.ns, ['ip', 'link', 'set', 'eth0', 'up']);
    inNs(machine.ns, ['ip', 'link', 'set', 'lo', 'up']);
  }
}

/** Every process running inside `ns`. */
export function pidsIn(ns: string): number[] {
  try {
    return sh('ip', ['netns', 'pids', ns])
      .split('\n')
      .filter((line) => line.trim() !== '')
      .map(Number);
  } catch {
    return [];
  }
}

/** Sends `signal` to every process in `ns`: SIGKILL is the machine dying, SIGSTOP a VM stall. */
export function signalAll(ns: string, signal: NodeJS.Signals): number {
  const pids = pidsIn(ns);
  for (const pid of pids) {
    try {
      process.kill(pid, signal);
    } catch {
      // exited meanwhile
    }
  }
  return pids.length;
}

/** Drops every packet in and out of `ns` except loopback: the machine is cut off. */
export function partition(ns: string): void {
  for (const [chain, dir] of [
    ['INPUT', '-i'],
    ['OUTPUT', '-o'],
  ] as const) {
    inNs(ns, ['iptables', '-A', chain, dir, 'eth0', '-j', 'DROP']);
  }
}

/** Drops packets between `ns` and `ip` only (e.g. etcd's address). */
export function cutFrom(ns: string, ip: string): void {
  inNs(ns, ['iptables', '-A', 'INPUT', '-s', ip, '-j', 'DROP']);
  inNs(ns, ['iptables', '-A', 'OUTPUT', '-d', ip, '-j', 'DROP']);
}

/** Drops `probability` of the packets between `ns` and the host (where the apps run), both ways. */
export function lossyToHost(ns: string, probability: number): void {
  const random = ['-m', 'statistic', '--mode', 'random', '--probability', String(probability), '-j', 'DROP'];
  inNs(ns, ['iptables', '-A', 'INPUT', '-s', HOST_IP, ...random]);
  inNs(ns, ['iptables', '-A', 'OUTPUT', '-d', HOST_IP, ...random]);
}

/** Removes every rule a fault added in `ns`. */
export function heal(ns: string): void {
  shQuiet('ip', ['netns', 'exec', ns, 'iptables', '-F']);
}

/**
 * Kills every process in the run's namespaces, deletes them and the bridge. Safe to call twice,
 * and on a network only half built (a failed bring-up).
 */
export function destroyNetwork(machines: readonly Machine[]): void {
  for (const machine of machines) signalAll(machine.ns, 'SIGKILL');
  for (const machine of machines) {
    shQuiet('ip', ['netns', 'del', machine.ns]);
    shQuiet('ip', ['link', 'del', `${machine.ns}-h`]);
  }
  shQuiet('ip', ['link', 'del', BRIDGE]);
}
