/**
 * A request the server can never process is a `400` (problem+json, a `detail` saying why) that
 * consumes no key, and the same on SQLite, PostgreSQL and MySQL; never a `503` a retry cannot cure.
 * Every case goes to every backend and the answers are compared. (MySQL: when a server answers,
 * always under ONCELY_REQUIRE_MYSQL=1, see test/support/mysql.ts.)
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sqliteKeyStore } from '../../src/server/store/sqlite.node.js';
import { canRunMysqlTests, openMysqlBackend, type MysqlBackend } from '../support/mysql.js';
import { openPgBackend, type PgBackend } from '../support/pg.js';
import { BASE, createInProcess, type InProcess } from './in-process.js';

const nested = (depth: number): string => `{"amount":1250,"currency":"EUR","reference":"deep","extra":${'['.repeat(depth - 1)}${']'.repeat(depth - 1)}}`;
const withReference = (reference: string): string => `{"amount":1250,"currency":"EUR","reference":"${reference}"}`;
const withAmount = (amount: string): string => `{"amount":${amount},"currency":"EUR","reference":"amount"}`;

/** Each body, and what the `detail` of its `400` must say. */
const HOSTILE: ReadonlyArray<readonly [string, string, RegExp]> = [
  ['nested 100 deep', nested(100), /nests deeper than 64/],
  ['nested 3 000 deep', nested(3000), /nests deeper than 64/],
  ['nested 100 000 deep', nested(100_000), /nests deeper than 64/],
  ['NUL in a value', withReference('a\\u0000b'), /NUL/],
  ['NUL in a member name', '{"amount":1250,"currency":"EUR","reference":"r","x\\u0000":1}', /NUL/],
  ['a lone high surrogate', withReference('\\ud800x'), /unpaired UTF-16 surrogate \(\\ud800\)/],
  ['a lone low surrogate', withReference('x\\udc00'), /unpaired UTF-16 surrogate \(\\udc00\)/],
  ['an amount that rounds to an integer', withAmount('12.9999999999999999'), /integer/],
  ['an amount with a fraction', withAmount('12.5'), /integer/],
  ['an amount in exponent form', withAmount('1e3'), /integer/],
  ['minus zero', withAmount('-0'), /at least 1/],
  ['2^53 + 1', withAmount('9007199254740993'), /integer/],
  ['a member named twice', '{"amount":1250,"currency":"EUR","reference":"r","reference":"s"}', /names the member "reference" twice/],
  ['a number beyond a double', '{"amount":1250,"currency":"EUR","reference":"r","x":1e400}', /the number 1e400, beyond the range of a double/],
  ['a member named twice, once escaped', '{"amount":1250,"currency":"EUR","reference":"r","\\u0072eference":"s"}', /names the member "reference" twice/],
];

/** Accepted, and stored as acknowledged. */
const FINE: ReadonlyArray<readonly [string, string, string]> = [
  ['an escaped surrogate pair', withReference('\\ud83d\\ude00'), '\u{1F600}'],
  ['a raw emoji', withReference('\u{1F600}'), '\u{1F600}'],
];

let backend: PgBackend;
let mysql: MysqlBackend | undefined;
const withMysql = await canRunMysqlTests();
const apps: Record<string, InProcess> = {};
beforeAll(async () => {
  backend = await openPgBackend('hostile bodies');
  // A cap large enough for the deepest case to reach the nesting check.
  apps['sqlite'] = await createInProcess({ store: sqliteKeyStore({ path: ':memory:' }), maxBodyBytes: 1 << 20 });
  apps['postgres'] = await createInProcess({ store: backend.open(backend.newSchema()), maxBodyBytes: 1 << 20 });
  if (withMysql) {
    mysql = await openMysqlBackend('hostile bodies');
    apps['mysql'] = await createInProcess({ store: mysql.open(await mysql.newDatabase()), maxBodyBytes: 1 << 20 });
  }
});
afterAll(async () => {
  for (const app of Object.values(apps)) await app.app.close(0);
  await backend.close();
  await mysql?.close();
});

const answer = async (response: Response) => ({
  status: response.status,
  type: response.headers.get('content-type'),
  detail: response.status === 400 ? ((await response.json()) as { detail: string }).detail : undefined,
});

describe('hostile request bodies on SQLite, PostgreSQL and MySQL', () => {
  it.each(HOSTILE)('%s: 400 with the reason, the key not consumed, the same answer on each', async (name, raw, reason) => {
    const key = `hostile-${name.replace(/\W+/g, '-')}`;
    const answers: Record<string, Awaited<ReturnType<typeof answer>>> = {};
    for (const [store, t] of Object.entries(apps)) {
      answers[store] = await answer(await t.post(key, undefined, { raw }));
      expect(answers[store], store).toEqual({ status: 400, type: 'application/problem+json', detail: expect.stringMatching(reason) });
      expect((await t.get(`/v1/idempotency-keys/${key}`)).status, store).toBe(404);
      // The key is free: the same key with a valid body executes.
      expect((await t.post(key, { amount: 1250, currency: 'EUR', reference: 'after' })).status, store).toBe(201);
    }
    expect(answers['postgres']).toEqual(answers['sqlite']);
    if (withMysql) expect(answers['mysql']).toEqual(answers['sqlite']);
  });

  it.each(HOSTILE.filter(([name]) => !name.includes('amount') && !name.includes('zero') && !name.includes('2^53')))(
    '%s: 400 from the inbox too, on each',
    async (_name, raw, reason) => {
      for (const [store, t] of Object.entries(apps)) {
        const event = raw.replace('{"amount":1250,"currency":"EUR",', '{"id":"evt","type":"t","data":{},');
        const response = await t.app.fetch(
          new Request(`${BASE}/v1/events`, { method: 'POST', headers: { authorization: 'Bearer test_acme', 'content-type': 'application/json' }, body: event }),
        );
        expect(await answer(response), store).toEqual({ status: 400, type: 'application/problem+json', detail: expect.stringMatching(reason) });
      }
    },
  );

  it('accepts an event nested exactly 64 deep and refuses 65, on each', async () => {
    for (const [store, t] of Object.entries(apps)) {
      for (const [depth, status] of [
        [64, 200],
        [65, 400],
      ] as const) {
        // The event object is level 1, `data` level 2.
        const data = `${'['.repeat(depth - 2)}${']'.repeat(depth - 2)}`;
        const body = `{"id":"evt-${depth}","type":"t","data":{"v":${data}}}`;
        const response = await t.app.fetch(
          new Request(`${BASE}/v1/events`, { method: 'POST', headers: { authorization: 'Bearer test_acme', 'content-type': 'application/json' }, body }),
        );
        expect(response.status, `${store} ${depth}`).toBe(status);
      }
    }
  });

  it.each(FINE)('%s: accepted, and read back exactly as acknowledged, on each', async (name, raw, reference) => {
    for (const [store, t] of Object.entries(apps)) {
      const created = await t.post(`fine-${name.replace(/\W+/g, '-')}`, undefined, { raw });
      expect(created.status, store).toBe(201);
      const body = (await created.json()) as { id: string; reference: string };
      expect(body.reference, store).toBe(reference);
      expect((await t.getJson<{ reference: string }>(`/v1/payments/${body.id}`)).reference, store).toBe(reference);
    }
  });
});
