import { v5 as uuidv5 } from 'uuid';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_NAMESPACE } from '../../src/keys.js';
import { externalKey } from '../../src/server/derived-key.js';
import { InvalidOptionError } from '../../src/server/errors/invalid-option-error.js';
import { createIdempotencyHandler } from '../../src/server/index.js';
import { sqliteKeyStore } from '../../src/server/sqlite.js';
import { createTestApp, paymentOperation, type TestApp } from './fixtures.js';

let app: TestApp | undefined;
afterEach(async () => {
  await app?.store.close?.();
  app = undefined;
});

describe('externalKey', () => {
  it('is deterministic and distinct across systems and across callers using the same key', () => {
    const k2 = externalKey(DEFAULT_NAMESPACE, 'acme', 'inv-7', 2);
    expect(externalKey(DEFAULT_NAMESPACE, 'acme', 'inv-7', 2)).toBe(k2);
    expect(new Set([k2, externalKey(DEFAULT_NAMESPACE, 'acme', 'inv-7', 1), externalKey(DEFAULT_NAMESPACE, 'globex', 'inv-7', 2)]).size).toBe(3);
    expect(k2).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });

  it('is exactly uuid v5 of the length-prefixed client id, key and extN (node:crypto path), for any key', () => {
    const namespaces = [DEFAULT_NAMESPACE, '6ba7b811-9dad-11d1-80b4-00c04fd430c8'];
    const keys = ['inv-7', '', 'ümlaut-ß', '支払い-😀', 'quote"back\\slash', 'x'.repeat(255), '0193a5f2-7c1e-7000-8000-000000000001', 'lone-\ud800'];
    const bytes = (text: string): number => new TextEncoder().encode(text).length;
    for (const namespace of namespaces) {
      for (const clientId of ['acme', 'org:acme', 'ö']) {
        for (const key of keys) {
          for (const n of [1, 2, 10]) {
            const name = `${bytes(clientId)}:${clientId}${bytes(key)}:${key}${bytes(`ext${n}`)}:ext${n}`;
            expect(externalKey(namespace, clientId, key, n)).toBe(uuidv5(new TextEncoder().encode(name), namespace));
          }
        }
      }
    }
  });

  it('never names one external effect for two (client id, key) pairs that join to the same text', () => {
    // Joined with ':' these pairs all read 'org:acme:inv-1:ext1'.
    const pairs = [
      ['org:acme', 'inv-1'],
      ['org', 'acme:inv-1'],
      ['org:acme:inv-1', ''],
      ['', 'org:acme:inv-1'],
    ] as const;
    const keys = pairs.map(([clientId, key]) => externalKey(DEFAULT_NAMESPACE, clientId, key, 1));
    expect(new Set(keys).size).toBe(pairs.length);
  });
});

describe('runSteps through the handler', () => {
  it('calls each external system with its derived key Kn and passes earlier steps’ data on', async () => {
    app = await createTestApp();
    const response = await app.post({ amount: 9 }, { key: 'inv-9' });
    const k1 = externalKey(DEFAULT_NAMESPACE, 'acme', 'inv-9', 1);
    const k2 = externalKey(DEFAULT_NAMESPACE, 'acme', 'inv-9', 2);
    expect([...app.risk.applied.keys()]).toEqual([k1]);
    expect([...app.rail.applied.keys()]).toEqual([k2]);
    expect(JSON.parse(await response.text()).charge).toBe(app.rail.applied.get(k2));
    const row = await app.store.load('acme', 'inv-9');
    expect(row).toMatchObject({ state: 'finished', recoveryPoint: 'EXT2_DONE', data: { H1_DONE: true, H2_DONE: true, risk: 'risk_1', charge: 'charge_1' } });
  });

  it('uses the handler’s namespace for derived keys', async () => {
    const namespace = '6ba7b811-9dad-11d1-80b4-00c04fd430c8';
    app = await createTestApp({ namespace });
    await app.post({ amount: 9 }, { key: 'inv-9' });
    expect(app.rail.applied.has(externalKey(namespace, 'acme', 'inv-9', 2))).toBe(true);
  });
});

describe('callers whose client ids hold the separator', () => {
  it('charges caller org:acme with key inv-1 and caller org with key acme:inv-1 once each, on the rail too', async () => {
    app = await createTestApp();
    const handler = createIdempotencyHandler({
      store: app.store,
      operations: [paymentOperation(app.risk, app.rail)],
      authenticate: (request) => request.headers.get('x-caller'),
    });
    const pay = async (caller: string, key: string, amount: number) =>
      handler.handle(
        new Request('http://oncely.test/v1/payments', {
          method: 'POST',
          headers: { 'x-caller': caller, 'idempotency-key': key, 'content-type': 'application/json' },
          body: JSON.stringify({ amount }),
        }),
      );
    const first = await pay('org:acme', 'inv-1', 500);
    const second = await pay('org', 'acme:inv-1', 700);
    expect([first?.status, second?.status]).toEqual([201, 201]);
    // Two payments are two charges: the second caller must not get the first one's.
    expect(app.rail.applied.size).toBe(2);
    const charges = [JSON.parse(await first!.text()).charge, JSON.parse(await second!.text()).charge];
    expect(new Set(charges).size).toBe(2);
    expect(await app.count('ledger')).toBe(2);
  });
});

describe('createIdempotencyHandler with several operations', () => {
  it('answers 422 to a key reused with another method on the same path', async () => {
    app = await createTestApp();
    const post = paymentOperation(app.risk, app.rail);
    const handler = createIdempotencyHandler({ store: app.store, operations: [post, { ...post, method: 'PUT' }], authenticate: () => 'acme' });
    const send = (method: string) =>
      handler.handle(
        new Request('http://oncely.test/v1/payments', {
          method,
          headers: { 'idempotency-key': 'k-method', 'content-type': 'application/json' },
          body: '{"amount":4}',
        }),
      );
    expect((await send('POST'))?.status).toBe(201);
    expect((await send('PUT'))?.status).toBe(422);
    expect(await app.count('ledger')).toBe(1);
  });
});

describe('createIdempotencyHandler options', () => {
  it('refuses a namespace that is not a UUID and two operations on one endpoint', () => {
    const store = sqliteKeyStore({ path: ':memory:' });
    const operation = paymentOperation(
      { applied: new Map(), calls: 0, probes: 0, script: [], probeBlind: false, gate: undefined },
      { applied: new Map(), calls: 0, probes: 0, script: [], probeBlind: false, gate: undefined },
    );
    const authenticate = () => 'acme';
    expect(() => createIdempotencyHandler({ store, operations: [operation], authenticate, namespace: 'payments' })).toThrow(InvalidOptionError);
    expect(() => createIdempotencyHandler({ store, operations: [operation, operation], authenticate })).toThrow(/two operations/);
    void store.close();
  });
});
