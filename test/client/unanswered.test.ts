/** The onUnanswered hook: every attempt that got no answer, whether it is retried or not. */
import { describe, expect, it } from 'vitest';
import { OperationPendingError } from '../../src/errors.js';
import type { UnansweredEvent } from '../../src/client/results.js';
import { json, problem, sequence, useProtocolServer } from '../support/protocol-server.js';
import { PAYMENT, testClient } from './helpers.js';

const server = useProtocolServer();

describe('onUnanswered', () => {
  it('is called for each attempt that got no answer, and not for those the server answered', async () => {
    server.reply(
      sequence(
        () => 'network-error',
        () => problem(503, 'upstream-unavailable', { 'retry-after': '1' }),
        () => 'network-error',
        () => json(201, {}),
      ),
    );
    const unanswered: UnansweredEvent[] = [];
    const r = await testClient({ onUnanswered: (e) => unanswered.push(e) }).post('v1/payments', { json: PAYMENT });
    expect(unanswered.map((e) => [e.key, e.attempt])).toEqual([
      [r.key, 1],
      [r.key, 3],
    ]);
    expect(unanswered.every((e) => e.error instanceof Error && e.method === 'POST')).toBe(true);
  });

  it('is called for the last attempt too, which is not retried and leaves the operation pending', async () => {
    server.reply(() => 'network-error');
    const unanswered: UnansweredEvent[] = [];
    const retried: number[] = [];
    const client = testClient({ retry: { limit: 0 }, onUnanswered: (e) => unanswered.push(e), onRetry: (e) => retried.push(e.attempt) });
    const error = await client.post('v1/payments', { json: PAYMENT }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OperationPendingError);
    expect(unanswered.map((e) => e.attempt)).toEqual([1]);
    expect(retried).toEqual([]);
    expect((await client.pending()).map((op) => op.state)).toEqual(['pending']);
  });
});
