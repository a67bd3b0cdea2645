/**
 * Patroni's REST API, as the run reads it: who is primary (`GET /primary` answers 200 only on a
 * node that runs PostgreSQL read-write and holds the leader key), the members' roles (`GET
 * /cluster`), and a poller that records, every 200 ms, how many nodes claim to be primary — the
 * window without a leader, and any moment with two.
 *
 * @module
 */
import { REST_PORT } from './patroni-config.js';
import type { Machine } from './netns.js';

/** A member as `/cluster` lists it. */
export interface MemberState {
  readonly name: string;
  readonly role: string;
  readonly state: string;
  readonly lag?: number | string;
}

const rest = (machine: Machine, path: string): string => `http://${machine.ip}:${REST_PORT}${path}`;

/** `true` when the node answers 200 on `/primary` within `timeoutMs`. */
export async function isPrimary(machine: Machine, timeoutMs = 800): Promise<boolean> {
  try {
    const response = await fetch(rest(machine, '/primary'), { signal: AbortSignal.timeout(timeoutMs) });
    await response.arrayBuffer();
    return response.status === 200;
  } catch {
    return false;
  }
}

/** The members as the first node that answers sees them; empty when none answers. */
export async function memberStates(nodes: readonly { readonly machine: Machine }[]): Promise<MemberState[]> {
  for (const node of nodes) {
    try {
      const response = await fetch(rest(node.machine, '/cluster'), { signal: AbortSignal.timeout(800) });
      const body = (await response.json()) as { members?: MemberState[] };
      if (body.members) return body.members;
    } catch {
      // try the next node
    }
  }
  return [];
}

/** The name of the one node answering `/primary` with 200, or `undefined` (none, or two). */
export async function currentLeader<N extends { readonly name: string; readonly machine: Machine }>(nodes: readonly N[]): Promise<N | undefined> {
  const answers = await Promise.all(nodes.map((node) => isPrimary(node.machine)));
  const leaders = nodes.filter((_, i) => answers[i]);
  return leaders.length === 1 ? leaders[0] : undefined;
}

/** Polls `check` every 250 ms until it returns true; throws naming `what` after `timeoutMs`. */
export async function waitFor(what: string, timeoutMs: number, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(`cluster: no ${what} within ${timeoutMs} ms`);
}

/** What the leader poller saw. */
export interface LeaderTimeline {
  /** Total time with no node answering `/primary` 200. */
  readonly noLeaderMs: number;
  /** Total time with two or more nodes answering 200 at once. */
  readonly twoLeadersMs: number;
  /** The leaders seen, in order, without repeats. */
  readonly leaders: readonly string[];
}

/**
 * Starts polling every node's `/primary`; `stop()` returns the timeline. Each poll's verdict
 * counts for the time until the next one.
 *
 * @example
 * ```ts
 * const poll = pollLeaders(cluster.nodes);
 * await fault();
 * const { noLeaderMs } = await poll.stop();
 * ```
 */
export function pollLeaders(nodes: readonly { readonly name: string; readonly machine: Machine }[]): { stop(): Promise<LeaderTimeline> } {
  let running = true;
  let noLeaderMs = 0;
  let twoLeadersMs = 0;
  const leaders: string[] = [];
  const loop = (async () => {
    let last = performance.now();
    let previous: boolean[] | undefined;
    while (running) {
      const answers = await Promise.all(nodes.map((node) => isPrimary(node.machine, 500)));
      const now = performance.now();
      if (previous) {
        const count = previous.filter(Boolean).length;
        if (count === 0) noLeaderMs += now - last;
        if (count > 1) twoLeadersMs += now - last;
      }
      nodes.forEach((node, i) => {
        if (answers[i] && leaders.at(-1) !== node.name) leaders.push(node.name);
      });
      previous = answers;
      last = now;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return { noLeaderMs, twoLeadersMs, leaders };
    },
  };
}
