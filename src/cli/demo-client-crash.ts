/**
 * The demo's client crash: a client process journals its payments, starts paying, and is
 * SIGKILLed halfway — some payments done, some in flight, some never sent. A fresh process on
 * the same SQLite journal then calls `resume()`. Every payment must end up charged exactly once.
 *
 * @module
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { siblingScript } from './demo-server.js';
import type { AttemptStats, PaymentPlan } from './demo-workload.js';

/** Options of {@link runClientCrash}. */
export interface ClientCrashOptions {
  readonly url: string;
  readonly token: string;
  readonly plans: readonly PaymentPlan[];
  /** A directory for the journal and the plan file. */
  readonly dir: string;
  /** The attempts of both child processes are added here. */
  readonly stats: AttemptStats;
}

/** What happened to the crashed client's payments. */
export interface ClientCrashResult {
  /** The key of each of its payments, by plan index. */
  readonly keys: ReadonlyMap<number, string>;
  /** Whether the first process was really killed mid-way (not finished on its own). */
  readonly killed: boolean;
  /** Payments settled before the kill (as far as the parent saw). */
  readonly settledBeforeKill: number;
  /** Whether the resuming process left nothing pending. */
  readonly resumedAll: boolean;
}

function addStats(into: AttemptStats, from: Partial<AttemptStats>): void {
  for (const name of Object.keys(into) as Array<keyof AttemptStats>) into[name] += from[name] ?? 0;
}

/**
 * Runs the crash-and-resume scenario and resolves once the resuming process has exited.
 *
 * @example
 * ```ts
 * const result = await runClientCrash({ url, token: 'test_acme', plans, dir, stats });
 * result.killed && result.resumedAll; // the client crash was survived
 * ```
 */
export async function runClientCrash(options: ClientCrashOptions): Promise<ClientCrashResult> {
  if (options.plans.length === 0) return { keys: new Map(), killed: false, settledBeforeKill: 0, resumedAll: true };
  const journal = join(options.dir, 'client-journal.db');
  const plansFile = join(options.dir, 'client-plans.json');
  writeFileSync(plansFile, JSON.stringify(options.plans));
  const [command, ...script] = siblingScript('demo-client-child');
  const common = ['--url', options.url, '--token', options.token, '--journal', journal];
  const keys = new Map<number, string>();
  const killAt = Math.max(1, Math.floor(options.plans.length / 2));

  // First process: killed once half of its payments have settled.
  let settled = 0;
  let lastStats: Partial<AttemptStats> = {};
  const first = spawn(command, [...script, '--mode', 'run', '--plans', plansFile, ...common], { stdio: ['ignore', 'pipe', 'inherit'] });
  let killed = false;
  createInterface({ input: first.stdout }).on('line', (line) => {
    const [event = '', a = '', b = ''] = line.split(' ');
    if (event === 'key') keys.set(Number(a), b);
    else if (event === 'stats') lastStats = JSON.parse(line.slice('stats '.length)) as Partial<AttemptStats>;
    else if (event === 'settled') {
      settled += 1;
      if (settled >= killAt && !killed) {
        killed = first.kill('SIGKILL');
      }
    }
  });
  const firstExit = await new Promise<NodeJS.Signals | null>((resolve) => first.once('exit', (_code, signal) => resolve(signal)));
  killed = firstExit === 'SIGKILL';
  addStats(options.stats, lastStats);

  // Second process: a fresh start on the same journal file.
  const second = spawn(command, [...script, '--mode', 'resume', ...common], { stdio: ['ignore', 'pipe', 'inherit'] });
  let summary: { pending?: number; stats?: Partial<AttemptStats> } = {};
  createInterface({ input: second.stdout }).on('line', (line) => {
    if (line.startsWith('summary ')) summary = JSON.parse(line.slice('summary '.length)) as typeof summary;
  });
  const code = await new Promise<number | null>((resolve) => second.once('exit', (exitCode) => resolve(exitCode)));
  addStats(options.stats, summary.stats ?? {});
  return { keys, killed, settledBeforeKill: settled, resumedAll: code === 0 && summary.pending === 0 };
}
