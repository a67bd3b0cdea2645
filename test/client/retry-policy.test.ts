import { describe, expect, it } from 'vitest';
import { DEFAULT_RETRY, normalizeRetryOptions } from '../../src/client/options.js';
import { backoffDelay, decide, parseRetryAfter, type AttemptOutcome, type DecideOptions } from '../../src/client/retry-policy.js';
import { OperationPendingError } from '../../src/errors.js';

const NOW = Date.UTC(2026, 11, 2, 12, 0, 0);
const ref = { method: 'POST', url: 'http://oncely.test/v1/payments', key: 'k-1' };
const base: DecideOptions = {
  retry: normalizeRetryOptions({ jitter: false, backoffMs: 100, factor: 2, maxBackoffMs: 1_000, maxRetryAfterMs: 5_000, limit: 3, budgetMs: 60_000 }),
  ref,
  elapsedMs: 0,
  now: NOW,
  random: () => 0.5,
};
const response = (status: number, retryAfter: string | null = null): AttemptOutcome => ({ kind: 'response', status, retryAfter });

describe('parseRetryAfter', () => {
  it('reads delay-seconds as milliseconds', () => {
    expect(parseRetryAfter('3', NOW)).toBe(3_000);
    expect(parseRetryAfter(' 0 ', NOW)).toBe(0);
  });

  it('reads an HTTP-date as the time left until it', () => {
    expect(parseRetryAfter(new Date(NOW + 7_000).toUTCString(), NOW)).toBe(7_000);
  });

  it('treats an HTTP-date in the past as no wait', () => {
    expect(parseRetryAfter(new Date(NOW - 7_000).toUTCString(), NOW)).toBe(0);
  });

  it('returns null for an absent or unparsable value', () => {
    expect(parseRetryAfter(null, NOW)).toBeNull();
    expect(parseRetryAfter('soon', NOW)).toBeNull();
    expect(parseRetryAfter('-1', NOW)).toBeNull();
    expect(parseRetryAfter('1.5', NOW)).toBeNull();
  });
});

describe('backoffDelay', () => {
  it('grows exponentially and stops at maxBackoffMs', () => {
    expect([1, 2, 3, 4, 5].map((n) => backoffDelay(n, base.retry, () => 0.5))).toEqual([100, 200, 400, 800, 1_000]);
  });

  it('applies full jitter: a uniform delay between 0 and the computed backoff', () => {
    const retry = { ...base.retry, jitter: true };
    expect(backoffDelay(3, retry, () => 0)).toBe(0);
    expect(backoffDelay(3, retry, () => 0.5)).toBe(200);
    expect(backoffDelay(3, retry, () => 0.999)).toBe(399);
  });
});

