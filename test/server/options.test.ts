/**
 * One validated options object for every server front end: the handler, the middleware's guard
 * and the reference app refuse an invalid value at construction with an `InvalidOptionError`
 * naming the option, share one set of defaults, and the server's typed errors are recognised by
 * `isOncelyError`.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { isOncelyError } from '../../src/errors.js';
import { createReferenceApp } from '../../src/reference/app.js';
import { InvalidOptionError } from '../../src/server/errors/invalid-option-error.js';
import { ResponseTooLargeError } from '../../src/server/errors/response-too-large-error.js';
import { createIdempotencyHandler } from '../../src/server/index.js';
import { createGuard } from '../../src/server/middleware/guard.js';
import { resolveServerOptions, SERVER_DEFAULTS } from '../../src/server/options.js';
import { sqliteKeyStore } from '../../src/server/store/sqlite.node.js';
import { paymentOperation } from './fixtures.js';

const store = sqliteKeyStore({ path: ':memory:' });
await store.migrate();
afterAll(() => store.close());

const external = () => ({ applied: new Map(), calls: 0, probes: 0, script: [], probeBlind: false, gate: undefined });
const handlerWith = (options: Record<string, unknown>) => () =>
  createIdempotencyHandler({ store, operations: [paymentOperation(external(), external())], authenticate: () => 'acme', ...options });
const guardWith = (options: Record<string, unknown>) => () => createGuard({ store, ...options });
const appWith = (options: Record<string, unknown>) => () => createReferenceApp({ store, ...options });

/** Runs `build`, expecting an InvalidOptionError for `option` whose message names it. */
function refuses(build: () => unknown, option: string): void {
  let thrown: unknown;
  try {
    build();
  } catch (error) {
    thrown = error;
  }
  expect(thrown).toBeInstanceOf(InvalidOptionError);
  expect((thrown as InvalidOptionError).option).toBe(option);
  expect((thrown as Error).message).toContain(option);
  expect(isOncelyError(thrown, 'CONFIG')).toBe(true);
}

describe('shared server options', () => {
  const invalid: ReadonlyArray<[string, Record<string, unknown>, string]> = [
    ['a negative lease', { leaseMs: -1 }, 'leaseMs'],
    ['a zero lease', { leaseMs: 0 }, 'leaseMs'],
    ['a fractional lease', { leaseMs: 1.5 }, 'leaseMs'],
    ['a lease that is not a number', { leaseMs: '30s' }, 'leaseMs'],
    ['a lease equal to the TTL', { leaseMs: 60_000, ttlMs: 60_000 }, 'leaseMs'],
    ['a lease above the TTL', { ttlMs: 1000 }, 'leaseMs'],
    ['a negative TTL', { ttlMs: -5 }, 'ttlMs'],
    ['a negative in-flight wait', { inFlightWaitMs: -1 }, 'inFlightWaitMs'],
    ['a zero body cap', { maxBodyBytes: 0 }, 'maxBodyBytes'],
    ['a negative body cap', { maxBodyBytes: -10 }, 'maxBodyBytes'],
    ['a NaN body cap', { maxBodyBytes: Number.NaN }, 'maxBodyBytes'],
    ['a negative replay cache budget', { replayCache: { maxBytes: -1 } }, 'replayCache.maxBytes'],
    ['a digest that is not a function', { digest: 'sha256' }, 'digest'],
  ];
  for (const [name, options, option] of invalid) {
    it(`refuses ${name} in createIdempotencyHandler, idempotent() and createReferenceApp, naming ${option}`, () => {
      refuses(handlerWith(options), option);
      refuses(guardWith(options), option);
      if (option !== 'replayCache.maxBytes' && option !== 'digest') refuses(appWith(options), option);
    });
  }

  it('has one set of defaults: a 30 s lease (half the client’s 60 s retry budget), below the 24 h TTL', () => {
    expect(resolveServerOptions('test', {})).toMatchObject({ leaseMs: 30_000, ttlMs: 86_400_000, inFlightWaitMs: 5000, maxBodyBytes: 65_536 });
    expect(SERVER_DEFAULTS.leaseMs).toBe(30_000);
  });

  it('accepts an in-flight wait of 0 (answer 409 at once)', () => {
    expect(resolveServerOptions('test', { inFlightWaitMs: 0 }).inFlightWaitMs).toBe(0);
  });
});

describe('options of one front end', () => {
  it('createIdempotencyHandler refuses a namespace that is not a UUID, two operations on one endpoint, and a bad park backoff', () => {
    refuses(handlerWith({ namespace: 'payments' }), 'namespace');
    const operation = paymentOperation(external(), external());
    refuses(() => createIdempotencyHandler({ store, operations: [operation, operation], authenticate: () => 'acme' }), 'operations');
    refuses(handlerWith({ parkBackoff: { baseMs: 0, maxMs: 1000 } }), 'parkBackoff.baseMs');
    refuses(handlerWith({ parkBackoff: { baseMs: 2000, maxMs: 1000 } }), 'parkBackoff.maxMs');
  });

  it('idempotent() refuses a negative response cap, an unknown keyMissing, and a method that is not a name', () => {
    refuses(guardWith({ maxResponseBytes: -1 }), 'maxResponseBytes');
    refuses(guardWith({ keyMissing: 'allow' }), 'keyMissing');
    refuses(guardWith({ methods: ['POST', 'GET /x'] }), 'methods');
  });

  it('createReferenceApp refuses an empty metrics token and a crash fault without `crash`', () => {
    refuses(appWith({ metrics: { token: '' } }), 'metrics.token');
    refuses(appWith({ faults: 'crash-after:EXT2_SENT:1' }), 'crash');
  });
});

describe('a response larger than the store keeps', () => {
  it('is refused by the store with a ResponseTooLargeError, and the middleware stores the notice instead (no error as a signal by type alone)', async () => {
    const small = sqliteKeyStore({ path: ':memory:', maxResponseBytes: 1000 });
    await small.migrate();
    try {
      const admitted = await small.admit({
        clientId: 'acme',
        key: 'big',
        requestHash: 'h',
        endpoint: 'POST /x',
        requestBody: '',
        leaseMs: 10_000,
        ttlMs: 60_000,
      });
      if (!admitted.owned) throw new Error('not owned');
      const refused = small.write(admitted.lease, { kind: 'finish', response: { status: 201, headers: {}, body: 'x'.repeat(5000) } });
      await expect(refused).rejects.toBeInstanceOf(ResponseTooLargeError);
      await expect(refused).rejects.toMatchObject({ code: 'RESPONSE_TOO_LARGE', bytes: 5000, maxBytes: 1000 });

      // The guard's own cap (64 KiB) is above the store's: the response is delivered, its replay says it was not stored.
      const guard = createGuard({ store: small });
      const request = {
        clientId: 'acme',
        keyHeader: 'k-big',
        method: 'POST',
        route: '/x',
        path: '/x',
        contentType: null,
        body: { none: true as const },
        prefer: null,
      };
      const decision = await guard.decide(request);
      if (decision.kind !== 'run') throw new Error(decision.kind);
      const sent = await decision.execution.complete({ status: 201, headers: { 'content-type': 'text/plain' }, body: 'x'.repeat(5000) });
      expect(sent).toMatchObject({ status: 201, body: 'x'.repeat(5000) });
      const replay = await guard.decide(request);
      expect(replay.kind === 'answer' && replay.response.status).toBe(201);
      expect(replay.kind === 'answer' && String(replay.response.body)).toContain('response-not-stored');
    } finally {
      await small.close();
    }
  });
});
