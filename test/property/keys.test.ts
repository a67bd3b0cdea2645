/**
 * Properties of Idempotency-Key parsing (src/keys.ts) and of the server's answer to every key it
 * refuses: accepted keys round-trip in both header forms, and a refused one is a `400` that
 * stores nothing.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isValidKey, parseKeyHeader } from '../../src/keys.js';
import { sqliteKeyStore } from '../../src/server/sqlite.js';
import type { KeyStore } from '../../src/server/store/types.js';
import { ECHO_PATH, ECHO_TOKEN, echoServer, type EchoServer } from './support/echo-server.js';
import { checkProperty } from './settings.js';

const KEY_CHARS = [...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.:~@/+=-'];
/** PROTOCOL.md "Identity and keys", written out here so that the code is checked against the spec, not itself. */
const MAX_LENGTH = 255;
const protocolKey = (text: string): boolean => text.length >= 1 && text.length <= MAX_LENGTH && [...text].every((c) => KEY_CHARS.includes(c));
/** The key a header value carries by the protocol (bare, or one sf-string), or `undefined`. */
const protocolParse = (value: string): string | undefined => {
  if (protocolKey(value)) return value;
  return value.length >= 2 && value.startsWith('"') && value.endsWith('"') && protocolKey(value.slice(1, -1)) ? value.slice(1, -1) : undefined;
};

/** Keys the protocol allows: 1–255 characters of its set (long ones too, up to the limit). */
const validKey = fc.oneof(
  fc.string({ unit: fc.constantFrom(...KEY_CHARS), minLength: 1, maxLength: 40 }),
  fc.string({ unit: fc.constantFrom(...KEY_CHARS), minLength: MAX_LENGTH - 5, maxLength: MAX_LENGTH }),
);

/** Near misses: key characters with the characters that matter to the parser mixed in. */
const nearKey = fc.string({
  unit: fc.oneof(
    { weight: 8, arbitrary: fc.constantFrom(...KEY_CHARS) },
    { weight: 1, arbitrary: fc.constantFrom('"', '\\', ' ', '\t', ',', ';', '%', '*', '\u00a0', '\u0085', 'é', '\u{1F600}', '\uD800') },
    { weight: 1, arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }) },
  ),
  maxLength: 260,
});

/** Any header value: the whole of Unicode (lone surrogates included), near misses, long keys. */
const anyValue = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 40 }),
  nearKey,
  nearKey.map((text) => `"${text}"`),
  validKey.map((key) => `${key}${'k'.repeat(MAX_LENGTH)}`.slice(0, MAX_LENGTH + 1)),
);

/** RFC 8941 §3.3.3: `"` *( unescaped / `\` ( `"` / `\` ) ) `"`, with what it decodes to. */
const sfString = fc
  .array(
    fc.oneof(
      {
        weight: 6,
        arbitrary: fc
          .integer({ min: 0x20, max: 0x7e })
          .filter((c) => c !== 0x22 && c !== 0x5c)
          .map((c) => [String.fromCharCode(c), String.fromCharCode(c)] as const),
      },
      { weight: 4, arbitrary: fc.constantFrom(...KEY_CHARS).map((c) => [c, c] as const) },
      { weight: 1, arbitrary: fc.constantFrom(['\\"', '"'] as const, ['\\\\', '\\'] as const) },
    ),
    { maxLength: 40 },
  )
  .map((chars) => ({ text: `"${chars.map(([spelled]) => spelled).join('')}"`, decoded: chars.map(([, value]) => value).join('') }));

describe('parseKeyHeader', () => {
  it('accepts every valid key, bare and as an sf-string, and gives back exactly the key', () =>
    checkProperty(
      fc.property(validKey, (key) => {
        expect(parseKeyHeader(key)).toEqual({ ok: true, key });
        expect(parseKeyHeader(`"${key}"`)).toEqual({ ok: true, key });
      }),
      500,
    ));

  it('accepts exactly the values that carry a valid key, bare or quoted, and what it accepts round-trips in both forms', () =>
    checkProperty(
      fc.property(anyValue, (value) => {
        const parsed = parseKeyHeader(value);
        const expected = protocolParse(value);
        expect(parsed.ok ? parsed.key : undefined).toBe(expected);
        expect(isValidKey(value)).toBe(protocolKey(value));
        if (parsed.ok) {
          expect(parseKeyHeader(parsed.key)).toEqual(parsed);
          expect(parseKeyHeader(`"${parsed.key}"`)).toEqual(parsed);
        } else {
          expect(parsed.reason.length).toBeGreaterThan(0);
        }
      }),
      2000,
    ));

  it('reads an sf-string as RFC 8941 decodes it: accepted exactly when the decoded text is a valid key, escapes never smuggled into a key', () =>
    checkProperty(
      fc.property(sfString, ({ text, decoded }) => {
        const parsed = parseKeyHeader(text);
        expect(parsed.ok).toBe(protocolKey(decoded));
        if (parsed.ok) expect(parsed.key).toBe(decoded);
      }),
      1000,
    ));
});

/**
 * What a Node HTTP server hands the handler for a header sent as UTF-8: each byte as one
 * Latin-1 character. Values outside Latin-1 can only ever arrive this way.
 */
const asReceived = (value: string): string => Buffer.from(value, 'utf8').toString('latin1');

/**
 * Header values a client can send: any Unicode value as its UTF-8 bytes arrive, and no NUL, CR or
 * LF (fetch refuses them).
 */
const headerValue = anyValue.map((value) => (/^[\0-\xff]*$/.test(value) ? value : asReceived(value))).filter((value) => !/[\0\r\n]/.test(value));

describe('the server and Idempotency-Key', () => {
  let store: KeyStore;
  let server: EchoServer;
  beforeAll(async () => {
    store = sqliteKeyStore({ path: ':memory:' });
    await store.migrate?.();
    server = echoServer(store);
  });
  afterAll(async () => {
    await store.close?.();
  });
  const keyRows = async (): Promise<number> => Number((await store.transaction((tx) => tx.get<{ n: number }>('SELECT COUNT(*) AS n FROM oncely_keys')))?.n);

  it('answers 400 and stores nothing for every value the parser refuses, and executes under exactly the key the protocol reads otherwise', () =>
    checkProperty(
      fc.asyncProperty(
        fc.oneof(
          headerValue,
          validKey,
          validKey.map((key) => `"${key}"`),
        ),
        async (value) => {
          const request = new Request(`http://oncely.test${ECHO_PATH}`, {
            method: 'POST',
            headers: { authorization: ECHO_TOKEN, 'content-type': 'application/json', 'idempotency-key': value },
            body: '{"amount":1}',
          });
          // What the handler reads: Headers trims surrounding spaces and tabs.
          const key = protocolParse(request.headers.get('idempotency-key') ?? '');
          const before = await keyRows();
          const response = await server.fetch(request);
          if (key !== undefined) {
            expect(response.status).toBe(201);
            expect(response.headers.get('idempotency-key')).toBe(key);
            expect(await store.load('acme', key)).toMatchObject({ key, state: 'finished' });
          } else {
            expect(response.status).toBe(400);
            expect(response.headers.get('content-type')).toBe('application/problem+json');
            expect(((await response.json()) as { type: string }).type).toMatch(/invalid-key/);
            expect(await keyRows()).toBe(before);
          }
        },
      ),
      400,
    ));
});
