/**
 * Properties of the retry policy (src/client/retry-policy.ts), driven the way an operation drives
 * it (src/client/operation.ts): one attempt after another on a simulated clock, each answer
 * judged by `decide`, each retry waited for. Whatever the server answers and whatever it puts in
 * Retry-After, the attempts stay within the limit, the waits within the budget, and nothing final
 * is ever sent again.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { normalizeRetryOptions, type ResolvedRetryOptions } from '../../../src/client/retry-options.js';
import { decide, type AttemptOutcome, type RetryDecision } from '../../../src/client/retry-policy.js';
import { OperationPendingError } from '../../../src/errors.js';
import { checkProperty } from '../settings.js';

const START = Date.UTC(2026, 11, 6, 12, 0, 0);
const ref = { method: 'POST', url: 'http://oncely.test/v1/payments', key: 'k-1' };

/** PROTOCOL.md's classification, written out here so that the policy is checked against it. */
const WAIT = new Set([202, 409, 429, 503]);
const retryable = (outcome: AttemptOutcome): boolean =>
  outcome.kind !== 'response' ||
  WAIT.has(outcome.status) ||
  outcome.status === 408 ||
  (outcome.status >= 500 && outcome.status !== 501 && outcome.status !== 505);

const retryAfter = fc.oneof(
  fc.constant(null),
  fc.nat({ max: 200 }).map(String),
  fc.nat({ max: 200 }).map((n) => ` ${n} `),
  fc.constantFrom('99999999999999999999', '9'.repeat(400), '-1', '1.5', '1e3', '', ' ', 'soon', 'Infinity', 'NaN'),
  // HTTP dates, past and future, in the three formats RFC 9110 names (and some that only look like one).
  fc.integer({ min: -3_600, max: 3_600 }).map((s) => new Date(START + s * 1000).toUTCString()),
  fc.integer({ min: -3_600, max: 3_600 }).map((s) => new Date(START + s * 1000).toUTCString().replace(/^(\w+), (\d+) (\w+) (\d+)/, '$1day, $2-$3-$4')),
  fc.constantFrom('Sun Nov  6 08:49:37 1994', 'Mon, 32 Foo 2026 99:99:99 GMT', 'Tue, 01 Jan 275761 00:00:00 GMT', 'Wed, '),
  fc.string({ maxLength: 30 }),
);

const status = fc.oneof(
  fc.constantFrom(200, 201, 204, 202, 400, 401, 402, 403, 404, 408, 409, 413, 422, 429, 500, 501, 502, 503, 504, 505),
  fc.integer({ min: 200, max: 599 }),
);

const outcome: fc.Arbitrary<AttemptOutcome> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('response' as const), status, retryAfter }) },
  { weight: 2, arbitrary: fc.constant({ kind: 'network' as const, error: new TypeError('fetch failed') }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'claimed-elsewhere' as const }) },
);

const options: fc.Arbitrary<ResolvedRetryOptions> = fc
  .record({
    limit: fc.nat({ max: 8 }),
    backoffMs: fc.nat({ max: 2_000 }),
    factor: fc.double({ min: 1, max: 3, noNaN: true }),
    maxBackoffMs: fc.nat({ max: 20_000 }),
    jitter: fc.boolean(),
    maxRetryAfterMs: fc.nat({ max: 60_000 }),
    budgetMs: fc.nat({ max: 120_000 }),
  })
  .map((retry) => normalizeRetryOptions(retry));

interface Step {
  readonly outcome: AttemptOutcome;
  /** Requests sent so far by this send(), this one included (a claimed-elsewhere poll sends none). */
  readonly sent: number;
  /** Milliseconds since the send() started, when the outcome was judged. */
  readonly elapsedMs: number;
  readonly decision: RetryDecision;
}

/**
 * One send(): attempts until a decision other than retry. Answers come from `answers` in order;
 * past its end the server keeps answering 503 without Retry-After, so only the limits can stop it.
 */
function simulate(retry: ResolvedRetryOptions, answers: readonly AttemptOutcome[], latencies: readonly number[], randoms: readonly number[]): Step[] {
  const steps: Step[] = [];
  let clock = START;
  let sent = 0;
  let draws = 0;
  const random = (): number => randoms[draws++ % randoms.length] as number;
  // A poll of another process's claim spends at least a millisecond: the journal read.
  for (let i = 0; steps.length < 10_000; i += 1) {
    const answer = answers[i] ?? { kind: 'response', status: 503, retryAfter: null };
    if (answer.kind !== 'claimed-elsewhere') sent += 1;
    clock += Math.max(1, latencies[i % latencies.length] as number);
    const elapsedMs = clock - START;
    const decision = decide(answer, sent, { retry, ref, elapsedMs, now: clock, random });
    steps.push({ outcome: answer, sent, elapsedMs, decision });
    if (decision.action !== 'retry') return steps;
    clock += decision.delayMs;
  }
  throw new Error('the policy never stopped');
}

