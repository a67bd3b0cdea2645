import { describe, expect, it } from 'vitest';
import { createServerMetrics } from '../../src/server/index.js';
import { problem, ProblemType } from '../../src/server/problems.js';

describe('createServerMetrics', () => {
  it('renders every request outcome and event counter as Prometheus text', () => {
    const metrics = createServerMetrics();
    metrics.request('executed');
    metrics.request('executed');
    metrics.request('in_flight');
    metrics.add('keys_reaped', 5);
    const text = metrics.render();
    expect(text).toContain('# TYPE oncely_requests_total counter');
    expect(text).toContain('oncely_requests_total{outcome="executed"} 2');
    expect(text).toContain('oncely_requests_total{outcome="in_flight"} 1');
    for (const outcome of ['replayed', 'mismatch', 'invalid', 'pending', 'transient']) {
      expect(text).toContain(`oncely_requests_total{outcome="${outcome}"} 0`);
    }
    expect(text).toContain('oncely_keys_reaped_total 5');
    expect(text).toContain('oncely_recoveries_total 0');
    expect(text).toContain('oncely_lease_takeovers_total 0');
    expect(text.endsWith('\n')).toBe(true);
  });
});

describe('problem', () => {
  it('builds an RFC 9457 problem+json response with the stable type URI and extra headers', async () => {
    const response = problem(ProblemType.KeyInFlight, 'wait', { 'retry-after': '3' });
    expect(response.status).toBe(409);
    expect(response.headers.get('content-type')).toBe('application/problem+json');
    expect(response.headers.get('retry-after')).toBe('3');
    expect(await response.json()).toEqual({
      type: 'https://oncely.dev/problems/key-in-flight',
      title: 'A request with this key is in flight',
      status: 409,
      detail: 'wait',
    });
  });
});
