/**
 * A minimal KeyStore, written the way a third party would write one (docs/key-store.md): each
 * primitive is one plain transaction on one SQLite connection (`BEGIN IMMEDIATE …
 * COMMIT`, one at a time), with no group commit and no batching, and it imports nothing but the
 * public `oncely/server/store` entry. Every write is `planWrite`'s row change applied by ONE fenced
 * UPDATE (or a DELETE of a forgotten row); a first phase (or a whole request, finished) runs inside
 * the admission's transaction with `admitFirst`. It has no `beginRequest`: the core's runs a whole
 * request through `admit`. It proves that the neutral handler is correct over the primitives alone: it runs the KeyStore contract suites
 * and the crash matrix (`test/server/store/reference-store.test.ts`, `test/server/crash.test.ts`).
 *
 * Not for production: every call waits for the one before it.
 */
import { randomUUID } from 'node:crypto';
import { openRawDb } from './sqlite-db.js';
import {
  admitFirst,
  planWrite,
  type AdmitInput,
  type AdmitResult,
  type AppSchema,
  type Fenced,
  type FirstPhase,
  type KeyRow,
  type KeyStore,
  type Lease,
  type RowChange,
  type StoredResponse,
  type Tx,
  type WholeRequest,
} from '../../src/server/store.js';

const TABLE = `CREATE TABLE IF NOT EXISTS ref_keys (
  client_id TEXT NOT NULL, key TEXT NOT NULL, request_hash TEXT NOT NULL, endpoint TEXT NOT NULL,
  request_body TEXT NOT NULL, state TEXT NOT NULL, recovery_point TEXT, data TEXT NOT NULL DEFAULT '{}',
  response TEXT, lease_token TEXT, lease_until INTEGER, attempts INTEGER NOT NULL DEFAULT 0,
  next_attempt_at INTEGER NOT NULL DEFAULT 0, created_at INTEGER NOT NULL, expires_at INTEGER NOT NULL,
  PRIMARY KEY (client_id, key))`;

interface Raw {
  client_id: string;
  key: string;
  request_hash: string;
  endpoint: string;
  request_body: string;
  state: 'started' | 'finished';
  recovery_point: string | null;
  data: string;
  response: string | null;
  lease_token: string | null;
  lease_until: number | null;
  attempts: number;
  created_at: number;
  expires_at: number;
}

const MAX_RESPONSE_BYTES = 65_536;

/**
 * Opens the reference store on a SQLite file (or `:memory:`).
 *
 * @example
 * ```ts
 * const store = referenceKeyStore('/tmp/keys.db');
 * ```
 */