const sendRun = fc.record({
  retry: options,
  answers: fc.array(outcome, { maxLength: 14 }),
  latencies: fc.array(fc.nat({ max: 5_000 }), { minLength: 1, maxLength: 5 }),
  randoms: fc.array(fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), { minLength: 1, maxLength: 5 }),
});

describe('the retry policy, over whole sends', () => {
  it('sends at most 1 + limit requests, and schedules no retry after the budget', () =>
    checkProperty(
      fc.property(sendRun, ({ retry, answers, latencies, randoms }) => {
        const steps = simulate(retry, answers, latencies, randoms);
        const last = steps[steps.length - 1] as Step;
        expect(last.sent).toBeLessThanOrEqual(retry.limit + 1);
        let waited = 0;
        for (const step of steps) {
          if (step.decision.action !== 'retry') continue;
          const { delayMs } = step.decision;
          expect(Number.isFinite(delayMs) && delayMs >= 0).toBe(true);
          expect(step.elapsedMs + delayMs).toBeLessThanOrEqual(retry.budgetMs);
          waited += delayMs;
        }
        expect(waited).toBeLessThanOrEqual(retry.budgetMs);
      }),
      1_000,
    ));

  it('never retries a final answer: the send stops at the first one, settled, or rejected for 401/403', () =>
    checkProperty(
      fc.property(sendRun, ({ retry, answers, latencies, randoms }) => {
        const steps = simulate(retry, answers, latencies, randoms);
        steps.forEach((step, i) => {
          const { outcome: answer, decision } = step;
          if (!retryable(answer)) {
            expect(i).toBe(steps.length - 1);
            const status = answer.kind === 'response' ? answer.status : 0;
            expect(decision.action).toBe(status === 401 || status === 403 ? 'reject' : 'settle');
          } else {
            expect(['retry', 'fail']).toContain(decision.action);
          }
        });
      }),
      1_000,
    ));

  it('stops a send that is never answered finally with OperationPendingError, only at the limit or the budget', () =>
    checkProperty(
      fc.property(sendRun, ({ retry, answers, latencies, randoms }) => {
        const retryableOnly = answers.filter(retryable);
        const steps = simulate(retry, retryableOnly, latencies, randoms);
        const last = steps[steps.length - 1] as Step;
        expect(last.decision.action).toBe('fail');
        if (last.decision.action !== 'fail') return;
        expect(last.decision.error).toBeInstanceOf(OperationPendingError);
        // Failed early only when the next retry would have overrun the budget.
        if (last.outcome.kind === 'claimed-elsewhere' || last.sent <= retry.limit) {
          expect(last.decision.error.message).toMatch(/time budget/);
        }
      }),
      1_000,
    ));

  it('waits exactly the Retry-After of a 202/409/429/503 in seconds (capped), and at most the computed backoff otherwise', () =>
    checkProperty(
      fc.property(sendRun, ({ retry, answers, latencies, randoms }) => {
        for (const step of simulate(retry, answers, latencies, randoms)) {
          if (step.decision.action !== 'retry') continue;
          const { outcome: answer, decision } = step;
          const seconds = answer.kind === 'response' && WAIT.has(answer.status) ? /^\s*(\d+)\s*$/.exec(answer.retryAfter ?? '') : null;
          if (seconds) {
            expect(decision.delayMs).toBe(Math.min(Number(seconds[1]) * 1000, retry.maxRetryAfterMs));
          } else if (!(answer.kind === 'response' && WAIT.has(answer.status) && answer.retryAfter !== null)) {
            // No server-given delay: exponential backoff, full jitter below its ceiling.
            const n = answer.kind === 'claimed-elsewhere' ? 1 : step.sent;
            const ceiling = Math.min(retry.maxBackoffMs, retry.backoffMs * retry.factor ** (n - 1));
            if (retry.jitter) expect(decision.delayMs).toBeLessThanOrEqual(ceiling);
            else expect(decision.delayMs).toBe(ceiling);
          } else {
            expect(decision.delayMs).toBeLessThanOrEqual(Math.max(retry.maxRetryAfterMs, retry.maxBackoffMs));
          }
        }
      }),
      1_000,
    ));
});
