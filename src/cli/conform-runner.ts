/**
 * Runs `oncely conform`'s checks one after another, inside the run's deadline (`--deadline`).
 *
 * The deadline is one `AbortSignal`: the sender ends every request in flight on it and refuses new
 * ones, the checks' waits end on it, and the check it falls in is raced against it, so a run
 * against an endpoint that never answers stops on time whatever the check was awaiting. The
 * check it stopped is reported failed, saying so; the checks after it are listed as not run.
 *
 * @module
 */
import { setMaxListeners } from 'node:events';
import { setTimeout as delay } from 'node:timers/promises';
import { createdBy, fail, Verdict, type Check, type CheckContext, type Finding } from './conform-judging.js';
import type { Answer } from './conform-http.js';
import type { CheckResult } from './conform-report.js';

/** A check's result with what it saw of deduplication, before the run judges its vacuous passes. */
export type RanCheck = CheckResult & Pick<Finding, 'keyHonoured' | 'vacuousIfKeysIgnored'>;

/** What a run did: a result for every check it reached, and the ones it never reached. */
export interface RunOutcome {
  readonly checks: readonly RanCheck[];
  /** The check the deadline stopped (its id) and which deadline it was; absent when the run finished. */
  readonly stopped?: { readonly id: string; readonly reason: string };
  /** Ids of the checks after it, never started. */
  readonly notRun: readonly string[];
}

/**
 * A signal aborted `ms` from now, its reason saying which deadline passed; `clear` once the run
 * is over, so its timer does not hold the process.
 *
 * @example
 * ```ts
 * const deadline = runDeadline(300_000, '5m');
 * try { await runChecks(CHECKS, context, deadline.signal); } finally { deadline.clear(); }
 * ```
 */
export function runDeadline(ms: number, text: string): { readonly signal: AbortSignal; clear(): void } {
  const controller = new AbortController();
  // Every request in flight listens to it (a burst is up to 1 000), and each check: no leak warning.
  setMaxListeners(0, controller.signal);
  const timer = setTimeout(() => controller.abort(new Error(`the run's --deadline of ${text} passed`)), ms);
  return { signal: controller.signal, clear: () => clearTimeout(timer) };
}

/**
 * A wait for a check that rejects with the run's deadline once it passes.
 *
 * @example
 * ```ts
 * const context = { ...settings, sleep: sleeper(deadline.signal) };
 * ```
 */
export function sleeper(signal: AbortSignal): (ms: number) => Promise<void> {
  return async (ms) => {
    try {
      await delay(ms, undefined, { signal });
    } catch {
      throw signal.reason as Error;
    }
  };
}

/** Rejects with the signal's reason once it is aborted. */
function aborted(signal: AbortSignal): Promise<never> {
  return new Promise((_resolve, reject) => {
    if (signal.aborted) reject(signal.reason as Error);
    else signal.addEventListener('abort', () => reject(signal.reason as Error), { once: true });
  });
}

const message = (error: unknown): string => (error instanceof Error ? error.message : String(error));

/**
 * Runs one check that applies; a check that throws (no answer) fails with the reason. A check
 * the deadline fell in fails as stopped, whatever it made of its ended requests.
 */
async function runOne(check: Check, context: CheckContext, signal: AbortSignal): Promise<{ finding: Finding; answers: readonly Answer[] }> {
  const answers: Answer[] = [];
  const running = check.run(context, answers);
  // Whatever it rejects with once the race is decided is already reported.
  running.catch(() => undefined);
  let finding: Finding;
  try {
    finding = await Promise.race([running, aborted(signal)]);
  } catch (error) {
    finding = fail(`no answer: ${message(error)}`);
  }
  if (signal.aborted) finding = fail(`stopped: ${message(signal.reason)} during this check (its requests in flight were ended)`);
  return { finding, answers };
}

/**
 * Runs `checks` in order until they are done or `signal` (the run's deadline) aborts.
 *
 * @example
 * ```ts
 * const outcome = await runChecks(CHECKS, context, deadline.signal);
 * outcome.stopped?.id; // 'concurrent' when the deadline passed during the burst
 * ```
 */
export async function runChecks(checks: readonly Check[], context: CheckContext, signal: AbortSignal): Promise<RunOutcome> {
  const results: RanCheck[] = [];
  for (const [index, check] of checks.entries()) {
    const base = { id: check.id, title: check.title, expected: check.expected };
    const planned = check.plan(context);
    if ('notApplicable' in planned) {
      results.push({ ...base, verdict: Verdict.NotApplicable, observed: planned.notApplicable, requests: 0, created: 0 });
      continue;
    }
    const before = context.sender.sent;
    const { finding, answers } = await runOne(check, context, signal);
    results.push({ ...base, ...finding, requests: context.sender.sent - before, created: createdBy(answers) });
    if (signal.aborted)
      return { checks: results, stopped: { id: check.id, reason: message(signal.reason) }, notRun: checks.slice(index + 1).map((next) => next.id) };
  }
  return { checks: results, notRun: [] };
}
