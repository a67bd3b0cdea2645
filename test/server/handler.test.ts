import { afterEach, describe, expect, it } from 'vitest';
import { createIdempotencyHandler } from '../../src/server/index.js';
import type { KeyStore } from '../../src/server/store.js';
import { sqliteKeyStore } from '../../src/server/sqlite.js';
import { createTestApp, paymentOperation, type TestApp } from './fixtures.js';

let app: TestApp;
afterEach(async () => {
  await app.store.close?.();
});

const keyRows = async (): Promise<number> => {
  const row = await app.store.transaction((tx) => tx.get<{ n: number }>('SELECT COUNT(*) AS n FROM oncely_keys'));
  return Number(row?.n);
};

describe('createIdempotencyHandler: the response matrix', () => {
  it('executes a first request once and echoes the Idempotency-Key', async () => {
    app = await createTestApp();
    const response = await app.post({ amount: 1250 }, { key: 'k-first' });
    expect(response.status).toBe(201);
    expect(response.headers.get('idempotency-key')).toBe('k-first');
    expect(response.headers.get('idempotency-replay')).toBeNull();
    expect(await app.count('ledger')).toBe(1);
    expect(app.rail.applied.size).toBe(1);
    expect(app.handler.metrics.snapshot().requests.executed).toBe(1);
  });

  it('replays a finished key byte-identically with its stored headers and Idempotency-Replay: true', async () => {
    app = await createTestApp();
    const first = await app.post({ amount: 1250 });
    const firstBody = await first.text();
    const again = await app.post({ amount: 1250 });
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotency-replay')).toBe('true');
    expect(again.headers.get('idempotency-key')).toBe('key-1');
    expect(again.headers.get('content-type')).toBe('application/json');
    expect(await again.text()).toBe(firstBody);
    expect(await app.count('ledger')).toBe(1);
    expect(app.rail.calls).toBe(1);
    expect(app.handler.metrics.snapshot().requests.replayed).toBe(1);
  });

  it('treats a re-ordered, re-spaced JSON body as the same request', async () => {
    app = await createTestApp();
    await app.post(undefined, { raw: '{"amount":7,"note":"x"}' });
    const again = await app.post(undefined, { raw: '{ "note": "x",  "amount": 7 }' });
    expect(again.headers.get('idempotency-replay')).toBe('true');
  });

  it('answers 409 with a short Retry-After while the owner is working, when duplicates do not wait', async () => {
    app = await createTestApp({ leaseMs: 5000, inFlightWaitMs: 0 });
    let open!: () => void;
    app.rail.gate = new Promise((resolve) => (open = resolve));
    const first = app.post({ amount: 10 });
    while (app.rail.calls === 0) await new Promise((r) => setTimeout(r, 5));
    const second = await app.post({ amount: 10 });
    expect(second.status).toBe(409);
    expect(second.headers.get('content-type')).toBe('application/problem+json');
    expect(second.headers.get('retry-after')).toBe('1');
    expect(second.headers.get('idempotency-key')).toBe('key-1');
    expect((await second.json()).type).toBe('https://oncely.dev/problems/key-in-flight');
    open();
    expect((await first).status).toBe(201);
    expect(await app.count('ledger')).toBe(1);
  });

  it('holds a duplicate until the original finishes, then answers it the stored response as a replay', async () => {
    app = await createTestApp();
    let open!: () => void;
    app.rail.gate = new Promise((resolve) => (open = resolve));
    const first = app.post({ amount: 10 });
    while (app.rail.calls === 0) await new Promise((r) => setTimeout(r, 5));
    let answered = false;
    const second = app.post({ amount: 10 }).finally(() => (answered = true));
    await new Promise((r) => setTimeout(r, 100));
    expect(answered).toBe(false);
    open();
    const [original, duplicate] = await Promise.all([first, second]);
    expect([original.status, duplicate.status]).toEqual([201, 201]);
    expect(duplicate.headers.get('idempotency-replay')).toBe('true');
    expect(await duplicate.text()).toBe(await original.text());
    expect(await app.count('ledger')).toBe(1);
    expect(app.rail.calls).toBe(1);
  });

  it("waits no longer than inFlightWaitMs or the client's Prefer: wait, then answers 409", async () => {
    app = await createTestApp({ inFlightWaitMs: 150 });
    let open!: () => void;
    app.rail.gate = new Promise((resolve) => (open = resolve));
    const first = app.post({ amount: 10 });
    while (app.rail.calls === 0) await new Promise((r) => setTimeout(r, 5));
    expect((await app.post({ amount: 10 })).status).toBe(409);
    const impatient = await createTestApp({ store: app.store, inFlightWaitMs: 60_000 });
    // Another handler (instance) on the same store: the client says it waits 0 s.
    expect((await impatient.post({ amount: 10 }, { headers: { prefer: 'wait=0' } })).status).toBe(409);
    open();
    expect((await first).status).toBe(201);
  });

  it('answers a Retry-After of the rest of the lease when the owner stopped committing', async () => {
    app = await createTestApp({ leaseMs: 10_000, inFlightWaitMs: 0 });
    expect((await app.post({ amount: 10 }, { key: 'probe' })).status).toBe(201);
    const row = await app.store.load('acme', 'probe');
    // An owner elsewhere whose last commit left 3 s of a 10 s lease: it has been silent for 7 s.
    await app.store.admit({
      clientId: 'acme',
      key: 'key-1',
      requestHash: row!.requestHash,
      endpoint: row!.endpoint,
      requestBody: row!.requestBody,
      leaseMs: 3000,
      ttlMs: 60_000,
    });
    const answer = await app.post({ amount: 10 });
    expect(answer.status).toBe(409);
    expect(answer.headers.get('retry-after')).toBe('3');
  });

  it("takes a waited-for key over as soon as its dead owner's lease runs out, and runs it once", async () => {
    app = await createTestApp({ leaseMs: 10_000 });
    const fingerprinted = await app.post({ amount: 10 }, { key: 'probe' });
    expect(fingerprinted.status).toBe(201);
    const row = await app.store.load('acme', 'probe');
    // A dead owner (another process) holding key-1 for 300 ms more, with nothing committed.
    await app.store.admit({
      clientId: 'acme',
      key: 'key-1',
      requestHash: row!.requestHash,
      endpoint: row!.endpoint,
      requestBody: row!.requestBody,
      leaseMs: 300,
      ttlMs: 60_000,
    });
    const waited = await app.post({ amount: 10 });
    expect(waited.status).toBe(201);
    expect(waited.headers.get('idempotency-replay')).toBeNull();
    expect(await app.count('ledger')).toBe(2);
    expect(app.handler.metrics.snapshot().events.lease_takeovers).toBe(1);
  });

  it('answers 422 to the same key with another body or path, and keeps the original intact', async () => {
    app = await createTestApp();
    const originalBody = await (await app.post({ amount: 10 })).text();
    const otherBody = await app.post({ amount: 11 });
    expect(otherBody.status).toBe(422);
    expect(otherBody.headers.get('idempotency-key')).toBe('key-1');
    expect((await otherBody.json()).type).toBe('https://oncely.dev/problems/key-reused');
    expect((await app.post({ amount: 10 }, { path: '/v1/payments?currency=USD' })).status).toBe(422);
    const replay = await app.post({ amount: 10 });
    expect(await replay.text()).toBe(originalBody);
    expect(await app.count('ledger')).toBe(1);
    expect(app.handler.metrics.snapshot().requests.mismatch).toBe(2);
  });

  it('answers 422 (not 409) to a mismatched body while the original is still in flight', async () => {
    app = await createTestApp();
    let open!: () => void;
    app.rail.gate = new Promise((resolve) => (open = resolve));
    const first = app.post({ amount: 10 });
    while (app.rail.calls === 0) await new Promise((r) => setTimeout(r, 5));
    expect((await app.post({ amount: 99 })).status).toBe(422);
    open();
    expect((await first).status).toBe(201);
  });

  it.each([
    ['missing', null],
    ['empty', ''],
    ['256 characters', 'k'.repeat(256)],
    ['a space', 'a b'],
    ['a tab', 'a\tb'],
    ['an unterminated quote', '"abc'],
    ['a non-ASCII character', 'caf\u00e9'],
    ['SQL text', "1' OR '1'='1"],
    ['two headers', 'a, b'],
    ['an empty sf-string', '""'],
  ])('answers 400 to a key with %s and stores nothing', async (_what, key) => {
    app = await createTestApp();
    const response = await app.post({ amount: 10 }, { key });
    expect(response.status).toBe(400);
    expect((await response.json()).type).toBe('https://oncely.dev/problems/invalid-key');
    expect(await keyRows()).toBe(0);
    expect(app.risk.calls).toBe(0);
  });

  it('accepts an RFC 8941 sf-string key as the same key unquoted', async () => {
    app = await createTestApp();
    await app.post({ amount: 10 }, { key: 'abc-1' });
    const quoted = await app.post({ amount: 10 }, { key: '"abc-1"' });
    expect(quoted.headers.get('idempotency-replay')).toBe('true');
  });

  it('answers 400 to an invalid body without consuming the key', async () => {
    app = await createTestApp();
    const notJson = await app.post(undefined, { raw: '{"amount":' });
    const invalid = await app.post({ amount: -1 });
    expect([notJson.status, invalid.status]).toEqual([400, 400]);
    expect((await invalid.json()).type).toBe('https://oncely.dev/problems/invalid-request');
    expect(await keyRows()).toBe(0);
    const valid = await app.post({ amount: 5 });
    expect(valid.status).toBe(201);
    expect(valid.headers.get('idempotency-replay')).toBeNull();
  });

  it('answers 413 to a body over the cap, by Content-Length or by counting a streamed body', async () => {
    app = await createTestApp({ maxBodyBytes: 100 });
    const big = JSON.stringify({ amount: 5, pad: 'x'.repeat(200) });
    expect((await app.post(undefined, { raw: big })).status).toBe(413);
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < 10; i += 1) controller.enqueue(new TextEncoder().encode('x'.repeat(50)));
        controller.close();
      },
    });
    const chunked = await app.handler.handle(
      new Request('http://oncely.test/v1/payments', {
        method: 'POST',
        headers: { authorization: 'Bearer test_acme', 'idempotency-key': 'k-stream' },
        body: stream,
        duplex: 'half',
      } as RequestInit),
    );
    expect(chunked?.status).toBe(413);
    expect((await chunked?.json()).type).toBe('https://oncely.dev/problems/too-large');
    const understated = await app.handler.handle(
      new Request('http://oncely.test/v1/payments', {
        method: 'POST',
        headers: { authorization: 'Bearer test_acme', 'idempotency-key': 'k-lying-length', 'content-length': '10' },
        body: big,
      }),
    );
    expect(understated?.status).toBe(413);
    expect(await keyRows()).toBe(0);
  });

  it('answers 401 with WWW-Authenticate: Bearer to a missing or unknown token, storing nothing', async () => {
    app = await createTestApp();
    const missing = await app.post({ amount: 5 }, { token: null });
    const unknown = await app.post({ amount: 5 }, { token: 'nope' });
    expect([missing.status, unknown.status]).toEqual([401, 401]);
    expect(missing.headers.get('www-authenticate')).toBe('Bearer');
    expect((await unknown.json()).type).toBe('https://oncely.dev/problems/unauthorized');
    expect(await keyRows()).toBe(0);
  });

  it('scopes keys per caller: the same key from two callers runs two operations', async () => {
    app = await createTestApp();
    const acme = await app.post({ amount: 5 }, { key: 'same', token: 'test_acme' });
    const globex = await app.post({ amount: 5 }, { key: 'same', token: 'test_globex' });
    expect([acme.status, globex.status]).toEqual([201, 201]);
    expect(globex.headers.get('idempotency-replay')).toBeNull();
    expect(await app.count('ledger')).toBe(2);
    expect(app.rail.applied.size).toBe(2);
  });

  it('stores a final refusal (402) and replays it byte-identically', async () => {
    app = await createTestApp();
    const declined = await app.post({ amount: 2_000_000 });
    const body = await declined.text();
    expect(declined.status).toBe(402);
    expect(JSON.parse(body).type).toBe('https://oncely.dev/problems/declined');
    const replay = await app.post({ amount: 2_000_000 });
    expect(replay.status).toBe(402);
    expect(replay.headers.get('idempotency-replay')).toBe('true');
    expect(await replay.text()).toBe(body);
    expect(await app.count('ledger')).toBe(0);
    expect(app.rail.calls).toBe(1);
  });

  it('answers 503 with Retry-After when the upstream is unavailable, and a retry executes', async () => {
    app = await createTestApp();
    app.rail.script.push('unavailable');
    const first = await app.post({ amount: 5 });
    expect(first.status).toBe(503);
    expect(first.headers.get('retry-after')).toBe('2');
    expect(first.headers.get('idempotency-key')).toBe('key-1');
    expect((await first.json()).type).toBe('https://oncely.dev/problems/upstream-unavailable');
    const retry = await app.post({ amount: 5 });
    expect(retry.status).toBe(201);
    expect(retry.headers.get('idempotency-replay')).toBeNull();
    expect(app.rail.applied.size).toBe(1);
    expect(await app.count('step_runs', 'step = $1', ['H1_DONE'])).toBe(1);
    expect(app.handler.metrics.snapshot().requests.transient).toBe(1);
  });

  it('resolves to undefined for a request no operation matches', async () => {
    app = await createTestApp();
    expect(await app.handler.handle(new Request('http://oncely.test/v1/payments'))).toBeUndefined();
    expect(await app.handler.handle(new Request('http://oncely.test/v1/other', { method: 'POST' }))).toBeUndefined();
  });
});

