/**
 * The design article's recipe written by hand: what a team builds from its happy-path diagram
 * (`reference/idempotency-design.txt`, diagram 1) without oncely, for the shared payment handler.
 * Each arrow of the diagram is its own transaction, on the same driver and database file (or
 * PostgreSQL schema) oncely's store would use:
 *
 * ```
 * 1  INSERT key (state=started, lease, recovery_point=null) ON CONFLICT DO NOTHING RETURNING
 * 2  TXN  charge row + recovery_point=H1_DONE + lease refreshed        (fenced by the lease token)
 * 3  TXN  recovery_point=EXT1_SENT
 *    ── the receipt work (the "external call") ──
 * 4  TXN  recovery_point=EXT1_DONE + lease refreshed
 * 5  TXN  state=finished + response stored + lease cleared
 * ```
 *
 * A duplicate reads the row: other body → 422, finished → the stored response with
 * `Idempotency-Replay: true`, otherwise 409. No recovery worker, no probe, no cache: the happy
 * path only, which is all the throughput figure exercises. SQLite: better-sqlite3, WAL,
 * `synchronous=NORMAL` (as oncely's store). PostgreSQL: a `pg` pool of 10, every transaction
 * committed with the server's default `synchronous_commit`.
 *
 * @module
 */
import { createHash, randomUUID } from 'node:crypto';
import Database from 'better-sqlite3';
import type pg from 'pg';
import { CHARGE_SQL, COUNT_SQL, EXECUTIONS_DDL, chargeParams, newPayment, parsePayment, receiptWork, toCount, type WorkOptions } from './payment.js';

const KEYS_DDL = `CREATE TABLE IF NOT EXISTS recipe_keys (
  client_id TEXT NOT NULL, key TEXT NOT NULL, request_hash TEXT NOT NULL, state TEXT NOT NULL,
  recovery_point TEXT, data TEXT, response_status INTEGER, response_body TEXT,
  lease_token TEXT, locked_at BIGINT, PRIMARY KEY (client_id, key))`;

/** One statement of the recipe; `$n` placeholders. */
type Run = (sql: string, params: readonly unknown[]) => Promise<Array<Record<string, unknown>>>;

/** The two things the recipe needs of a database: a statement on its own, and a transaction. */
interface RecipeDb {
  readonly one: Run;
  transaction(work: (run: Run) => Promise<void>): Promise<void>;
}

const LOST = new Error('recipe: lease lost');

