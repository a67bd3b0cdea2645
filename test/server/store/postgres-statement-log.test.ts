/**
 * The PostgreSQL store never writes a user value into SQL text: keys, request bodies, the data a
 * step commits and stored responses travel as bind parameters only, so a statement log
 * (`log_statement`, `pg_stat_statements`, a proxy's query log) never holds them, and no value can
 * be read as SQL. Every SQL text that leaves the process during real requests is captured where
 * it is written to the wire (pg's Query and Parse messages; PGlite's `query` and `exec`) and
 * searched for marker strings planted in each kind of value.
 */
import { randomBytes } from 'node:crypto';
import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createIdempotencyHandler, createRecoveryWorker } from '../../../src/server/index.js';
import { postgresKeyStore } from '../../../src/server/postgres.js';
import type { IdempotentOperation } from '../../../src/server/index.js';
import type { KeyStore } from '../../../src/server/store.js';
import type { PgliteLike, PgliteQueryable } from '../../../src/server/store/postgres-pglite.node.js';
import { resolvePgUrl } from '../../support/pg.js';

const RUN = randomBytes(4).toString('hex');
/** One marker per kind of value; plain letters and digits, so no quoting could disguise one. */
const MARK = {
  key: `k-MARKER-${RUN}`,
  body: `b-MARKER-${RUN}`,
  data: `d-MARKER-${RUN}`,
  outcome: `x-MARKER-${RUN}`,
  response: `r-MARKER-${RUN}`,
  header: `h-MARKER-${RUN}`,
};

/** What the store sent: every SQL text, and every bound value (where the markers belong). */
interface Capture {
  readonly texts: string[];
  readonly values: string[];
}

/**
 * H1 (a statement, data with a marker) → an external call (its outcome carries a marker) → final
 * (a statement, a response with a marker in its body and a header). `mode` scripts the call.
 */
function operation(mode: Array<'ok' | 'unknown' | 'unavailable'>): IdempotentOperation<{ memo: string }> {
  return {
    method: 'POST',
    path: '/v1/notes',
    parse: (body) => ({ ok: true, input: { memo: String((body as { memo?: unknown }).memo) } }),
    steps: [
      {
        kind: 'local',
        point: 'H1_DONE',
        async run(ctx, tx) {
          await tx.run('INSERT INTO notes (key, memo) VALUES ($1, $2)', [ctx.key, ctx.input.memo]);
          return { note: `${MARK.data}-${ctx.key}` };
        },
      },
      {
        kind: 'external',
        system: 1,
        sent: 'EXT1_SENT',
        done: 'EXT1_DONE',
        call: async () => {
          const next = mode.shift() ?? 'ok';
          if (next === 'unavailable') return { outcome: 'unavailable', retryAfterMs: 1 };
          if (next === 'unknown') return { outcome: 'unknown' };
          return { outcome: 'done', data: { ref: MARK.outcome } };
        },
        probe: async () => ({ outcome: 'done', data: { ref: MARK.outcome } }),
      },
    ],
    final: {
      kind: 'final',
      async run(ctx, tx) {
        await tx.run('UPDATE notes SET done = true WHERE key = $1', [ctx.key]);
        return {
          status: 201,
          headers: { 'content-type': 'application/json', 'x-receipt': MARK.header },
          body: JSON.stringify({ receipt: MARK.response, memo: ctx.input.memo, ref: ctx.data['ref'] }),
        };
      },
    },
  };
}

/** First executions, a replay, a reused key, a transient failure, a park and its recovery. */
async function exercise(store: KeyStore): Promise<void> {
  await store.migrate?.({ sqlite: '', postgres: 'CREATE TABLE IF NOT EXISTS notes (key text, memo text, done boolean)' });
  const mode: Array<'ok' | 'unknown' | 'unavailable'> = [];
  const handler = createIdempotencyHandler({
    store,
    operations: [operation(mode) as IdempotentOperation<unknown>],
    authenticate: () => 'acme',
    parkBackoff: { baseMs: 1, maxMs: 1 },
  });
  const post = async (key: string, memo = MARK.body): Promise<Response> => {
    const response = await handler.handle(
      new Request('http://oncely.test/v1/notes', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': key },
        body: JSON.stringify({ memo }),
      }),
    );
    if (!response) throw new Error('no operation matched');
    return response;
  };
  const first = await post(`${MARK.key}-1`);
  expect(first.status).toBe(201);
  expect(await first.text()).toContain(MARK.response);
  const replay = await post(`${MARK.key}-1`);
  expect([replay.status, replay.headers.get('idempotency-replay'), replay.headers.get('x-receipt')]).toEqual([201, 'true', MARK.header]);
  expect((await post(`${MARK.key}-1`, `${MARK.body}-other`)).status).toBe(422);
  mode.push('unavailable');
  expect((await post(`${MARK.key}-2`)).status).toBe(503);
  expect((await post(`${MARK.key}-2`)).status).toBe(201);
  mode.push('unknown');
  expect((await post(`${MARK.key}-3`)).status).toBe(202);
  await new Promise((resolve) => setTimeout(resolve, 20));
  expect((await createRecoveryWorker({ store, handler }).runOnce()).finished).toBe(1);
  expect(await store.load('acme', `${MARK.key}-3`)).toMatchObject({ state: 'finished', data: { ref: MARK.outcome } });
}

