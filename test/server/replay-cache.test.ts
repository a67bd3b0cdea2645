import { describe, expect, it } from 'vitest';
import { fingerprint } from '../../src/fingerprint.js';
import { createIdempotencyHandler, type IdempotentOperation } from '../../src/server/index.js';
import { createReplayCache, type CachedKey } from '../../src/server/replay-cache.js';
import type { KeyStore } from '../../src/server/store.js';
import { sqliteKeyStore } from '../../src/server/sqlite.js';
import { nodeDigest } from '../../src/digest.node.js';
import { createTestApp } from './fixtures.js';

const entry = (body: string, expiresAt = 10_000_000): CachedKey => ({
  requestHash: 'h',
  request: 'POST\n/v1/payments\napplication/json\n{}',
  endpoint: 'POST /v1/payments',
  response: { status: 201, headers: { 'content-type': 'application/json' }, body },
  replayHeaders: { 'content-type': 'application/json', 'idempotency-key': 'k', 'idempotency-replay': 'true' },
  expiresAt,
});

describe('createReplayCache', () => {
  it('returns what was set until the entry ages out', () => {
    const cache = createReplayCache({ maxAgeMs: 100 });
    cache.set('acme', 'k1', entry('{"a":1}', 1_000_000), 0);
    expect(cache.get('acme', 'k1', 99)?.response.body).toBe('{"a":1}');
    expect(cache.get('acme', 'k1', 100)).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  it('never holds a row within maxAgeMs + 60 s of its expiry (the store clock may differ from ours)', () => {
    const cache = createReplayCache({ maxAgeMs: 100 });
    cache.set('acme', 'near', entry('{}', 60_099), 0);
    cache.set('acme', 'far', entry('{}', 60_100), 0);
    expect([cache.get('acme', 'near', 1), cache.get('acme', 'far', 1)].map((e) => e !== undefined)).toEqual([false, true]);
  });

  it('keeps a client id with ":" apart from another client whose key spells the rest', () => {
    const cache = createReplayCache();
    cache.set('a:b', 'c', entry('first'), 0);
    expect(cache.get('a', 'b:c', 1)).toBeUndefined();
  });

  it('keeps callers apart: the same key of two clients is two entries', () => {
    const cache = createReplayCache();
    cache.set('acme', 'k', entry('acme'), 0);
    expect(cache.get('globex', 'k', 1)).toBeUndefined();
    cache.set('globex', 'k', entry('globex'), 0);
    expect([cache.get('acme', 'k', 1)?.response.body, cache.get('globex', 'k', 1)?.response.body]).toEqual(['acme', 'globex']);
  });

  it('evicts the least recently used entries beyond its byte budget, and never holds an entry larger than it', () => {
    const cache = createReplayCache({ maxBytes: 1_500 }); // each entry below counts ~560
    const body = 'x'.repeat(300);
    cache.set('acme', 'a', entry(body), 0);
    cache.set('acme', 'b', entry(body), 0);
    expect(cache.get('acme', 'a', 1)).toBeDefined(); // a is now the most recently used
    cache.set('acme', 'c', entry(body), 2);
    expect([cache.get('acme', 'a', 3), cache.get('acme', 'b', 3), cache.get('acme', 'c', 3)].map((e) => e !== undefined)).toEqual([true, false, true]);
    cache.set('acme', 'huge', entry('y'.repeat(2_000)), 4);
    expect(cache.get('acme', 'huge', 5)).toBeUndefined();
    expect(cache.size).toBe(2);
  });
});

/** A store that counts admissions and can be switched off (every call rejects, as a down database does). */
function observed(inner: KeyStore): { store: KeyStore; admits: () => number; down: (value: boolean) => void } {
  let admits = 0;
  let isDown = false;
  const guard =
    <A extends unknown[], R>(fn: (...args: A) => Promise<R>) =>
    (...args: A): Promise<R> =>
      isDown ? Promise.reject(new Error('store down')) : fn(...args);
  const store: KeyStore = {
    ...inner,
    dialect: inner.dialect,
    admit: guard((input) => {
      admits += 1;
      return inner.admit(input);
    }),
    load: guard(inner.load.bind(inner)),
    takeOver: guard(inner.takeOver.bind(inner)),
    write: guard(inner.write.bind(inner)) as KeyStore['write'],
    transaction: guard(inner.transaction.bind(inner)) as KeyStore['transaction'],
  };
  return { store, admits: () => admits, down: (value) => (isDown = value) };
}

describe('createIdempotencyHandler: replays from the cache of finished keys', () => {
  it('replays a finished key byte for byte without asking the store again, and says 422 for another body the same way', async () => {
    const { store, admits } = observed(sqliteKeyStore({ path: ':memory:' }));
    const app = await createTestApp({ store });
    try {
      const first = await app.post({ amount: 10 }, { key: 'k-cached' });
      expect(first.status).toBe(201);
      const original = await first.text();
      expect(admits()).toBe(1);
      for (let i = 0; i < 3; i += 1) {
        const replay = await app.post({ amount: 10 }, { key: 'k-cached' });
        expect([replay.status, replay.headers.get('idempotency-replay'), replay.headers.get('idempotency-key'), await replay.text()]).toEqual([
          201,
          'true',
          'k-cached',
          original,
        ]);
      }
      expect((await app.post({ amount: 11 }, { key: 'k-cached' })).status).toBe(422);
      expect(admits()).toBe(1);
      expect(await app.count('ledger')).toBe(1);
      expect(app.handler.metrics.render()).toMatch(/outcome="replayed"} 3/);
    } finally {
      await store.close?.();
    }
  });

  it('replays a byte-identical request without hashing it, hashes any other, and never confuses a body sent under another content type', async () => {
    const hashed: string[] = [];
    const app = await createTestApp({
      digest: (input) => {
        hashed.push(new TextDecoder().decode(input));
        return nodeDigest(input);
      },
    });
    try {
      const raw = '{ "amount": 10 }';
      expect((await app.post(undefined, { raw, key: 'k-id' })).status).toBe(201);
      expect(hashed).toHaveLength(1);
      expect((await app.post(undefined, { raw, key: 'k-id' })).headers.get('idempotency-replay')).toBe('true');
      expect(hashed).toHaveLength(1);
      // The same JSON spelt differently: hashed, equal, replayed.
      expect((await app.post(undefined, { raw: '{"amount":10}', key: 'k-id' })).headers.get('idempotency-replay')).toBe('true');
      expect(hashed).toHaveLength(2);
      // The same text as text/plain is not canonicalised: another fingerprint, so 422.
      expect((await app.post(undefined, { raw, key: 'k-id', headers: { 'content-type': 'text/plain' } })).status).toBe(422);
      expect(await app.count('ledger')).toBe(1);
    } finally {
      await app.store.close?.();
    }
  });

  it('tells a request with no Content-Type from one with an empty Content-Type, as the fingerprint does', async () => {
    const app = await createTestApp();
    try {
      const raw = '{ "amount": 10 }'; // canonical JSON would drop the spaces
      const send = (headers: Record<string, string>) =>
        app.handler.handle(
          new Request('http://oncely.test/v1/payments', {
            method: 'POST',
            headers: { authorization: 'Bearer test_acme', 'idempotency-key': 'k-ct', ...headers },
            body: new TextEncoder().encode(raw),
          }),
        );
      expect((await send({}))?.status).toBe(201);
      // Canonicalised with no type, hashed raw with an empty one: another request, so 422.
      expect((await send({ 'content-type': '' }))?.status).toBe(422);
      expect((await send({}))?.headers.get('idempotency-replay')).toBe('true');
    } finally {
      await app.store.close?.();
    }
  });

  it('fingerprints the body as sent, not as the operation parser changed it (a parser filling in a default)', async () => {
    const store = sqliteKeyStore({ path: ':memory:' });
    await store.migrate();
    const handler = createIdempotencyHandler({
      store,
      replayCache: false,
      authenticate: () => 'acme',
      operations: [
        {
          method: 'POST',
          path: '/v1/things',
          parse: (body) => {
            const fields = body as Record<string, unknown>;
            fields['currency'] ??= 'EUR'; // mutates what JSON.parse gave it
            return { ok: true, input: fields };
          },
          steps: [],
          final: { kind: 'final', run: async () => ({ status: 201, headers: {}, body: '{}' }) },
        } as IdempotentOperation<unknown>,
      ],
    });
    try {
      const send = (body: string) =>
        handler.handle(
          new Request('http://oncely.test/v1/things', { method: 'POST', headers: { 'idempotency-key': 'k-def', 'content-type': 'application/json' }, body }),
        );
      expect((await send('{"amount":1}'))?.status).toBe(201);
      expect((await send('{"amount":1,"currency":"EUR"}'))?.status).toBe(422);
      expect((await store.load('acme', 'k-def'))?.requestHash).toBe(
        await fingerprint('POST', '/v1/things', '{"amount":1}', { contentType: 'application/json' }),
      );
    } finally {
      await store.close();
    }
  });

  it('caches a key it replayed from the store too (a key another process finished)', async () => {
    const shared = sqliteKeyStore({ path: ':memory:' });
    const other = await createTestApp({ store: shared });
    expect((await other.post({ amount: 5 }, { key: 'k-elsewhere' })).status).toBe(201);
    const { store, admits } = observed(shared);
    const app = await createTestApp({ store });
    try {
      expect((await app.post({ amount: 5 }, { key: 'k-elsewhere' })).headers.get('idempotency-replay')).toBe('true');
      expect((await app.post({ amount: 5 }, { key: 'k-elsewhere' })).headers.get('idempotency-replay')).toBe('true');
      expect(admits()).toBe(1);
    } finally {
      await shared.close();
    }
  });

  it('stays fail-closed for what it does not know: with the store down, a cached key is replayed and any other key is 503', async () => {
    const { store, down } = observed(sqliteKeyStore({ path: ':memory:' }));
    const app = await createTestApp({ store });
    try {
      expect((await app.post({ amount: 7 }, { key: 'k-known' })).status).toBe(201);
      down(true);
      const replay = await app.post({ amount: 7 }, { key: 'k-known' });
      expect([replay.status, replay.headers.get('idempotency-replay')]).toEqual([201, 'true']);
      const unknown = await app.post({ amount: 7 }, { key: 'k-unknown' });
      expect([unknown.status, unknown.headers.get('retry-after')]).toEqual([503, '1']);
    } finally {
      down(false);
      await store.close?.();
    }
  });

  it('asks the store every time with replayCache: false, and for keys about to expire', async () => {
    const off = observed(sqliteKeyStore({ path: ':memory:' }));
    const uncached = await createTestApp({ store: off.store, replayCache: false });
    const expiring = observed(sqliteKeyStore({ path: ':memory:' }));
    // A TTL shorter than the entry lifetime plus the clock margin: never cached.
    const shortLived = await createTestApp({ store: expiring.store, ttlMs: 60_000 });
    try {
      for (let i = 0; i < 3; i += 1) expect((await uncached.post({ amount: 1 }, { key: 'k' })).status).toBe(201);
      expect(off.admits()).toBe(3);
      for (let i = 0; i < 3; i += 1) expect((await shortLived.post({ amount: 1 }, { key: 'k' })).status).toBe(201);
      expect(expiring.admits()).toBe(3);
    } finally {
      await off.store.close?.();
      await expiring.store.close?.();
    }
  });
});