/** The fetch app of the recipe over `db`. */
function recipeApp(db: RecipeDb, work: WorkOptions): (request: Request) => Promise<Response> {
  const point = (run: Run, token: string, key: string, recoveryPoint: string, data?: string) =>
    run(
      'UPDATE recipe_keys SET recovery_point = $1, data = COALESCE($2, data), locked_at = $3 WHERE client_id = $4 AND key = $5 AND lease_token = $6 RETURNING key',
      [recoveryPoint, data ?? null, Date.now(), 'bench', key, token],
    ).then((rows) => {
      if (rows.length !== 1) throw LOST;
    });
  return async (request) => {
    if (request.method === 'GET') return Response.json(toCount((await db.one(COUNT_SQL, []))[0] as never));
    const key = request.headers.get('idempotency-key');
    if (!key) return Response.json({ error: 'Idempotency-Key required' }, { status: 400 });
    const text = await request.text();
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      return Response.json({ error: 'not JSON' }, { status: 400 });
    }
    const input = parsePayment(body);
    if (typeof input === 'string') return Response.json({ error: input }, { status: 400 });
    const hash = createHash('sha256').update(text).digest('hex');
    const token = randomUUID();
    // 1: admission.
    const inserted = await db.one(
      `INSERT INTO recipe_keys (client_id, key, request_hash, state, lease_token, locked_at) VALUES ($1, $2, $3, 'started', $4, $5)
       ON CONFLICT (client_id, key) DO NOTHING RETURNING key`,
      ['bench', key, hash, token, Date.now()],
    );
    if (inserted.length === 0) {
      const [row] = await db.one('SELECT request_hash, state, response_status, response_body FROM recipe_keys WHERE client_id = $1 AND key = $2', [
        'bench',
        key,
      ]);
      if (row?.['request_hash'] !== hash) return Response.json({ error: 'key reused with another body' }, { status: 422 });
      if (row['state'] === 'finished') {
        return new Response(String(row['response_body']), {
          status: Number(row['response_status']),
          headers: { 'content-type': 'application/json', 'idempotency-replay': 'true' },
        });
      }
      return Response.json({ error: 'in flight' }, { status: 409, headers: { 'retry-after': '1' } });
    }
    const payment = newPayment(input);
    const response = JSON.stringify(payment);
    // 2: the charge with its recovery point.
    await db.transaction(async (run) => {
      await run(CHARGE_SQL, chargeParams(payment));
      await point(run, token, key, 'H1_DONE', JSON.stringify({ payment }));
    });
    // 3: before the call.
    await db.transaction((run) => point(run, token, key, 'EXT1_SENT'));
    await receiptWork(input, work);
    // 4: its outcome.
    await db.transaction((run) => point(run, token, key, 'EXT1_DONE'));
    // 5: finished with the response.
    await db.transaction(async (run) => {
      const rows = await run(
        `UPDATE recipe_keys SET state = 'finished', response_status = 201, response_body = $1, lease_token = NULL, locked_at = NULL
         WHERE client_id = $2 AND key = $3 AND lease_token = $4 RETURNING key`,
        [response, 'bench', key, token],
      );
      if (rows.length !== 1) throw LOST;
    });
    return new Response(response, { status: 201, headers: { 'content-type': 'application/json' } });
  };
}

/** The recipe on a SQLite file: better-sqlite3, one connection. */
export function sqliteRecipe(path: string, work: WorkOptions): { fetch: (request: Request) => Promise<Response> } {
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('busy_timeout = 5000');
  db.exec(`${EXECUTIONS_DDL}; ${KEYS_DDL}`);
  const statements = new Map<string, Database.Statement>();
  const run: Run = async (sql, params) => {
    let statement = statements.get(sql);
    if (!statement) statements.set(sql, (statement = db.prepare(sql.replace(/\$(\d+)/g, '?$1'))));
    const bound = Object.fromEntries(params.map((value, index) => [index + 1, value]));
    return statement.reader ? (statement.all(bound) as Array<Record<string, unknown>>) : (statement.run(bound), []);
  };
  // One connection: its transactions take turns (a statement alone waits for the one open).
  let queue: Promise<unknown> = Promise.resolve();
  const turn = <T>(body: () => Promise<T>): Promise<T> => {
    const result = queue.then(body);
    queue = result.catch(() => undefined);
    return result;
  };
  return {
    fetch: recipeApp(
      {
        one: (sql, params) => turn(() => run(sql, params)),
        transaction: (body) =>
          turn(async () => {
            db.exec('BEGIN IMMEDIATE');
            try {
              await body(run);
              db.exec('COMMIT');
            } catch (error) {
              if (db.inTransaction) db.exec('ROLLBACK');
              throw error;
            }
          }),
      },
      work,
    ),
  };
}

/** The recipe on PostgreSQL: a `pg` pool, one connection per transaction. */
export async function postgresRecipe(pool: pg.Pool, work: WorkOptions): Promise<{ fetch: (request: Request) => Promise<Response> }> {
  await pool.query(`${EXECUTIONS_DDL}; ${KEYS_DDL}`);
  return {
    fetch: recipeApp(
      {
        one: async (sql, params) => (await pool.query(sql, params as unknown[])).rows as Array<Record<string, unknown>>,
        async transaction(body) {
          const client = await pool.connect();
          try {
            await client.query('BEGIN');
            await body(async (sql, params) => (await client.query(sql, params as unknown[])).rows as Array<Record<string, unknown>>);
            await client.query('COMMIT');
          } catch (error) {
            await client.query('ROLLBACK').catch(() => undefined);
            throw error;
          } finally {
            client.release();
          }
        },
      },
      work,
    ),
  };
}