/** The markers found in `texts` (none, for the store to pass). */
const leaked = (texts: readonly string[]): Array<{ marker: string; text: string }> =>
  texts.flatMap((text) =>
    Object.values(MARK)
      .filter((marker) => text.includes(marker))
      .map((marker) => ({ marker, text })),
  );

function expectClean(capture: Capture): void {
  // The capture saw the run: the store's statements, and every marker on its way to the engine.
  expect(capture.texts.some((text) => /INSERT INTO \w+\.oncely_keys/.test(text))).toBe(true);
  const sent = [...capture.texts, ...capture.values];
  for (const marker of Object.values(MARK))
    expect(
      sent.some((value) => value.includes(marker)),
      marker,
    ).toBe(true);
  expect(leaked(capture.texts)).toEqual([]);
}

// Skipped only on a machine with no server: in CI (ONCELY_PG_URL, ONCELY_REQUIRE_PG=1) resolvePgUrl()
// throws instead, so the run fails rather than passing without these cases.
const url = await resolvePgUrl();
if (!url) console.warn('[pg harness] SKIPPING the PostgreSQL server cases of the statement log: no server reachable');

describe.skipIf(!url)('the SQL text the PostgreSQL store sends to a server', () => {
  const server = url ?? '';
  const capture: Capture = { texts: [], values: [] };
  type Wire = { query(text: string): void; parse(query: { text: string }): void; bind(config: { values?: unknown[] }): void };
  const wire = pg.Connection.prototype as unknown as Wire;
  const original = { query: wire.query, parse: wire.parse, bind: wire.bind };
  const admin = new pg.Pool({ connectionString: server, max: 1 });
  const schemas: string[] = [];
  const schema = (name: string): string => {
    schemas.push(`oncely_t_log_${name}_${RUN}`);
    return schemas.at(-1)!;
  };
  beforeAll(() => {
    wire.query = function (this: unknown, text) {
      capture.texts.push(text);
      return original.query.call(this, text);
    };
    wire.parse = function (this: unknown, query) {
      capture.texts.push(query.text);
      return original.parse.call(this, query);
    };
    wire.bind = function (this: unknown, config) {
      for (const value of config.values ?? []) capture.values.push(String(value));
      return original.bind.call(this, config);
    };
  });
  afterAll(async () => {
    Object.assign(wire, original);
    for (const name of schemas) await admin.query(`DROP SCHEMA IF EXISTS ${name} CASCADE`);
    await admin.end();
  });

  it('holds no key, request body, step data or response text when the store owns its pool', async () => {
    capture.texts.length = 0;
    capture.values.length = 0;
    const store = postgresKeyStore({ connectionString: server, schema: schema('own') });
    try {
      await exercise(store);
    } finally {
      await store.close();
    }
    expectClean(capture);
  });

  it('holds none of them either over a pool the caller owns', async () => {
    capture.texts.length = 0;
    capture.values.length = 0;
    const pool = new pg.Pool({ connectionString: server, max: 3 });
    const store = postgresKeyStore({ pool, schema: schema('pool') });
    try {
      await exercise(store);
    } finally {
      await store.close();
      await pool.end();
    }
    expectClean(capture);
  });
});

describe('the SQL text the PostgreSQL store sends to PGlite', () => {
  let db: PGlite;
  beforeAll(async () => {
    db = await PGlite.create();
  });
  afterAll(() => db?.close());

  /** `target` with every SQL text and value it is handed recorded in `capture`. */
  const recorded = <T extends PgliteQueryable>(target: T, capture: Capture): PgliteQueryable => ({
    query: (sql, params) => {
      capture.texts.push(sql);
      for (const value of params ?? []) capture.values.push(String(value));
      return target.query(sql, params);
    },
    exec: (sql) => {
      capture.texts.push(sql);
      return target.exec(sql);
    },
  });

  it('holds no key, request body, step data or response text', async () => {
    const capture: Capture = { texts: [], values: [] };
    const pglite: PgliteLike = {
      ...recorded(db, capture),
      transaction: (work) => db.transaction((tx) => work(recorded(tx, capture))),
    };
    const store = postgresKeyStore({ pglite, schema: `oncely_t_log_${RUN}` });
    try {
      await exercise(store);
    } finally {
      await store.close();
    }
    expectClean(capture);
  });
});
