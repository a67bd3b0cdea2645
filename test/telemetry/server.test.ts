/**
 * Server spans through the real handler and a real SQLite store, read back from an in-memory
 * exporter: one span per keyed request with the outcome `/metrics` counts, one per commit and
 * external call, and nothing the caller sent in any of them.
 */
import * as api from '@opentelemetry/api';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { afterEach, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../server/fixtures.js';
import { recorder, type Recorder } from './exporter.js';

let app: TestApp;
let rec: Recorder;
afterEach(async () => {
  await app.store.close?.();
});

const traced = async (options: Parameters<typeof createTestApp>[0] = {}): Promise<TestApp> => {
  rec = recorder();
  app = await createTestApp({ ...options, telemetry: rec.telemetry });
  return app;
};
const request = (index = 0) => rec.spans('oncely.request')[index]!;

describe('server telemetry', () => {
  it('traces a first execution: outcome executed, status, endpoint, last recovery point, and its phases and calls as children', async () => {
    await traced();
    expect((await app.post({ amount: 10 })).status).toBe(201);
    const span = request();
    expect(span.attributes).toMatchObject({
      'oncely.outcome': 'executed',
      'http.response.status_code': 201,
      'oncely.endpoint': 'POST /v1/payments',
      'http.request.method': 'POST',
      'oncely.recovery_point': 'finished',
    });
    const parent = span.spanContext().spanId;
    const phases = rec.spans('oncely.phase');
    expect(phases.map((p) => p.attributes['oncely.recovery_point'])).toEqual(['admit', 'H2_DONE', 'finished']);
    const calls = rec.spans('oncely.external');
    expect(calls.map((c) => [c.attributes['oncely.external.system'], c.attributes['oncely.external.outcome'], c.attributes['oncely.external.probe']])).toEqual([
      [1, 'done', false],
      [2, 'done', false],
    ]);
    for (const child of [...phases, ...calls]) expect(child.parentSpanContext?.spanId).toBe(parent);
    expect(app.handler.metrics.snapshot().requests.executed).toBe(1);
  });

  it('traces a replay, a 422 and a parked (202) key with the outcome /metrics counts', async () => {
    await traced();
    await app.post({ amount: 10 });
    await app.post({ amount: 10 });
    expect((await app.post({ amount: 11 })).status).toBe(422);
    app.rail.script.push('timeout-after-apply');
    expect((await app.post({ amount: 12 }, { key: 'parked' })).status).toBe(202);
    expect(rec.spans('oncely.request').map((s) => [s.attributes['oncely.outcome'], s.attributes['http.response.status_code']])).toEqual([
      ['executed', 201],
      ['replayed', 201],
      ['mismatch', 422],
      ['pending', 202],
    ]);
    expect(rec.spans('oncely.external').at(-1)!.attributes['oncely.external.outcome']).toBe('unknown');
    expect(request(3).attributes['oncely.recovery_point']).toBe('EXT2_SENT');
  });

  it('traces a 409 and a duplicate that waited for the original', async () => {
    await traced({ leaseMs: 5000, inFlightWaitMs: 0 });
    let open!: () => void;
    app.rail.gate = new Promise((resolve) => (open = resolve));
    const first = app.post({ amount: 10 });
    while (app.rail.calls === 0) await new Promise((r) => setTimeout(r, 5));
    expect((await app.post({ amount: 10 })).status).toBe(409);
    open();
    await first;
    expect(request(0).attributes).toMatchObject({ 'oncely.outcome': 'in_flight', 'http.response.status_code': 409 });
    expect(request(0).attributes['oncely.waited']).toBeUndefined();
    await app.store.close?.();

    await traced({ leaseMs: 5000 });
    app.rail.gate = new Promise((resolve) => (open = resolve));
    const original = app.post({ amount: 10 });
    while (app.rail.calls === 0) await new Promise((r) => setTimeout(r, 5));
    const duplicate = app.post({ amount: 10 });
    await new Promise((r) => setTimeout(r, 50));
    open();
    await original;
    expect((await duplicate).headers.get('idempotency-replay')).toBe('true');
    expect(rec.spans('oncely.request').find((s) => s.attributes['oncely.waited'] === true)?.attributes['oncely.outcome']).toBe('replayed');
  });

  it("marks a takeover of a dead owner's key", async () => {
    await traced({ leaseMs: 10_000 });
    await app.post({ amount: 10 }, { key: 'probe' });
    const row = await app.store.load('acme', 'probe');
    await app.store.admit({
      clientId: 'acme',
      key: 'key-1',
      requestHash: row!.requestHash,
      endpoint: row!.endpoint,
      requestBody: row!.requestBody,
      leaseMs: 300,
      ttlMs: 60_000,
    });
    expect((await app.post({ amount: 10 })).status).toBe(201);
    expect(request(1).attributes).toMatchObject({ 'oncely.outcome': 'executed', 'oncely.taken_over': true, 'oncely.waited': true });
  });

  it('traces the recovery worker resuming a parked key: its probe, its phases and how it ended', async () => {
    await traced({ parkBackoff: { baseMs: 1, maxMs: 1 } });
    app.rail.script.push('timeout-after-apply');
    expect((await app.post({ amount: 12 })).status).toBe(202);
    await new Promise((r) => setTimeout(r, 20));
    expect(await app.handler.resume((await app.store.load('acme', 'key-1'))!)).toBe('finished');
    const recovery = rec.spans('oncely.recovery')[0]!;
    expect(recovery.attributes).toMatchObject({
      'oncely.endpoint': 'POST /v1/payments',
      'oncely.recovery.outcome': 'finished',
      'oncely.recovery_point': 'finished',
    });
    const probe = rec.spans('oncely.external').find((s) => s.attributes['oncely.external.probe'] === true)!;
    expect(probe.attributes).toMatchObject({ 'oncely.external.system': 2, 'oncely.external.outcome': 'done' });
    expect(probe.parentSpanContext?.spanId).toBe(recovery.spanContext().spanId);
  });

  it('marks a call that threw as failed with its class name, never its message', async () => {
    await traced();
    app.rail.script.push('throws-after-apply');
    expect((await app.post({ amount: 10 })).status).toBe(202);
    const failed = rec.spans('oncely.external').find((s) => s.status.code === api.SpanStatusCode.ERROR)!;
    expect(failed.attributes['error.type']).toBe('Error');
    expect(rec.everything()).not.toContain('ECONNRESET');
  });

  it('puts no body, key, query, client id or credential in any span', async () => {
    await traced();
    const secrets = { note: 'body-secret-7f3a', amount: 987_654 };
    await app.post(secrets, { key: 'key-secret-91c2', headers: { cookie: 'session=cookie-secret-55e1', 'x-api-token': 'tok-secret-0b7d' } });
    await app.post(secrets, { key: 'key-secret-91c2' });
    await app.post({ amount: 1 }, { key: 'key-secret-91c2' });
    await app.post({ amount: 1 }, { key: 'other', token: 'test_globex' });
    expect(rec.spans().length).toBeGreaterThan(8);
    const all = rec.everything();
    for (const secret of [
      'body-secret-7f3a',
      '987654',
      'key-secret-91c2',
      'cookie-secret',
      'tok-secret',
      'test_acme',
      'test_globex',
      'Bearer',
      'acme',
      'globex',
      'other',
    ]) {
      expect(all).not.toContain(secret);
    }
  });

  it('makes no span without the option, even with a global tracer provider registered', async () => {
    const exporter = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    api.trace.setGlobalTracerProvider(provider);
    try {
      app = await createTestApp();
      expect((await app.post({ amount: 10 })).status).toBe(201);
      expect(exporter.getFinishedSpans()).toEqual([]);
      // The check can fail: the same app with the option records spans through the global provider.
      await app.store.close?.();
      app = await createTestApp({ telemetry: { api } });
      await app.post({ amount: 10 });
      expect(exporter.getFinishedSpans().length).toBeGreaterThan(0);
    } finally {
      api.trace.disable();
    }
  });
});
