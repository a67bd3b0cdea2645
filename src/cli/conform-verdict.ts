/**
 * The run's verdict, in one line, and the passes that show nothing about the endpoint it ran
 * against.
 *
 * Two checks pass against an endpoint that ignores `Idempotency-Key` altogether: a request
 * without a key is accepted (as every request is), and a retry after a transient answer runs (as
 * every request does). Such a pass only means something where keys are honoured, so it stands
 * only when some check saw a request repeated under its key name the first request's resource or
 * be refused as a duplicate (`409`, `422`):
 *
 * | what a repeated key got, in any check          | vacuous passes | verdict line (a stopped run's says where it stopped)  |
 * |-------------------------------------------------|----------------|-------------------------------------------------------|
 * | the first one's resource, or a 409 / 422, once  | pass           | `conforms: …` or `N checks failed`                    |
 * | only new resources                              | `n/a`          | `this API does not deduplicate by Idempotency-Key: …` |
 * | neither (every first request refused, say)      | `n/a`          | `N checks failed`                                     |
 *
 * @module
 */
import { Verdict } from './conform-judging.js';
import type { CheckResult } from './conform-report.js';
import type { RanCheck, RunOutcome } from './conform-runner.js';

/** What the checks saw of deduplication, taken together. */
export const Deduplication = { Seen: 'seen', Never: 'never', Unknown: 'unknown' } as const;
/** One of {@link Deduplication}. */
export type Deduplication = (typeof Deduplication)[keyof typeof Deduplication];

/**
 * Whether any check saw the endpoint deduplicate: `seen` if one saw a repeated key answered with
 * the first resource, `never` if the ones that could tell saw only new resources.
 *
 * @example
 * ```ts
 * deduplication(outcome.checks); // 'never' against an endpoint that ignores keys
 * ```
 */
export function deduplication(checks: readonly RanCheck[]): Deduplication {
  if (checks.some((check) => check.keyHonoured === true)) return Deduplication.Seen;
  return checks.some((check) => check.keyHonoured === false) ? Deduplication.Never : Deduplication.Unknown;
}

/** A vacuous pass as `n/a`, saying why and what the endpoint did. */
function notApplicable(check: RanCheck, why: string, seen: Deduplication): CheckResult {
  const because = seen === Deduplication.Never ? 'this API does not deduplicate by Idempotency-Key' : 'no check saw this endpoint deduplicate a repeated key';
  return { ...result(check), verdict: Verdict.NotApplicable, observed: `${because}: ${why}, so its pass shows nothing (it answered: ${check.observed})` };
}

/** The check's result as reported, without what only the verdict reads. */
function result({ keyHonoured: _seen, vacuousIfKeysIgnored: _vacuous, ...rest }: RanCheck): CheckResult {
  return rest;
}

const plural = (count: number, noun: string): string => `${count} ${noun}${count === 1 ? '' : 's'}`;

/**
 * The run's results, vacuous passes turned `n/a` unless deduplication was seen, and its verdict
 * in one line.
 *
 * @example
 * ```ts
 * const { checks, verdict } = judgeRun(outcome);
 * verdict; // 'this API does not deduplicate by Idempotency-Key: a request repeated under its key ran again (...); 12 checks failed'
 * ```
 */
export function judgeRun(outcome: RunOutcome): { readonly checks: readonly CheckResult[]; readonly verdict: string } {
  const seen = deduplication(outcome.checks);
  const checks = outcome.checks.map((check) =>
    check.verdict === Verdict.Pass && check.vacuousIfKeysIgnored !== undefined && seen !== Deduplication.Seen
      ? notApplicable(check, check.vacuousIfKeysIgnored, seen)
      : result(check),
  );
  const failed = checks.filter((check) => check.verdict === Verdict.Fail).length;
  const stopped = checks.find((check) => check.id === outcome.stopped?.id);
  if (stopped !== undefined)
    return {
      checks,
      verdict: `stopped: ${outcome.stopped?.reason ?? ''} during "${stopped.title}"; ${plural(outcome.notRun.length, 'check')} not run, ${failed} failed`,
    };
  if (seen === Deduplication.Never) {
    const ranAgain = outcome.checks.filter((check) => check.keyHonoured === false).map((check) => `"${check.title}"`);
    return {
      checks,
      verdict: `this API does not deduplicate by Idempotency-Key: a request repeated under its key ran again (${ranAgain.join(', ')}); ${plural(failed, 'check')} failed`,
    };
  }
  if (failed > 0) return { checks, verdict: `${plural(failed, 'check')} failed` };
  const skipped = checks.filter((check) => check.verdict === Verdict.NotApplicable).length;
  return { checks, verdict: `conforms: every check that applies passed (${skipped} n/a)` };
}
