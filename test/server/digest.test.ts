import { describe, expect, it } from 'vitest';
import {
  canonicalJson,
  canonicalisesJson,
  fingerprint,
  fingerprintInput,
  fingerprintInputParsed,
  type FingerprintBody,
  type FingerprintOptions,
} from '../../src/fingerprint.js';
import { createReferenceApp } from '../../src/reference/app.js';
import { readCappedBody } from '../../src/server/read-body.js';
import { defaultDigest, webCryptoDigest } from '../../src/fingerprint.js';
import { sqliteKeyStore } from '../../src/server/sqlite.js';
import { nodeDigest } from '../../src/digest.node.js';
import { createTestApp } from './fixtures.js';

const utf8 = new TextEncoder();

/** Requests covering every branch of the canonical body: each must hash the same with both digests. */
const CASES: ReadonlyArray<readonly [string, string, string, FingerprintBody, FingerprintOptions]> = [
  ['a JSON body', 'POST', '/v1/payments', '{ "currency": "EUR", "amount": 1250 }', { contentType: 'application/json' }],
  ['a JSON body with no content type', 'post', '/v1/payments?dry=1', '{"b":[1,{"d":2,"c":3}],"a":"é\\u0000😀"}', {}],
  ['a JSON body given as bytes', 'POST', '/p', utf8.encode('{"z":1,"a":2}'), { contentType: 'application/merge-patch+json' }],
  ['a non-JSON text body', 'PUT', '/v1/files/a', 'raw  bytes {', { contentType: 'text/plain' }],
  ['a JSON-looking body sent as text', 'POST', '/p', '{ "a": 1 }', { contentType: 'text/plain; charset=utf-8' }],
  ['an empty string body', 'POST', '/v1/upload', '', {}],
  ['a null body', 'POST', '/v1/upload', null, { contentType: 'application/json' }],
  ['an undefined body', 'DELETE', '/v1/things/7', undefined, {}],
  ['non-UTF-8 bytes declared as JSON', 'POST', '/p', new Uint8Array([0xff, 0xfe, 0x7b, 0x00]), { contentType: 'application/json' }],
  ['binary bytes', 'PUT', '/v1/blobs/x', Uint8Array.from({ length: 4096 }, (_, i) => (i * 37) % 256), { contentType: 'application/octet-stream' }],
  ['a 64 KiB JSON body', 'POST', '/v1/batch', JSON.stringify({ rows: Array.from({ length: 3000 }, (_, i) => ({ i, note: 'x'.repeat(10) })) }), {}],
];

describe('nodeDigest', () => {
  it('matches the SHA-256 known-answer vectors (FIPS 180-2 "abc" and the empty input)', () => {
    expect(nodeDigest(utf8.encode('abc'))).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(nodeDigest(new Uint8Array(0))).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
  });

  it('returns its digest synchronously, as a string', () => {
    expect(typeof nodeDigest(utf8.encode('abc'))).toBe('string');
  });

  it.each(CASES)('gives the same fingerprint as WebCrypto for %s', async (_name, method, path, body, options) => {
    const input = fingerprintInput(method, path, body, options);
    const viaNode = await nodeDigest(input);
    expect(viaNode).toMatch(/^[0-9a-f]{64}$/);
    expect(viaNode).toBe(await webCryptoDigest(input));
    // …and the same as the client's fingerprint(), which is what the journal stores.
    expect(viaNode).toBe(await fingerprint(method, path, body, options));
  });
});

describe('defaultDigest', () => {
  it('is the synchronous node:crypto hash on Node, not the asynchronous WebCrypto one', () => {
    const digest = defaultDigest();
    const hex = digest(utf8.encode('abc'));
    expect(typeof hex).toBe('string');
    expect(hex).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });

  it.each(CASES)('gives the same fingerprint as WebCrypto for %s', async (_name, method, path, body, options) => {
    const input = fingerprintInput(method, path, body, options);
    expect(await defaultDigest()(input)).toBe(await webCryptoDigest(input));
  });

  it("uses node:crypto's createHash where it has no one-shot hash (Node before 20.12, other runtimes)", () => {
    const saved = process.getBuiltinModule;
    const { createHash } = saved('node:crypto');
    try {
      Object.defineProperty(process, 'getBuiltinModule', { value: () => ({ createHash }), configurable: true, writable: true });
      expect(defaultDigest()(utf8.encode('abc'))).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    } finally {
      Object.defineProperty(process, 'getBuiltinModule', { value: saved, configurable: true, writable: true });
    }
  });

  it('falls back to WebCrypto where process.getBuiltinModule is missing (browsers)', () => {
    const saved = process.getBuiltinModule;
    try {
      Object.defineProperty(process, 'getBuiltinModule', { value: undefined, configurable: true, writable: true });
      expect(defaultDigest()).toBe(webCryptoDigest);
    } finally {
      Object.defineProperty(process, 'getBuiltinModule', { value: saved, configurable: true, writable: true });
    }
  });
});

