/**
 * Properties of the request fingerprint (src/fingerprint.ts): the canonical JSON ignores member
 * order and whitespace and nothing else, and the client's fingerprint is the one the server
 * stores, on SQLite and on PostgreSQL.
 */
import fc from 'fast-check';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/create-client.js';
import { canonicalJson, fingerprint } from '../../src/fingerprint.js';
import { memoryJournal } from '../../src/journal/memory.js';
import { scopeOf } from '../../src/journal/types.js';
import { sqliteKeyStore } from '../../src/server/sqlite.js';
import type { KeyStore } from '../../src/server/store/types.js';
import { openPgBackend, type PgBackend } from '../support/pg.js';
import { ECHO_PATH, ECHO_TOKEN, echoServer } from './support/echo-server.js';
import { jsonEqual, jsonValue, mutate, spell, type Json } from './support/json-arbitraries.js';
import { checkProperty } from './settings.js';

const JSON_TYPES = [undefined, 'application/json', 'application/json; charset=utf-8', 'application/merge-patch+json'] as const;

describe('canonicalJson', () => {
  it('gives every spelling of a value (member order, whitespace) the same canonical text, which parses back to the value', () =>
    checkProperty(
      fc.property(jsonValue(), fc.gen(), (value, g) => {
        const canonical = canonicalJson(value);
        expect(canonicalJson(JSON.parse(spell(value, g)))).toBe(canonical);
        expect(jsonEqual(JSON.parse(canonical) as Json, value)).toBe(true);
        // Canonical already: no whitespace left to remove, no member out of order.
        expect(canonicalJson(JSON.parse(canonical))).toBe(canonical);
      }),
      300,
    ));

  it('gives a value changed anywhere (a leaf, a member added, removed or renamed, array elements moved) another canonical text', () =>
    checkProperty(
      fc.property(jsonValue(), fc.gen(), (value, g) => {
        const changed = mutate(value, g);
        fc.pre(!jsonEqual(changed, value));
        expect(canonicalJson(changed)).not.toBe(canonicalJson(value));
      }),
      300,
    ));
});

describe('fingerprint', () => {
  it('is the same for two spellings of a JSON body, under every JSON content type', () =>
    checkProperty(
      fc.asyncProperty(jsonValue(), fc.constantFrom(...JSON_TYPES), fc.gen(), async (value, contentType, g) => {
        const [a, b] = [spell(value, g), spell(value, g)];
        expect(await fingerprint('POST', '/v1/echo', a, { contentType })).toBe(await fingerprint('POST', '/v1/echo', b, { contentType }));
      }),
      150,
    ));

  it('differs when the body’s value, the method or the path differs', () =>
    checkProperty(
      fc.asyncProperty(jsonValue(), fc.constantFrom(...JSON_TYPES), fc.gen(), async (value, contentType, g) => {
        const changed = mutate(value, g);
        fc.pre(!jsonEqual(changed, value));
        const text = spell(value, g);
        const base = await fingerprint('POST', '/v1/echo', text, { contentType });
        expect(await fingerprint('POST', '/v1/echo', spell(changed, g), { contentType })).not.toBe(base);
        expect(await fingerprint('PUT', '/v1/echo', text, { contentType })).not.toBe(base);
        expect(await fingerprint('POST', '/v1/echo?x=1', text, { contentType })).not.toBe(base);
      }),
      150,
    ));
});

/** How the client is asked to send a body: as a value (`json`) or as text with a content type. */
const sendings = fc.oneof(
  fc.record({ as: fc.constant('json' as const), value: jsonValue() }),
  fc.record({
    as: fc.constant('body' as const),
    value: jsonValue(),
    // No content type: the client fingerprints the text as text/plain, as fetch will send it.
    contentType: fc.constantFrom(undefined, 'application/json', 'application/vnd.oncely+json; charset=utf-8', 'text/plain'),
  }),
);

function storeParity(name: string, openStore: () => Promise<KeyStore>): void {
  it(`${name}: the client's journaled fingerprint and fingerprint() are the request_hash the server stores for the same request`, async () => {
    const store = await openStore();
    try {
      const server = echoServer(store);
      await checkProperty(
        fc.asyncProperty(sendings, fc.constantFrom('', '?page=2', '?q=%C3%A9&b=1&a=2'), fc.gen(), async (sending, query, g) => {
          const client = createClient({
            baseUrl: 'http://oncely.test',
            journal: memoryJournal(),
            headers: { authorization: ECHO_TOKEN },
            fetch: server.fetch,
            retry: { limit: 0 },
          });
          const key = randomUUID();
          const path = `${ECHO_PATH}${query}`;
          // What goes on the wire: the json option is sent as JSON.stringify's text; a text body
          // without a content type as text/plain (fetch's default).
          const body = sending.as === 'json' ? JSON.stringify(sending.value) : spell(sending.value, g);
          const contentType = sending.as === 'json' ? 'application/json' : (sending.contentType ?? 'text/plain;charset=UTF-8');
          const result =
            sending.as === 'json'
              ? await client.post(path, { key, json: sending.value })
              : await client.post(path, { key, body, ...(sending.contentType === undefined ? {} : { headers: { 'content-type': sending.contentType } }) });
          expect(result.status).toBe(201);
          const record = await client.journal.get(scopeOf('http://oncely.test'), key);
          const row = await store.load('acme', key);
          expect(row?.requestHash).toMatch(/^[0-9a-f]{64}$/);
          expect(record?.fingerprint).toBe(row?.requestHash);
          expect(await fingerprint('POST', path, body, { contentType })).toBe(row?.requestHash);
          await client.close();
        }),
        40,
      );
    } finally {
      await store.close?.();
    }
  }, 60_000);
}

describe('fingerprint: client and server agree', () => {
  let backend: PgBackend | undefined;
  beforeAll(async () => {
    backend = await openPgBackend('fingerprint_property');
  });
  afterAll(async () => {
    await backend?.close();
  });

  storeParity('SQLite', async () => {
    const store = sqliteKeyStore({ path: ':memory:' });
    await store.migrate();
    return store;
  });
  storeParity('PostgreSQL', async () => backend!.store());
});