export function referenceKeyStore(path: string): KeyStore {
  const db = openRawDb(path);
  db.pragma('journal_mode = WAL');
  db.pragma('busy_timeout = 10000');
  const now = (): number => Date.now();
  const row = (raw: Raw): KeyRow => ({
    clientId: raw.client_id,
    key: raw.key,
    requestHash: raw.request_hash,
    endpoint: raw.endpoint,
    requestBody: raw.request_body,
    state: raw.state,
    recoveryPoint: raw.recovery_point,
    data: JSON.parse(raw.data) as Record<string, unknown>,
    response: raw.response === null ? null : (JSON.parse(raw.response) as StoredResponse),
    leaseRemainingMs: raw.lease_token === null || raw.lease_until === null ? null : Math.max(0, raw.lease_until - now()),
    attempts: raw.attempts,
    createdAt: raw.created_at,
    expiresAt: raw.expires_at,
  });

  // One transaction at a time on the one connection.
  let queue: Promise<unknown> = Promise.resolve();
  const serial = <T>(body: () => T | Promise<T>): Promise<T> => {
    const result = queue.then(body);
    queue = result.catch(() => undefined);
    return result;
  };
  const transaction = <T>(body: () => T | Promise<T>): Promise<T> =>
    serial(async () => {
      db.exec('BEGIN IMMEDIATE');
      try {
        const value = await body();
        db.exec('COMMIT');
        return value;
      } catch (error) {
        if (db.inTransaction) db.exec('ROLLBACK');
        throw error;
      }
    });
  /**
   * The application's statements, `$n` placeholders as SQLite's `?n`; `before` runs ahead of
   * each (the lease check), and statements are refused once the write has ended.
   */
  const txFor = (ended: () => boolean, before: () => void = () => undefined): Tx => {
    const statement = (sql: string) => {
      if (ended()) throw new Error('referenceKeyStore: this transaction has ended');
      before();
      return db.prepare(sql.replace(/\$(\d+)/g, '?$1'));
    };
    // Bound by number (`?1` may repeat), as SQLite's own numbered parameters are.
    const args = (params: readonly unknown[] = []): Record<number, unknown> => {
      const bound: Record<number, unknown> = {};
      params.forEach((value, index) => {
        bound[index + 1] = value === undefined ? null : typeof value === 'boolean' ? Number(value) : value;
      });
      return bound;
    };
    return {
      dialect: 'sqlite',
      run: async (sql, params) => statement(sql).run(args(params)).changes,
      all: async <T extends object>(sql: string, params?: readonly unknown[]) => statement(sql).all(args(params)) as T[],
      get: async <T extends object>(sql: string, params?: readonly unknown[]) => statement(sql).get(args(params)) as T | undefined,
    };
  };
  const held = (lease: Lease): Raw | undefined =>
    db
      .prepare(`SELECT * FROM ref_keys WHERE client_id = ? AND key = ? AND state = 'started' AND lease_token = ?`)
      .get(lease.clientId, lease.key, lease.token) as Raw | undefined;

  /**
   * The fenced write every `write` is: the work's statements run only while the
   * lease holds the row (checked before each: inside BEGIN IMMEDIATE no one else can write), then
   * `write`. A lost lease rolls everything back, even if the work swallowed the error.
   */
  const fenced = <T>(
    lease: Lease,
    work: ((tx: Tx) => Promise<T>) | undefined,
    write: (current: Raw, result: T | undefined) => void,
  ): Promise<Fenced<T | undefined>> => {
    let ended = false;
    const lost = new Error('referenceKeyStore: the lease no longer holds the row');
    const guard = (): void => {
      if (held(lease) === undefined) throw lost;
    };
    return transaction(async (): Promise<Fenced<T | undefined>> => {
      try {
        const result = work ? await work(txFor(() => ended, guard)) : undefined;
        const current = held(lease);
        if (current === undefined) throw lost;
        write(current, result);
        return { ok: true, value: result };
      } finally {
        ended = true;
      }
    }).catch((error: unknown) => {
      if (error === lost) return { ok: false } as const;
      throw error;
    });
  };

  /**
   * A write's row change (`planWrite`) as ONE statement fenced by the lease: the DELETE of a
   * forgotten row with no point yet, else the UPDATE of every column the change names. The data is
   * merged here, from the row the fence read (`{ ...data, ...patch }`).
   */
  const applyRow = (lease: Lease, current: Raw, change: RowChange): number => {
    const fence = [lease.clientId, lease.key, lease.token];
    if (
      change.deleteIfNoPoint &&
      db.prepare(`DELETE FROM ref_keys WHERE client_id = ? AND key = ? AND lease_token = ? AND recovery_point IS NULL`).run(...fence).changes === 1
    )
      return 1;
    const at = now();
    const data = JSON.stringify({ ...(JSON.parse(current.data) as object), ...change.data });
    return db
      .prepare(
        `UPDATE ref_keys SET recovery_point = COALESCE(?, recovery_point), data = ?, lease_until = ?, lease_token = CASE WHEN ? IS NULL THEN NULL ELSE lease_token END,
           state = CASE WHEN ? IS NULL THEN state ELSE 'finished' END, response = COALESCE(?, response),
           expires_at = CASE WHEN ? IS NULL THEN expires_at ELSE ? + expires_at - created_at END,
           attempts = attempts + ?, next_attempt_at = COALESCE(?, next_attempt_at)
         WHERE client_id = ? AND key = ? AND lease_token = ? AND state = 'started'`,
      )
      .run(
        change.recoveryPoint ?? null,
        data,
        change.leaseMs === null ? null : at + change.leaseMs,
        change.leaseMs,
        ...[change.response, change.response].map((r) => (r ? JSON.stringify(r) : null)),
        // A key that finished late keeps its retention from its finish: it is not reaped at once.
        change.response ? 1 : null,
        at,
        change.retryAfterMs === undefined ? 0 : 1,
        change.retryAfterMs === undefined ? null : at + change.retryAfterMs,
        ...fence,
      ).changes;
  };
  const limits = (key: string) => ({ store: 'referenceKeyStore', key, maxResponseBytes: MAX_RESPONSE_BYTES });

  /** The admission, with a first phase or (for `beginRequest`) the whole request in its transaction. */
  const admitWith = <T>(input: AdmitInput, first?: FirstPhase<T> | WholeRequest<T>) =>
    transaction(async (): Promise<AdmitResult<T>> => {
      const at = now();
      const token = randomUUID();
      const inserted = db
        .prepare(
          `INSERT INTO ref_keys (client_id, key, request_hash, endpoint, request_body, state, lease_token, lease_until, created_at, expires_at)
           VALUES (?, ?, ?, ?, ?, 'started', ?, ?, ?, ?) ON CONFLICT (client_id, key) DO NOTHING RETURNING *`,
        )
        .get(input.clientId, input.key, input.requestHash, input.endpoint, input.requestBody, token, at + input.leaseMs, at, at + input.ttlMs) as
        Raw | undefined;
      if (!inserted)
        return { owned: false, row: row(db.prepare('SELECT * FROM ref_keys WHERE client_id = ? AND key = ?').get(input.clientId, input.key) as Raw) };
      const lease = { clientId: input.clientId, key: input.key, token };
      if (!first) return { owned: true, lease, row: row(inserted) };
      // The first phase (or the whole request) in the admission's transaction: a throw rolls the
      // key back with it. Its statements are refused once its work has returned.
      let ended = false;
      const owned = { owned: true, lease, row: row(inserted) } as const;
      const done = await admitFirst(
        owned,
        first,
        txFor(() => ended),
        (change) => {
          ended = true;
          if (applyRow(lease, inserted, change) !== 1) throw new Error('referenceKeyStore: the row admitted in this transaction is gone');
        },
        limits(input.key),
      ).finally(() => (ended = true));
      return { ...done, row: row(db.prepare('SELECT * FROM ref_keys WHERE client_id = ? AND key = ?').get(input.clientId, input.key) as Raw) };
    });

  return {
    dialect: 'sqlite',
    migrate: (app?: AppSchema) =>
      transaction(() => {
        db.exec(TABLE);
        if (app?.['sqlite'] !== undefined) db.exec(app['sqlite']);
      }),
    admit: admitWith,
    load: (clientId, key) =>
      serial(() => {
        const raw = db.prepare('SELECT * FROM ref_keys WHERE client_id = ? AND key = ?').get(clientId, key) as Raw | undefined;
        return raw ? row(raw) : undefined;
      }),
    takeOver: (clientId, key, leaseMs) =>
      transaction(() => {
        const token = randomUUID();
        const won = db
          .prepare(
            `UPDATE ref_keys SET lease_token = ?, lease_until = ? WHERE client_id = ? AND key = ? AND state = 'started'
             AND (lease_token IS NULL OR lease_until <= ?) RETURNING key`,
          )
          .get(token, now() + leaseMs, clientId, key, now());
        return won ? { clientId, key, token } : null;
      }),
    write: (lease, change, work) => fenced(lease, work, (current, result) => applyRow(lease, current, planWrite(change, result, limits(lease.key)))),
    sweep: (limit) =>
      serial(() =>
        (
          db
            .prepare(
              `SELECT * FROM ref_keys WHERE state = 'started' AND next_attempt_at <= ? AND (lease_token IS NULL OR lease_until <= ?)
               ORDER BY created_at LIMIT ?`,
            )
            .all(now(), now(), limit) as Raw[]
        ).map(row),
      ),
    reap: (batchSize) =>
      transaction(
        () =>
          db
            .prepare(`DELETE FROM ref_keys WHERE rowid IN (SELECT rowid FROM ref_keys WHERE state = 'finished' AND expires_at <= ? LIMIT ?)`)
            .run(now(), batchSize).changes,
      ),
    transaction: <T>(work: (tx: Tx) => Promise<T>) => {
      let ended = false;
      return transaction(async () => {
        try {
          return await work(txFor(() => ended));
        } finally {
          ended = true;
        }
      });
    },
    close: () => serial(() => void db.close()),
  };
}
