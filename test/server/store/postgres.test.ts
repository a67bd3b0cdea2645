import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { postgresKeyStore } from '../../../src/server/store/postgres.node.js';
import type { Lease, Tx } from '../../../src/server/store/types.js';
import { openPgBackend, resolvePgUrl } from '../../support/pg.js';
import { createTestApp } from '../fixtures.js';
import { postgresStoreSuite } from './postgres-suite.js';
import { runWholeRequest } from '../../../src/server/store/request-transaction.js';

postgresStoreSuite('postgresKeyStore on PostgreSQL (PGlite only when no server is reachable)', () => openPgBackend('store'));

const url = await resolvePgUrl();
if (!url) console.warn('[pg harness] SKIPPING the injected-pool test: it needs a PostgreSQL server');

describe.skipIf(!url)('postgresKeyStore over a pool the caller owns', () => {
  const pool = new pg.Pool({ connectionString: url, max: 3 });
  const schema = `oncely_t_pool_${process.pid}`;
  afterAll(async () => {
    await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await pool.end();
  });

  it('keeps the app tables in its schema and leaves the pool open on close', async () => {
    const store = postgresKeyStore({ pool, schema });
    await store.migrate({ sqlite: '', postgres: 'CREATE TABLE IF NOT EXISTS pool_probe (n int)' });
    await store.transaction((tx) => tx.run('INSERT INTO pool_probe (n) VALUES ($1)', [7]));
    const admitted = await store.admit({
      clientId: 'acme',
      key: 'k',
      requestHash: 'h',
      endpoint: 'POST /x',
      requestBody: '{}',
      leaseMs: 1000,
      ttlMs: 60_000,
    });
    expect(admitted.owned).toBe(true);
    await store.close();
    const rows = await pool.query<{ n: number }>(`SELECT n FROM ${schema}.pool_probe`);
    expect(rows.rows).toEqual([{ n: 7 }]);
  });

  it("takes its schema from a URL whose options set search_path, and keeps the URL's other settings", async () => {
    const urlSchema = `${schema}_url`;
    const withOptions = `${url}?options=${encodeURIComponent(`-c search_path=${urlSchema} -c synchronous_commit=off`)}`;
    const store = postgresKeyStore({ connectionString: withOptions });
    try {
      await store.migrate({ sqlite: '', postgres: 'CREATE TABLE IF NOT EXISTS url_probe (n int)' });
      const settings = await store.transaction((tx) =>
        tx.get<{ sc: string; sp: string }>(`SELECT current_setting('synchronous_commit') AS sc, current_setting('search_path') AS sp`),
      );
      expect(settings?.sc).toBe('off');
      expect(settings?.sp.startsWith(urlSchema)).toBe(true);
      const tables = await pool.query(`SELECT tablename FROM pg_tables WHERE schemaname = $1 ORDER BY 1`, [urlSchema]);
      expect(tables.rows.map((r) => r.tablename)).toContain('url_probe');
      expect(tables.rows.map((r) => r.tablename)).toContain('oncely_schema_version');
    } finally {
      await store.close();
      await pool.query(`DROP SCHEMA IF EXISTS ${urlSchema} CASCADE`);
    }
  });

  it("takes its schema from the search_path of a pool passed in (its URL's options, or its options setting), as the app's own statements see it", async () => {
    for (const [how, config] of [
      ['url', (s: string) => ({ connectionString: `${url}?options=${encodeURIComponent(`-c search_path=${s}`)}` })],
      ['options', (s: string) => ({ connectionString: url, options: `-c search_path=${s},public` })],
    ] as const) {
      const appSchema = `${schema}_app_${how}`;
      const appPool = new pg.Pool({ ...config(appSchema), max: 2 });
      const store = postgresKeyStore({ pool: appPool });
      try {
        await store.migrate({ sqlite: '', postgres: 'CREATE TABLE IF NOT EXISTS orders (id text PRIMARY KEY)' });
        // The app's statement as the app writes it, unqualified, in the store's transaction.
        await store.transaction((tx) => tx.run('INSERT INTO orders (id) VALUES ($1)', ['ord_1']));
        const tables = await pool.query<{ tablename: string }>(`SELECT tablename FROM pg_tables WHERE schemaname = $1 ORDER BY 1`, [appSchema]);
        expect(tables.rows.map((r) => r.tablename)).toEqual(['oncely_keys', 'oncely_schema_version', 'orders']);
        expect((await pool.query(`SELECT id FROM ${appSchema}.orders`)).rows).toEqual([{ id: 'ord_1' }]);
      } finally {
        await store.close();
        await appPool.end();
        await pool.query(`DROP SCHEMA IF EXISTS ${appSchema} CASCADE`);
      }
    }
  });

  it('never sends a mark twice, even when the round trip that carried it failed after PostgreSQL ran it', async () => {
    // The answer of the round trip carrying the mark is lost (the connection resets after the
    // server ran every statement): a second copy of the mark would move the row back. The mark
    // is folded into the write's own statement: a phase's point or the final response, sent alone
    // when the work runs no statement (a prepared statement, sent by pool.query), or with the
    // COMMIT of a phase that runs statements (on a checked-out connection).
    const { pool, lose, carried } = lossyPool(/risk/);
    const store = postgresKeyStore({ pool, schema: `${schema}_resend` });
    try {
      await store.migrate({ sqlite: '', postgres: 'CREATE TABLE IF NOT EXISTS notes (note text)' });
      const input = (key: string) => ({ clientId: 'acme', key, requestHash: 'h', endpoint: 'POST /x', requestBody: '{}', leaseMs: 10_000, ttlMs: 86_400_000 });
      const before = { recoveryPoint: 'EXT1_DONE', data: { risk: 'low' } };
      const note = (tx: Tx) => tx.run('INSERT INTO notes (note) VALUES ($1)', ['h2']);
      const cases = [
        {
          key: 'phase',
          loses: /oncely_point.*risk/s,
          at: { state: 'started', recoveryPoint: 'EXT2_SENT', data: { risk: 'low' } },
          run: (lease: Lease) => store.write(lease, { kind: 'phase', recoveryPoint: 'EXT2_SENT', leaseMs: 10_000, before }),
        },
        {
          key: 'phase-work',
          loses: /oncely_point.*"H2_DONE"/s,
          at: { state: 'started', recoveryPoint: 'H2_DONE', data: { risk: 'low' } },
          run: (lease: Lease) => store.write(lease, { kind: 'phase', recoveryPoint: 'H2_DONE', leaseMs: 10_000, before }, note),
        },
        {
          key: 'finish',
          loses: /oncely_finish_after/,
          at: { state: 'finished', recoveryPoint: 'EXT1_DONE', data: { risk: 'low' } },
          run: (lease: Lease) => store.write(lease, { kind: 'finish', response: { status: 201, headers: {}, body: '{}' }, before }),
        },
      ];
      for (const { key, loses, at, run } of cases) {
        const admitted = await store.admit(input(key));
        if (!admitted.owned) throw new Error('not owned');
        await store.write(admitted.lease, { kind: 'phase', recoveryPoint: 'EXT1_SENT', leaseMs: 10_000 });
        carried.length = 0;
        const lost = lose(loses);
        // A phase's point is found committed by reading the row (see the next test); the final response fails.
        if (key === 'phase') expect(await run(admitted.lease), key).toEqual({ ok: true, value: undefined });
        else if (key === 'phase-work') expect(await run(admitted.lease), key).toEqual({ ok: true, value: 1 });
        else await expect(run(admitted.lease), key).rejects.toThrow('ECONNRESET');
        expect(lost(), key).toBe(true);
        // Everything in that round trip committed, and nothing carried the mark again after it.
        expect(carried, key).toHaveLength(1);
        expect(await store.load('acme', key), key).toMatchObject(at);
      }
    } finally {
      await store.close();
      await pool.query(`DROP SCHEMA IF EXISTS ${schema}_resend CASCADE`);
      await pool.end();
    }
  });

  it('finds a phase committed when the answer to its round trip is lost (EXTn_SENT folded in, with and without statements)', async () => {
    const { pool, lose } = lossyPool(/$^/);
    const store = postgresKeyStore({ pool, schema: `${schema}_landed` });
    try {
      await store.migrate({ sqlite: '', postgres: 'CREATE TABLE IF NOT EXISTS notes (note text)' });
      const input = (key: string) => ({ clientId: 'acme', key, requestHash: 'h', endpoint: 'POST /x', requestBody: '{}', leaseMs: 10_000, ttlMs: 86_400_000 });
      const note = (tx: Tx) => tx.run('INSERT INTO notes (note) VALUES ($1)', ['n']);
      const sent = (n: number) => ({ recoveryPoint: `EXT${n}_SENT` });
      const lost = lose(/oncely_point.*"EXT1_SENT"/s);
      const admitted = await store.admit(input('landed'), { phase: { recoveryPoint: 'H1_DONE', leaseMs: 10_000, after: sent(1) }, work: note });
      expect(lost()).toBe(true);
      if (!admitted.owned) throw new Error('not owned');
      expect(admitted.first).toEqual({ value: 1 });
      // The same without a call after the first phase: the row at H1_DONE says the COMMIT ran.
      const alone = lose(/oncely_point.*"H1_DONE"/s);
      const local = await store.admit(input('landed-local'), { phase: { recoveryPoint: 'H1_DONE', leaseMs: 10_000 }, work: note });
      expect(alone()).toBe(true);
      expect(local.owned && local.first).toEqual({ value: 1 });
      expect(await store.load('acme', 'landed-local')).toMatchObject({ state: 'started', recoveryPoint: 'H1_DONE' });
      const cases = [
        { point: 2, loses: /oncely_point.*"EXT2_SENT"/s, work: note, value: 1 },
        { point: 3, loses: /oncely_point.*EXT3_SENT/s, work: undefined, value: undefined },
      ];
      for (const { point, loses, work, value } of cases) {
        const gone = lose(loses);
        expect(
          await store.write(admitted.lease, { kind: 'phase', recoveryPoint: `H${point}_DONE`, leaseMs: 10_000, after: sent(point) }, work),
          `EXT${point}`,
        ).toEqual({
          ok: true,
          value,
        });
        expect(gone(), `EXT${point}`).toBe(true);
        expect(await store.load('acme', 'landed')).toMatchObject({ state: 'started', recoveryPoint: `EXT${point}_SENT` });
      }
    } finally {
      await store.close();
      await pool.query(`DROP SCHEMA IF EXISTS ${schema}_landed CASCADE`);
      await pool.end();
    }
  });

  it('finds a whole request committed when the answer to its COMMIT is lost: the finished row, the work run once', async () => {
    const { pool, lose } = lossyPool(/$^/);
    const wholeSchema = `${schema}_whole_landed`;
    const store = postgresKeyStore({ pool, schema: wholeSchema });
    try {
      await store.migrate({ sqlite: '', postgres: 'CREATE TABLE IF NOT EXISTS notes (note text)' });
      const input = (key: string) => ({ clientId: 'acme', key, requestHash: 'h', endpoint: 'POST /x', requestBody: '{}', leaseMs: 10_000, ttlMs: 86_400_000 });
      const response = { status: 201, headers: { 'content-type': 'application/json', 'x-b': '2' }, body: '{"id":"ord_1"}' };
      const whole = (note: string) => ({ work: (tx: Tx) => tx.run('INSERT INTO notes (note) VALUES ($1)', [note]), response: () => response });
      // The COMMIT's own answer lost, and the answer of the response's statement sent with it.
      for (const [key, loses] of [
        ['commit', /^COMMIT$/],
        ['finish', /oncely_keys \(client_id, key, request_hash, endpoint, request_body, state, response_status/],
      ] as const) {
        const lost = lose(loses);
        const admitted = await runWholeRequest(store, input(key), whole(key));
        expect(lost(), key).toBe(true);
        expect(admitted, key).toMatchObject({ owned: true, row: { key, state: 'finished', response }, first: { value: 1 } });
        expect(await store.load('acme', key), key).toMatchObject({ state: 'finished', response });
        expect((await pool.query(`SELECT note FROM ${wholeSchema}.notes WHERE note = $1`, [key])).rows, key).toEqual([{ note: key }]);
      }
      // Another response in the row when the answer is lost (another owner's, after this
      // transaction rolled back): not this request's commit, so its own failure stands.
      const other = lose(/^COMMIT$/, () => pool.query(`UPDATE ${wholeSchema}.oncely_keys SET response_body = '{"id":"ord_2"}' WHERE key = 'other'`));
      await expect(runWholeRequest(store, input('other'), whole('other'))).rejects.toThrow('ECONNRESET');
      expect(other()).toBe(true);
    } finally {
      await store.close();
      await pool.query(`DROP SCHEMA IF EXISTS ${wholeSchema} CASCADE`);
      await pool.end();
    }
  });

  it('runs its own pool at READ COMMITTED where the database defaults to REPEATABLE READ: a duplicate that waited for the owner gets the row', async () => {
    // The URL's options stand for a database whose default is stricter; the store's come after them.
    const strictUrl = `${url}${url!.includes('?') ? '&' : '?'}options=${encodeURIComponent('-c default_transaction_isolation=repeatable\\ read')}`;
    const probe = new pg.Client({ connectionString: strictUrl });
    await probe.connect();
    expect((await probe.query<{ level: string }>(`SELECT current_setting('default_transaction_isolation') AS level`)).rows[0]!.level).toBe('repeatable read');
    await probe.end();
    const store = postgresKeyStore({ connectionString: strictUrl, schema: `${schema}_rr` });
    try {
      await store.migrate();
      const input = { clientId: 'acme', key: 'rr', requestHash: 'h', endpoint: 'POST /x', requestBody: '{}', leaseMs: 10_000, ttlMs: 86_400_000 };
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      let started!: () => void;
      const working = new Promise<void>((resolve) => (started = resolve));
      let level: string | undefined;
      const owner = store.admit(input, {
        phase: { recoveryPoint: 'H1_DONE', leaseMs: 10_000 },
        work: async (tx: Tx) => {
          level = (await tx.get<{ transaction_isolation: string }>('SHOW transaction_isolation'))?.transaction_isolation;
          started();
          await gate;
          return 1;
        },
      });
      await working;
      expect(level).toBe('read committed');
      const duplicates = Array.from({ length: 5 }, () => store.admit(input));
      await new Promise((resolve) => setTimeout(resolve, 200));
      release();
      expect((await owner).owned).toBe(true);
      for (const duplicate of await Promise.all(duplicates)) expect(duplicate).toMatchObject({ owned: false, row: { recoveryPoint: 'H1_DONE' } });
    } finally {
      await store.close();
      await pool.query(`DROP SCHEMA IF EXISTS ${schema}_rr CASCADE`);
    }
  });

  it('refuses at migrate, saying how to fix it, a pool whose sessions default to REPEATABLE READ', async () => {
    const strict = new pg.Pool({ connectionString: url, max: 2, options: '-c default_transaction_isolation=repeatable\\ read' });
    const store = postgresKeyStore({ pool: strict, schema: `${schema}_rr_pool` });
    try {
      await expect(store.migrate()).rejects.toThrow(/need READ COMMITTED, and this pool's sessions default to repeatable read: create the pool with options/);
      expect((await strict.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_namespace WHERE nspname = $1`, [`${schema}_rr_pool`])).rows[0]!.n).toBe(0);
    } finally {
      await store.close();
      await strict.end();
    }
  });

  it('answers a duplicate of a key at once while its owner holds the row in a phase', async () => {
    const store = postgresKeyStore({ pool, schema: `${schema}_lock` });
    const holder = new pg.Client({ connectionString: url });
    await holder.connect();
    try {
      await store.migrate();
      const input = (key: string) => ({ clientId: 'acme', key, requestHash: 'h', endpoint: 'POST /x', requestBody: '{}', leaseMs: 10_000, ttlMs: 86_400_000 });
      expect((await store.admit(input('exists'))).owned).toBe(true);
      // Another session locks the row, as an owner's fenced phase does until its COMMIT: a
      // duplicate is answered anyway (a 409 storm on one key never queues behind the phase).
      await holder.query('BEGIN');
      await holder.query(`SELECT 1 FROM ${schema}_lock.oncely_keys WHERE client_id = 'acme' AND key = 'exists' FOR UPDATE`);
      const answered = await Promise.race([store.admit(input('exists')), new Promise((resolve) => setTimeout(() => resolve('waited'), 2000))]);
      expect(answered).toMatchObject({ owned: false, row: { key: 'exists', state: 'started' } });
      await holder.query('ROLLBACK');
    } finally {
      await holder.end();
      await store.close();
      await pool.query(`DROP SCHEMA IF EXISTS ${schema}_lock CASCADE`);
    }
  });

  it('commits each write durably, an outcome mark inside the write after it, and sends BEGIN and COMMIT with other statements', async () => {
    // Every statement the store sends, with the transaction it ran in (0: on its own) and its round
    // trip: statements sent on a connection while an earlier one awaits its answer share one.
    const sent: Array<{ tx: number; trip: number; text: string; params: readonly unknown[]; named?: boolean }> = [];
    const traced = new pg.Pool({ connectionString: url, max: 3, pipeline: true } as pg.PoolConfig);
    const direct = traced.query.bind(traced);
    // A prepared statement arrives as a config object.
    type Sent = string | { text: string; values?: unknown[] };
    let trips = 0;
    const awaiting = new Map<number, number>();
    const log = (tx: number, query: Sent, params?: unknown[]): void => {
      const trip = tx !== 0 && (awaiting.get(tx) ?? 0) > 0 ? sent.findLast((s) => s.tx === tx)!.trip : (trips += 1);
      sent.push(
        typeof query === 'string'
          ? { tx, trip, text: query, params: params ?? [] }
          : { tx, trip, text: query.text, params: query.values ?? [], named: 'name' in query },
      );
    };
    traced.query = ((text: Sent, params?: unknown[]) => (log(0, text, params), direct(text as string, params))) as typeof traced.query;
    // pool.query checks a client out with a callback (logged above, as statement 0): left alone.
    interceptCheckouts(traced, (query, tx) => (text, params, ...rest) => {
      log(tx, text as Sent, params as unknown[] | undefined);
      awaiting.set(tx, (awaiting.get(tx) ?? 0) + 1);
      return query(text, params, ...rest).finally(() => awaiting.set(tx, awaiting.get(tx)! - 1));
    });
    const store = postgresKeyStore({ pool: traced, schema: `${schema}_durable` });
    try {
      const app = await createTestApp({ store });
      sent.length = 0;
      expect((await app.post({ amount: 5 })).status).toBe(201);
      // Round trips: a phase whose work runs statements costs them plus one, COMMIT going with the
      // recovery point. BEGIN goes with the admission (whose answer the work waits for) or, under
      // a lease, with the lease check and the work's first statement (the check raises, so nothing
      // waits for it). The outcome mark before a phase is written by that phase's own point (or
      // the response's UPDATE), and EXTn_SENT after a phase is the phase's own point. Three phases
      // of one statement each: H1 with the admission (3), H2 and H3 with the response (2 each) = 7
      // (also 7 while the mark rode with BEGIN as a transaction of its own, 9 while the lease check
      // had a round trip of its own, 13 when marks and EXTn_SENT went alone, 19 before that when
      // BEGIN and COMMIT took their own).
      // No round trip carries only BEGIN, COMMIT or ROLLBACK.
      // (BEGIN sets READ COMMITTED and the schema for its transaction in its own message: still only BEGIN.)
      const working = new Set(
        sent.filter((s) => !/^\s*(BEGIN( ISOLATION LEVEL READ COMMITTED)?(\s*;\s*SET LOCAL [^;]+)*|COMMIT|ROLLBACK)\s*;?\s*$/i.test(s.text)).map((s) => s.trip),
      );
      expect(sent.filter((s) => !working.has(s.trip))).toEqual([]);
      expect(new Set(sent.map((s) => s.trip)).size).toBe(7);
      const transactions = transactionsOf(sent);
      // Each recovery point's write, in the transaction it committed in.
      const isPoint = (statement: Traced, point?: string): boolean =>
        statement.text.includes('oncely_point(') && (point === undefined || statement.params[3] === point);
      const writesOf = (point: string): Traced[][] => transactions.filter((tx) => tx.some((statement) => isPoint(statement, point)));
      const has = (tx: Traced[], text: string): boolean => tx.some((statement) => statement.text.includes(text));
      const admission = transactions.find((tx) => tx.some((statement) => /INSERT INTO \w+\.oncely_keys/.test(statement.text)));
      // H2's transaction: the lease check, its statement, its point (H3's ends with the response instead).
      const h2 = transactions.find((tx) => tx !== admission && has(tx, 'step_runs') && !has(tx, 'oncely_finish'));
      const finish = transactions.find((tx) => has(tx, 'oncely_finish'));
      // A local phase followed by an external call commits EXTn_SENT as its own point, in its own
      // transaction: H1_DONE and H2_DONE are never written on their own.
      expect(writesOf('H1_DONE')).toEqual([]);
      expect(writesOf('H2_DONE')).toEqual([]);
      expect(writesOf('EXT1_SENT')).toEqual([admission]);
      expect(writesOf('EXT2_SENT')).toEqual([h2]);
      // An outcome mark is no write of its own: EXT1_DONE's data rides in H2's point, EXT2_DONE
      // is the response's own UPDATE (oncely_finish_after).
      expect(writesOf('EXT1_DONE')).toEqual([]);
      expect(writesOf('EXT2_DONE')).toEqual([]);
      expect(finish && has(finish, 'oncely_finish_after(')).toBe(true);
      expect(transactions.filter((tx) => tx.some((statement) => isPoint(statement) || statement.text.includes('oncely_finish')))).toHaveLength(3);
      // Every write waits for the WAL flush: none turns synchronous_commit off (oncely_point's last argument).
      const points = sent.filter((statement) => statement.text.includes('oncely_point('));
      expect(points.length).toBeGreaterThan(0);
      expect(points.every((statement) => /, true\)$/.test(statement.text.trim()))).toBe(true);
      // The store's statements sent alone are named prepared statements: planned once per connection.
      sent.length = 0;
      await store.load('acme', 'no-such-key');
      expect(sent.map((s) => s.named)).toEqual([true]);
      // …and the flag does what it says: the function turns synchronous_commit off for its transaction.
      const admitted = await store.admit({
        clientId: 'acme',
        key: 'sync-probe',
        requestHash: 'h',
        endpoint: 'POST /x',
        requestBody: '{}',
        leaseMs: 10_000,
        ttlMs: 60_000,
      });
      if (!admitted.owned) throw new Error('not owned');
      const client = await traced.connect();
      try {
        for (const durable of [true, false]) {
          await client.query('BEGIN');
          await client.query(`SELECT ${schema}_durable.oncely_point($1, $2, $3, 'X', '{}', 1000, true, $4)`, [
            'acme',
            'sync-probe',
            admitted.lease.token,
            durable,
          ]);
          expect((await client.query('SHOW synchronous_commit')).rows[0].synchronous_commit).toBe(durable ? 'on' : 'off');
          await client.query('ROLLBACK');
        }
      } finally {
        client.release();
      }
    } finally {
      await store.close();
      await traced.query(`DROP SCHEMA IF EXISTS ${schema}_durable CASCADE`);
      await traced.end();
    }
  });
});

/** A statement of a traced run with its bound values. */
type Traced = { readonly text: string; readonly params: readonly unknown[] };

/**
 * The transactions a traced run committed, in order, each as its statements: scripts (texts sent
 * without values) split at `;` outside quoted literals, grouped by BEGIN … COMMIT per connection
 * (a statement outside one is a transaction of its own).
 */
function transactionsOf(sent: ReadonlyArray<Traced & { tx: number }>): Traced[][] {
  const transactions: Traced[][] = [];
  const open = new Map<number, Traced[]>();
  for (const { tx, text, params } of sent) {
    const statements: Traced[] = [];
    let quoted = false;
    let start = 0;
    for (let i = 0; i <= text.length; i += 1) {
      if (text[i] === "'") quoted = !quoted;
      if (i === text.length || (text[i] === ';' && !quoted && params.length === 0)) {
        const statement = text.slice(start, i).trim();
        if (statement) statements.push({ text: statement, params });
        start = i + 1;
      }
    }
    for (const statement of statements) {
      if (/^BEGIN( ISOLATION LEVEL READ COMMITTED)?$/i.test(statement.text)) open.set(tx, []);
      // The transaction's own settings (schema, timeout), sent in BEGIN's message: not the store's work.
      else if (/^SET LOCAL /i.test(statement.text) && open.has(tx)) continue;
      else if (/^(COMMIT|ROLLBACK)$/i.test(statement.text)) {
        const ended = open.get(tx);
        open.delete(tx);
        if (ended && /^COMMIT$/i.test(statement.text)) transactions.push(ended);
      } else if (open.has(tx)) open.get(tx)!.push(statement);
      else transactions.push([statement]);
    }
  }
  return transactions;
}

type ClientQuery = (text: unknown, ...rest: unknown[]) => Promise<unknown>;

/**
 * Routes every statement of the clients `pool.connect()` checks out through `through` (the n-th
 * checkout gets `n`), restoring the client's own `query` when it is released. `pool.query`, which
 * checks out with a callback, is left alone.
 */
function interceptCheckouts(pool: pg.Pool, through: (query: ClientQuery, checkout: number) => ClientQuery): void {
  let checkouts = 0;
  const connect = pool.connect.bind(pool);
  pool.connect = (async (callback?: unknown) => {
    if (callback) return (connect as (cb: unknown) => void)(callback);
    const client = await connect();
    const query = client.query.bind(client);
    client.query = through(query as unknown as ClientQuery, (checkouts += 1)) as unknown as typeof client.query;
    const release = client.release.bind(client);
    client.release = ((error?: Error | boolean) => {
      client.query = query;
      client.release = release;
      return release(error);
    }) as typeof client.release;
    return client;
  }) as typeof pool.connect;
}

/**
 * A pipelined pool whose answers can be lost: `lose(pattern)` makes the next statement matching
 * `pattern` (its text, and its values when it has any) run on the server and then fail as a reset
 * connection would, after `meanwhile` (what the database saw in between); the function it returns
 * tells whether that happened. `carried` collects every
 * statement matching `track`. Pipelined, as the store's own pool is: a recovery point and the
 * COMMIT behind it go out together, so the point's lost answer is its round trip's.
 */
function lossyPool(track: RegExp): { pool: pg.Pool; lose: (pattern: RegExp, meanwhile?: () => Promise<unknown>) => () => boolean; carried: string[] } {
  const pool = new pg.Pool({ connectionString: url, max: 3, pipeline: true } as pg.PoolConfig);
  let loseAnswerOf: RegExp | undefined;
  let before: (() => Promise<unknown>) | undefined;
  const carried: string[] = [];
  const lossy =
    (query: (...args: never[]) => Promise<unknown>) =>
    async (sent: string | { text: string; values?: unknown[] }, ...rest: unknown[]) => {
      const text = typeof sent === 'string' ? sent : `${sent.text} ${JSON.stringify(sent.values ?? [])}`;
      if (track.test(text)) carried.push(text);
      const result = await (query as (...args: unknown[]) => Promise<unknown>)(sent, ...rest);
      if (loseAnswerOf?.test(text)) {
        loseAnswerOf = undefined;
        await before?.();
        throw Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
      }
      return result;
    };
  interceptCheckouts(pool, (query) => lossy(query as never) as unknown as ClientQuery);
  pool.query = lossy(pool.query.bind(pool) as never) as unknown as typeof pool.query;
  return {
    pool,
    lose: (pattern, meanwhile) => {
      loseAnswerOf = pattern;
      before = meanwhile;
      return () => loseAnswerOf === undefined;
    },
    carried,
  };
}
