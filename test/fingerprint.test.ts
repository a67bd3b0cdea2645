import { describe, expect, it } from 'vitest';
import { canonicalJson, fingerprint, fingerprintInput, webCryptoDigest } from '../src/fingerprint.js';

const PAYMENT = '{"amount":1250,"currency":"EUR","reference":"inv-7"}';

describe('fingerprint', () => {
  it('matches the known-answer vector: SHA-256 of "POST\\n/v1/payments\\n" + canonical JSON', async () => {
    // printf 'POST\n/v1/payments\n{"amount":1250,"currency":"EUR","reference":"inv-7"}' | sha256sum
    expect(await fingerprint('POST', '/v1/payments', PAYMENT)).toBe('273951c991971bc7dcc0d9cab1991be37dbdff0fcb74baa48b5a759fc528c1b7');
  });

  it('hashes an empty body as nothing after the second newline', async () => {
    // printf 'POST\n/v1/upload\n' | sha256sum
    const expected = '1295e7da5b24ea9a4c7224e63f5a78302e7b961d2870a86e3c5f689616111726';
    expect(await fingerprint('POST', '/v1/upload', null)).toBe(expected);
    expect(await fingerprint('POST', '/v1/upload', '')).toBe(expected);
  });

  it('does not depend on object key order', async () => {
    const reordered = '{"reference":"inv-7","currency":"EUR","amount":1250}';
    expect(await fingerprint('POST', '/v1/payments', reordered)).toBe(await fingerprint('POST', '/v1/payments', PAYMENT));
  });

  it('does not depend on insignificant whitespace', async () => {
    const spaced = '{\n  "amount": 1250,\n  "currency" : "EUR",\t"reference": "inv-7"\n}\n';
    expect(await fingerprint('POST', '/v1/payments', spaced)).toBe(await fingerprint('POST', '/v1/payments', PAYMENT));
  });

  it('sorts keys of nested objects too', async () => {
    const a = await fingerprint('POST', '/p', '{"x":{"b":1,"a":{"d":2,"c":3}}}');
    const b = await fingerprint('POST', '/p', '{"x":{"a":{"c":3,"d":2},"b":1}}');
    expect(a).toBe(b);
  });

  it('keeps array order significant', async () => {
    const a = await fingerprint('POST', '/p', '{"rows":[1,2,3]}');
    const b = await fingerprint('POST', '/p', '{"rows":[3,2,1]}');
    expect(a).not.toBe(b);
  });

  it('changes when a value changes', async () => {
    const other = '{"amount":1251,"currency":"EUR","reference":"inv-7"}';
    expect(await fingerprint('POST', '/v1/payments', other)).not.toBe(await fingerprint('POST', '/v1/payments', PAYMENT));
  });

  it('changes with the method', async () => {
    expect(await fingerprint('PUT', '/v1/payments', PAYMENT)).not.toBe(await fingerprint('POST', '/v1/payments', PAYMENT));
  });

  it('upper-cases the method, so "post" and "POST" agree', async () => {
    expect(await fingerprint('post', '/v1/payments', PAYMENT)).toBe(await fingerprint('POST', '/v1/payments', PAYMENT));
  });

  it('changes with the path and the query', async () => {
    const base = await fingerprint('POST', '/v1/payments', PAYMENT);
    expect(await fingerprint('POST', '/v1/refunds', PAYMENT)).not.toBe(base);
    expect(await fingerprint('POST', '/v1/payments?dry=1', PAYMENT)).not.toBe(base);
  });

  it('hashes a non-JSON body as its raw bytes', async () => {
    // printf 'PUT\n/v1/files/a\nraw  bytes {' | sha256sum
    expect(await fingerprint('PUT', '/v1/files/a', 'raw  bytes {')).toBe('68234e0293430192d229c381c4a95c47dc4400e8c4034ee7df5f4c4b4a0e1cf4');
  });

  it('hashes a non-JSON content type raw even when the text parses as JSON', async () => {
    const spaced = '{ "a": 1 }';
    const asText = await fingerprint('POST', '/p', spaced, { contentType: 'text/plain' });
    const asJson = await fingerprint('POST', '/p', spaced, { contentType: 'application/json; charset=utf-8' });
    expect(asText).not.toBe(asJson);
    expect(asJson).toBe(await fingerprint('POST', '/p', '{"a":1}', { contentType: 'application/problem+json' }));
  });

  it('hashes bytes and the same text identically', async () => {
    const bytes = new TextEncoder().encode(PAYMENT);
    expect(await fingerprint('POST', '/v1/payments', bytes, { contentType: 'application/json' })).toBe(await fingerprint('POST', '/v1/payments', PAYMENT));
  });

  it('hashes invalid UTF-8 bytes raw instead of failing', async () => {
    const bytes = new Uint8Array([0xff, 0xfe, 0x7b]);
    const hash = await fingerprint('POST', '/p', bytes, { contentType: 'application/json' });
    expect(hash).toMatch(/^[0-9a-f]{64}$/);
    expect(hash).not.toBe(await fingerprint('POST', '/p', new Uint8Array([0xff, 0xfe, 0x7c]), { contentType: 'application/json' }));
  });
});

describe('canonicalJson', () => {
  it('sorts keys, drops whitespace and keeps array order', () => {
    expect(canonicalJson({ b: 1, a: [2, { d: 3, c: 4 }] })).toBe('{"a":[2,{"c":4,"d":3}],"b":1}');
  });

  it('omits undefined members as JSON.stringify does', () => {
    expect(canonicalJson({ a: undefined, b: null })).toBe('{"b":null}');
  });

  it('escapes strings exactly as JSON.stringify does', () => {
    expect(canonicalJson({ 'é"\n': 'ü\u0000' })).toBe(JSON.stringify({ 'é"\n': 'ü\u0000' }));
  });
});

describe('fingerprintInput', () => {
  it('is the bytes the fingerprint hashes: METHOD, newline, path, newline, canonical body', async () => {
    const input = fingerprintInput('post', '/v1/payments', '{"reference":"inv-7","currency":"EUR","amount":1250}');
    expect(new TextDecoder().decode(input)).toBe(`POST\n/v1/payments\n${PAYMENT}`);
    expect(await webCryptoDigest(input)).toBe('273951c991971bc7dcc0d9cab1991be37dbdff0fcb74baa48b5a759fc528c1b7');
  });

  it('keeps non-UTF-8 bytes as they are', () => {
    const input = fingerprintInput('POST', '/p', new Uint8Array([0xff, 0xfe]), { contentType: 'application/json' });
    expect(Array.from(input.subarray(-2))).toEqual([0xff, 0xfe]);
    expect(input.length).toBe('POST\n/p\n'.length + 2);
  });
});

describe('webCryptoDigest', () => {
  it('matches the SHA-256 known-answer vectors in lower-case hex, leading zero bytes included', async () => {
    expect(await webCryptoDigest(new TextEncoder().encode('abc'))).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(await webCryptoDigest(new Uint8Array(0))).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
  });
});