describe('decide', () => {
  it.each([200, 201, 204])('settles a %i', (status) => {
    expect(decide(response(status), 1, base)).toEqual({ action: 'settle' });
  });

  it.each([400, 402, 404, 413, 422, 501])('settles a final %i without retrying, even on the first attempt', (status) => {
    expect(decide(response(status, '1'), 1, base)).toEqual({ action: 'settle' });
  });

  it.each([401, 403])('rejects a %i without settling or retrying: the server executed nothing, other credentials may succeed', (status) => {
    expect(decide(response(status, '1'), 1, base)).toEqual({ action: 'reject' });
    expect(decide(response(status), base.retry.limit + 1, base)).toEqual({ action: 'reject' });
  });

  it('retries a network error after the computed backoff', () => {
    expect(decide({ kind: 'network', error: new TypeError('fetch failed') }, 2, base)).toEqual({ action: 'retry', delayMs: 200 });
  });

  it.each([500, 502, 504, 408])('retries a %i after the computed backoff, ignoring any Retry-After', (status) => {
    expect(decide(response(status, '3'), 1, base)).toEqual({ action: 'retry', delayMs: 100 });
  });

  it.each([409, 429, 503, 202])('retries a %i after exactly its Retry-After, without jitter', (status) => {
    const jittered = { ...base, retry: { ...base.retry, jitter: true }, random: () => 0 };
    expect(decide(response(status, '2'), 1, jittered)).toEqual({ action: 'retry', delayMs: 2_000 });
  });

  it('honours an HTTP-date Retry-After', () => {
    expect(decide(response(503, new Date(NOW + 3_000).toUTCString()), 1, base)).toEqual({ action: 'retry', delayMs: 3_000 });
  });

  it('caps Retry-After at maxRetryAfterMs', () => {
    expect(decide(response(429, '3600'), 1, base)).toEqual({ action: 'retry', delayMs: 5_000 });
  });

  it('falls back to backoff when a 409 has no Retry-After', () => {
    expect(decide(response(409), 3, base)).toEqual({ action: 'retry', delayMs: 400 });
  });

  it('backs off when the operation is claimed by another process', () => {
    expect(decide({ kind: 'claimed-elsewhere' }, 1, base)).toEqual({ action: 'retry', delayMs: 100 });
  });

  it('keeps waiting for a claim held elsewhere past the retry limit, since nothing was sent', () => {
    expect(decide({ kind: 'claimed-elsewhere' }, 10, base)).toEqual({ action: 'retry', delayMs: 100 });
  });

  it('gives up on a claim held elsewhere when the time budget is spent, saying so', () => {
    const decision = decide({ kind: 'claimed-elsewhere' }, 0, { ...base, elapsedMs: 59_950 });
    expect(decision.action).toBe('fail');
    expect(decision.action === 'fail' && decision.error.message).toMatch(/another process holds its claim; time budget/);
  });

  it('fails with OperationPendingError once the retry limit is spent', () => {
    const decision = decide(response(503, '1'), 4, { ...base, totalAttempts: 9 });
    expect(decision.action).toBe('fail');
    const error = decision.action === 'fail' ? decision.error : undefined;
    expect(error).toBeInstanceOf(OperationPendingError);
    expect(error?.attempts).toBe(9);
    expect(error?.lastStatus).toBe(503);
    expect(error?.message).toContain('POST http://oncely.test/v1/payments');
    expect(error?.message).toContain('k-1');
  });

  it('fails after a network error with that error as the cause, named in the message', () => {
    const error = new TypeError('fetch failed', { cause: Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), { code: 'ECONNREFUSED' }) });
    const decision = decide({ kind: 'network', error }, 4, base);
    const failed = decision.action === 'fail' ? decision.error : undefined;
    expect(failed?.cause).toBe(error);
    expect(failed?.message).toContain('no response, last error: connect ECONNREFUSED 127.0.0.1:9 (retry limit of 3 reached)');
  });

  it('still retries on the last allowed attempt', () => {
    expect(decide(response(503, '1'), 3, base).action).toBe('retry');
  });

  it('fails instead of scheduling a retry that would end past the time budget', () => {
    const options = { ...base, elapsedMs: 59_000 };
    expect(decide(response(429, '2'), 1, options).action).toBe('fail');
    expect(decide(response(429, '1'), 1, options)).toEqual({ action: 'retry', delayMs: 1_000 });
  });

  it('never retries when the limit is 0', () => {
    const options = { ...base, retry: { ...base.retry, limit: 0 } };
    const decision = decide({ kind: 'network', error: new Error('reset') }, 1, options);
    expect(decision.action).toBe('fail');
    expect(decision.action === 'fail' && decision.error.lastStatus).toBeUndefined();
  });
});

describe('normalizeRetryOptions', () => {
  it('fills every default and keeps the given values', () => {
    expect(normalizeRetryOptions({ limit: 2 })).toEqual({ ...DEFAULT_RETRY, limit: 2 });
  });

  it('refuses a negative or non-finite value', () => {
    expect(() => normalizeRetryOptions({ backoffMs: -1 })).toThrow(/backoffMs/);
    expect(() => normalizeRetryOptions({ budgetMs: Number.NaN })).toThrow(/budgetMs/);
  });
});
