import { describe, expect, it } from 'vitest';
import { v5 } from 'uuid';
import { DEFAULT_NAMESPACE, deriveKey, isValidKey, newKey, parseKeyHeader } from '../src/keys.js';

describe('keys', () => {
  it('documents the default namespace as uuid5(URL, "https://oncely.dev/ns/default")', () => {
    expect(DEFAULT_NAMESPACE).toBe(v5('https://oncely.dev/ns/default', v5.URL));
  });

  it('mints distinct, valid UUIDv7 keys', () => {
    const a = newKey();
    const b = newKey();
    expect(a).not.toBe(b);
    expect(a).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(isValidKey(a)).toBe(true);
  });

  it('derives the same key from the same parts and never collides on separator games', () => {
    expect(deriveKey(undefined, 'acme', 'pay', '2026-12-01')).toBe(deriveKey(DEFAULT_NAMESPACE, 'acme', 'pay', '2026-12-01'));
    expect(deriveKey(undefined, 'a|b', 'c')).not.toBe(deriveKey(undefined, 'a', 'b|c'));
    expect(deriveKey(undefined, 'a', 'bc')).not.toBe(deriveKey(undefined, 'ab', 'c'));
    expect(deriveKey(undefined, 'x')).not.toBe(deriveKey(v5('other', v5.URL), 'x'));
  });

  it('rejects a namespace that is not a UUID and an empty reference', () => {
    expect(() => deriveKey('not-a-uuid', 'x')).toThrow(TypeError);
    expect(() => deriveKey(undefined)).toThrow(TypeError);
  });

  it('accepts bare and sf-string keys exactly as PROTOCOL.md says', () => {
    expect(parseKeyHeader('abc-123')).toEqual({ ok: true, key: 'abc-123' });
    expect(parseKeyHeader('"abc-123"')).toEqual({ ok: true, key: 'abc-123' });
    expect(parseKeyHeader('A-Za-z0-9_.:~@/+=-')).toEqual({ ok: true, key: 'A-Za-z0-9_.:~@/+=-' });
    expect(parseKeyHeader('x'.repeat(255)).ok).toBe(true);
  });

  it.each([
    ['absent', null],
    ['empty', ''],
    ['empty sf-string', '""'],
    ['256 characters', 'x'.repeat(256)],
    ['a space', 'a b'],
    ['two headers joined', 'a, b'],
    ['an unclosed quote', '"abc'],
    ['a quote inside', 'a"b'],
    ['a control character', 'a\u0001b'],
    ['non-ASCII', 'clé'],
    ['SQL text', "x'; DROP TABLE idempotency_keys; --"],
  ])('rejects a key that is %s', (_label, value) => {
    const parsed = parseKeyHeader(value);
    expect(parsed.ok).toBe(false);
  });
});