describe('fingerprintInputParsed (the server reuses the JSON it parsed)', () => {
  const TEXT_CASES = [
    ...CASES.filter((c): c is [string, string, string, string, FingerprintOptions] => typeof c[3] === 'string'),
    ['a body that is not JSON, no content type', 'POST', '/p', 'not json', {}],
    [
      'JSON with unicode escapes and a lone surrogate escape',
      'POST',
      '/p',
      '{"b":"\\ud800","a":"\\u00e9"}',
      { contentType: 'application/json; charset=utf-8' },
    ],
    ['a JSON number body', 'PUT', '/p?x=1', ' 12.50 ', {}],
  ] as ReadonlyArray<readonly [string, string, string, string, FingerprintOptions]>;
  it.each(TEXT_CASES)('gives the bytes fingerprintInput gives for %s', (_name, method, path, text, options) => {
    const contentType = options.contentType ?? null;
    let canonical: string | undefined;
    try {
      canonical = text.length === 0 || !canonicalisesJson(contentType) ? undefined : canonicalJson(JSON.parse(text));
    } catch {
      canonical = undefined;
    }
    const expected = fingerprintInput(method, path, text, options);
    expect(fingerprintInputParsed(method, path, text, contentType, canonical)).toEqual(expected);
    // An empty Content-Type is a type that is not JSON: the text is hashed as it is.
    expect(fingerprintInputParsed(method, path, text, '', canonical)).toEqual(fingerprintInput(method, path, text, { contentType: '' }));
  });
});

describe('readCappedBody', () => {
  it('reads a body with a Content-Length through arrayBuffer() without touching request.body (the costly web stream)', async () => {
    const bytes = utf8.encode('{"amount":1}');
    const request = {
      headers: new Headers({ 'content-length': String(bytes.byteLength) }),
      get body(): never {
        throw new Error('request.body was read');
      },
      arrayBuffer: () => Promise.resolve(bytes.slice().buffer),
    } as unknown as Request;
    const body = await readCappedBody(request, 1024);
    expect(body).toEqual({ ok: true, bytes });
  });
});

describe('createIdempotencyHandler with the Node digest', () => {
  it('stores the same request hash the client computes with fingerprint()', async () => {
    const app = await createTestApp({ digest: nodeDigest });
    try {
      const raw = '{ "note": "x", "amount": 7 }';
      expect((await app.post(undefined, { raw, key: 'k-hash' })).status).toBe(201);
      const row = await app.store.load('acme', 'k-hash');
      expect(row?.requestHash).toBe(await fingerprint('POST', '/v1/payments', raw, { contentType: 'application/json' }));
    } finally {
      await app.store.close?.();
    }
  });

  it('replays a key admitted by a WebCrypto server and still refuses it for another body (422), over the same store', async () => {
    const store = sqliteKeyStore({ path: ':memory:' });
    const before = await createTestApp({ store });
    try {
      expect((await before.post({ amount: 1250 }, { key: 'k-upgrade' })).status).toBe(201);
      const after = await createTestApp({ store, digest: nodeDigest });
      const replay = await after.post(undefined, { raw: '{ "amount" : 1250 }', key: 'k-upgrade' });
      expect(replay.status).toBe(201);
      expect(replay.headers.get('idempotency-replay')).toBe('true');
      expect((await after.post({ amount: 1251 }, { key: 'k-upgrade' })).status).toBe(422);
      expect(await after.count('ledger')).toBe(1);
    } finally {
      await store.close();
    }
  });

  it('hashes every keyed request with the injected digest: first execution, replay and mismatch alike', async () => {
    const inputs: string[] = [];
    const app = await createTestApp({
      // Off, so the replay is read from the store and hashed (a cached one may skip the hash:
      // replay-cache.test.ts).
      replayCache: false,
      digest: (input) => {
        inputs.push(new TextDecoder().decode(input));
        return nodeDigest(input);
      },
    });
    try {
      expect((await app.post({ amount: 5 }, { key: 'k-count' })).status).toBe(201);
      expect((await app.post({ amount: 5 }, { key: 'k-count' })).status).toBe(201);
      expect((await app.post({ amount: 6 }, { key: 'k-count' })).status).toBe(422);
      expect(inputs).toEqual(['POST\n/v1/payments\n{"amount":5}', 'POST\n/v1/payments\n{"amount":5}', 'POST\n/v1/payments\n{"amount":6}']);
    } finally {
      await app.store.close?.();
    }
  });
});

describe('createReferenceApp: the digest option', () => {
  it('hands the digest to its handler, so `oncely serve` fingerprints replays with node:crypto', async () => {
    let calls = 0;
    const app = createReferenceApp({
      store: sqliteKeyStore({ path: ':memory:' }),
      digest: (input) => {
        calls += 1;
        return nodeDigest(input);
      },
    });
    try {
      const send = (body: string) =>
        app.fetch(
          new Request('http://oncely.test/v1/payments', {
            method: 'POST',
            headers: { authorization: 'Bearer test_acme', 'idempotency-key': 'k-app', 'content-type': 'application/json' },
            body,
          }),
        );
      expect((await send(JSON.stringify({ amount: 1250, currency: 'EUR', reference: 'inv-digest' }))).status).toBe(201);
      // The same payment spelt differently, so that it has to be hashed to be recognised.
      const replay = await send(JSON.stringify({ reference: 'inv-digest', currency: 'EUR', amount: 1250 }));
      expect(replay.headers.get('idempotency-replay')).toBe('true');
      expect(calls).toBe(2);
    } finally {
      await app.close(0);
    }
  });
});
