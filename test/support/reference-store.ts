/**
 * A minimal KeyStore, written the way a third party would write one (docs/key-store.md): each
 * primitive is one plain transaction on one SQLite connection (`BEGIN IMMEDIATE …
 * COMMIT`, one at a time), with no group commit and no batching. A phase with the points around
 * it is one UPDATE of the last point; a first phase (or a whole request, finished) runs inside
 * the admission's transaction. It proves that the neutral handler is correct over the primitives alone: it runs the KeyStore contract suites
 * and the crash matrix (`test/server/store/reference-store.test.ts`, `test/server/crash.test.ts`).
 *
 * Not for production: every call waits for the one before it.
 */
import { randomUUID } from 'node:crypto';
import { openRawDb } from './sqlite-db.js';
import type {
  AdmitInput,
  AdmitResult,
  AppSchema,
  Fenced,
  FinalResponse,
  FirstPhase,
  KeyRow,
  KeyStore,
  Lease,
  PhaseCommit,
  PointWrite,
  StoredResponse,
  Tx,
  WholeRequest,
} from '../../src/server/store/types.js';
import { isWholeRequest } from '../../src/server/store/core.js';
import { beginOverAdmit } from '../../src/server/store/request-transaction.js';

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
   * The fenced write both commitPhase and finish are: the work's statements run only while the
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

  /** A phase, the mark before it and the point after it: one UPDATE of the last point, every data patch merged in order. */
  const writePhase = <T>(lease: Lease, current: Raw, phase: PhaseCommit<T>, result: T | undefined): void => {
    // Through JSON, as a row's data is: a key holding `undefined` is no change.
    const patches = [phase.before?.data, phase.data, phase.dataFrom?.(result) ?? undefined, phase.after?.data];
    const data = patches.reduce<object>(
      (merged, patch) => ({ ...merged, ...(JSON.parse(JSON.stringify(patch ?? {})) as object) }),
      JSON.parse(current.data) as object,
    );
    db.prepare('UPDATE ref_keys SET recovery_point = ?, data = ?, lease_until = ? WHERE client_id = ? AND key = ?').run(
      (phase.after ?? phase).recoveryPoint,
      JSON.stringify(data),
      now() + phase.leaseMs,
      lease.clientId,
      lease.key,
    );
  };

  /** The response stored and the lease cleared (the size checked first: nothing is written past it). */
  const writeFinish = (lease: Lease, final: StoredResponse): void => {
    const bytes = Buffer.byteLength(final.body, 'utf8');
    if (bytes > MAX_RESPONSE_BYTES) throw new RangeError(`referenceKeyStore: a ${bytes}-byte response exceeds maxResponseBytes (${MAX_RESPONSE_BYTES})`);
    // Kept its retention from now: a key that finished late is not reaped at once.
    db.prepare(
      `UPDATE ref_keys SET state = 'finished', response = ?, lease_token = NULL, lease_until = NULL, expires_at = ? + expires_at - created_at WHERE client_id = ? AND key = ?`,
    ).run(JSON.stringify(final), now(), lease.clientId, lease.key);
  };

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
      // The first phase in the admission's transaction: a throw rolls the key back with it.
      let ended = false;
      const value = await first
        .work(
          txFor(() => ended),
          row(inserted),
        )
        .finally(() => (ended = true));
      // The whole request: its response stored in the same transaction.
      if (isWholeRequest(first)) writeFinish(lease, first.response(value));
      else writePhase(lease, inserted, first.phase, value);
      return {
        owned: true,
        lease,
        row: row(db.prepare('SELECT * FROM ref_keys WHERE client_id = ? AND key = ?').get(input.clientId, input.key) as Raw),
        first: { value },
      };
    });

  return {
    dialect: 'sqlite',
    migrate: (app?: AppSchema) =>
      transaction(() => {
        db.exec(TABLE);
        if (app) db.exec(app.sqlite);
      }),
    admit: (input, first) => admitWith(input, first),
    beginRequest: beginOverAdmit(admitWith),
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
    commitPhase: <T>(lease: Lease, phase: PhaseCommit<T>, work?: (tx: Tx) => Promise<T>) =>
      fenced(lease, work, (current, result) => writePhase(lease, current, phase, result)),
    finish: <T>(lease: Lease, response: FinalResponse<T>, work?: (tx: Tx) => Promise<T>, before?: PointWrite) =>
      fenced(lease, work, (current, result) => {
        const final = typeof response === 'function' ? response(result) : response;
        // The outcome mark before the response, in the same transaction.
        if (before) writePhase(lease, current, { ...before, leaseMs: 0 }, undefined);
        writeFinish(lease, final);
      }),
    release: (lease, { forget }) =>
      transaction(() => {
        const fence = [lease.clientId, lease.key, lease.token];
        if (
          forget &&
          db.prepare('DELETE FROM ref_keys WHERE client_id = ? AND key = ? AND lease_token = ? AND recovery_point IS NULL').run(...fence).changes === 1
        ) {
          return true;
        }
        return (
          db
            .prepare(`UPDATE ref_keys SET lease_token = NULL, lease_until = NULL WHERE client_id = ? AND key = ? AND state = 'started' AND lease_token = ?`)
            .run(...fence).changes === 1
        );
      }),
    park: (lease, { retryAfterMs }) =>
      transaction(
        () =>
          db
            .prepare(
              `UPDATE ref_keys SET lease_token = NULL, lease_until = NULL, attempts = attempts + 1, next_attempt_at = ?
               WHERE client_id = ? AND key = ? AND state = 'started' AND lease_token = ?`,
            )
            .run(now() + retryAfterMs, lease.clientId, lease.key, lease.token).changes === 1,
      ),
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