describe('createIdempotencyHandler: fail closed', () => {
  const failing = (inner: KeyStore, method: keyof KeyStore, times: number): KeyStore => {
    let left = times;
    return new Proxy(inner, {
      get(target, property, receiver) {
        const value = Reflect.get(target, property, receiver) as unknown;
        if (property !== method || typeof value !== 'function') return value;
        return (...args: unknown[]) => {
          if (left > 0) {
            left -= 1;
            return Promise.reject(new Error('SQLITE_BUSY: database is locked'));
          }
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    });
  };

  it('answers 503 and runs nothing when the store cannot admit', async () => {
    app = await createTestApp({ store: failing(sqliteKeyStore({ path: ':memory:' }), 'admit', 1) });
    const response = await app.post({ amount: 5 });
    expect(response.status).toBe(503);
    expect(response.headers.get('retry-after')).toBe('1');
    expect(app.risk.calls + app.rail.calls).toBe(0);
    expect((await app.post({ amount: 5 })).status).toBe(201);
  });

  it('reports the cause of a 503 the store caused to hooks.onError, with the caller and key', async () => {
    const heard: Array<[string, { clientId: string; key: string }]> = [];
    app = await createTestApp({
      store: failing(sqliteKeyStore({ path: ':memory:' }), 'admit', 1),
      hooks: { onError: (error, ref) => heard.push([String(error), { ...ref }]) },
    });
    expect((await app.post({ amount: 5 })).status).toBe(503);
    expect(heard).toEqual([[expect.stringContaining('SQLITE_BUSY'), { clientId: 'acme', key: 'key-1' }]]);
  });

  it('answers 503 and admits nothing when authenticate throws', async () => {
    app = await createTestApp();
    const broken = createIdempotencyHandler({
      store: app.store,
      operations: [paymentOperation(app.risk, app.rail)],
      authenticate: () => {
        throw new Error('token service down');
      },
    });
    const response = await broken.handle(
      new Request('http://oncely.test/v1/payments', { method: 'POST', headers: { 'idempotency-key': 'k' }, body: '{"amount":1}' }),
    );
    expect(response?.status).toBe(503);
    expect(response?.headers.get('retry-after')).toBe('1');
    expect(await keyRows()).toBe(0);
  });

  it('answers 503 when the first step fails, stores nothing (it commits with the admission), and a retry completes once', async () => {
    const heard: unknown[] = [];
    app = await createTestApp({ hooks: { onError: (error) => void heard.push(error) } });
    // H1's own statement fails while the switch holds a row.
    await app.store.transaction(async (tx) => {
      await tx.run('CREATE TABLE fail_switch (on_ INTEGER)');
      await tx.run('INSERT INTO fail_switch VALUES (1)');
      await tx.run(`CREATE TRIGGER h1_fails BEFORE INSERT ON step_runs WHEN (SELECT count(*) FROM fail_switch) > 0
                    BEGIN SELECT RAISE(ABORT, 'H1 failed'); END`);
    });
    const failed = await app.post({ amount: 5 });
    expect(failed.status).toBe(503);
    expect(failed.headers.get('retry-after')).toBe('1');
    expect(await keyRows()).toBe(0);
    expect(await app.count('step_runs')).toBe(0);
    expect(app.risk.calls).toBe(0);
    expect(heard.map((error) => String(error))).toEqual([expect.stringContaining('H1 failed')]);
    await app.store.transaction((tx) => tx.run('DELETE FROM fail_switch'));
    expect((await app.post({ amount: 5 })).status).toBe(201);
    expect(await app.count('ledger')).toBe(1);
    expect(await app.count('step_runs', 'step = $1', ['H1_DONE'])).toBe(1);
  });

  it('answers 503 when EXTn_SENT cannot commit, keeps the committed first step, and a retry completes the operation once', async () => {
    // With an afterCommit hook every point commits alone: EXT1_SENT after the admitted H1_DONE,
    // and here that commit fails once.
    const inner = sqliteKeyStore({ path: ':memory:' });
    let failures = 1;
    const sentFails: KeyStore = {
      ...inner,
      dialect: inner.dialect,
      write: (lease, change, work) =>
        change.kind === 'phase' && change.recoveryPoint === 'EXT1_SENT' && failures-- > 0
          ? Promise.reject(new Error('SQLITE_BUSY: database is locked'))
          : inner.write(lease, change, work),
    };
    app = await createTestApp({ store: sentFails, hooks: { afterCommit: () => undefined } });
    expect((await app.post({ amount: 5 })).status).toBe(503);
    // EXT1_SENT could not commit: the row stays at H1_DONE, with its lease released, and nothing was sent.
    const row = await app.store.load('acme', 'key-1');
    expect(row).toMatchObject({ state: 'started', recoveryPoint: 'H1_DONE', leaseRemainingMs: null });
    expect(app.risk.calls).toBe(0);
    expect((await app.post({ amount: 5 })).status).toBe(201);
    expect(await app.count('ledger')).toBe(1);
    expect(await app.count('step_runs', 'step = $1', ['H1_DONE'])).toBe(1);
  });

  it('answers 503 when the phase after an external call cannot commit, keeps the outcome mark it carried, and a retry does not call again', async () => {
    const inner = sqliteKeyStore({ path: ':memory:' });
    let failed = 0;
    let marks = 0;
    // H2 fails as a whole (with the EXT1_DONE mark as its `before`); the mark alone then commits.
    const h2Fails: KeyStore = {
      ...inner,
      dialect: inner.dialect,
      write: (lease, change, work) => {
        if (change.kind === 'phase' && change.recoveryPoint === 'EXT1_DONE') marks += 1;
        return change.kind === 'phase' && change.recoveryPoint === 'H2_DONE' && !failed++
          ? Promise.reject(new Error('SQLITE_BUSY: database is locked'))
          : inner.write(lease, change, work);
      },
    };
    app = await createTestApp({ store: h2Fails });
    expect((await app.post({ amount: 5 })).status).toBe(503);
    // H2 could not commit; the runner committed the EXT1_DONE mark it carried on its own, so the
    // row is at EXT1_DONE with its outcome, released; the risk check was made once.
    expect(marks).toBe(1);
    expect(await app.store.load('acme', 'key-1')).toMatchObject({ state: 'started', recoveryPoint: 'EXT1_DONE', leaseRemainingMs: null });
    expect(app.risk.calls).toBe(1);
    expect((await app.post({ amount: 5 })).status).toBe(201);
    expect(app.risk.calls).toBe(1);
    expect(await app.count('ledger')).toBe(1);
    expect(await app.count('step_runs', 'step = $1', ['H2_DONE'])).toBe(1);
  });
});

describe('createIdempotencyHandler: fingerprints', () => {
  it('canonicalises a JSON body sent without Content-Type, as the client fingerprint does', async () => {
    app = await createTestApp();
    const send = (raw: string) =>
      app.handler.handle(
        new Request('http://oncely.test/v1/payments', {
          method: 'POST',
          headers: { authorization: 'Bearer test_acme', 'idempotency-key': 'no-type' },
          body: new TextEncoder().encode(raw),
        }),
      );
    expect((await send('{"amount":3,"b":1}'))?.status).toBe(201);
    expect((await send('{ "b": 1, "amount": 3 }'))?.headers.get('idempotency-replay')).toBe('true');
  });
});

describe('createIdempotencyHandler under concurrency', () => {
  it('executes 100 identical concurrent requests once; every other answer is 409 or the replay', async () => {
    app = await createTestApp();
    const responses = await Promise.all(Array.from({ length: 100 }, () => app.post({ amount: 42 }, { key: 'hot' })));
    const executed = responses.filter((r) => r.status === 201 && r.headers.get('idempotency-replay') === null);
    const others = responses.filter((r) => !executed.includes(r));
    expect(executed).toHaveLength(1);
    for (const r of others) {
      expect(r.status === 409 ? r.headers.get('retry-after') : r.headers.get('idempotency-replay')).toBeTruthy();
    }
    expect(await app.count('ledger')).toBe(1);
    expect(app.rail.applied.size).toBe(1);
    expect(app.risk.calls).toBe(1);
  });
});
