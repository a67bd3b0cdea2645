/**
 * The SQLite key table and every statement the SQLite KeyStore runs on it, with the row as the
 * SQLite driver returns it. The store's logic is in `sqlite.node.ts`.
 *
 * @module
 */
import type { KeyRow, StoredResponse } from './types.js';

export const KEY_TABLE = `
CREATE TABLE IF NOT EXISTS oncely_keys (
  client_id        TEXT    NOT NULL,
  key              TEXT    NOT NULL,
  request_hash     TEXT    NOT NULL,
  endpoint         TEXT    NOT NULL,
  request_body     TEXT    NOT NULL,
  state            TEXT    NOT NULL,
  recovery_point   TEXT,
  data             TEXT    NOT NULL DEFAULT '{}',
  response_status  INTEGER,
  response_headers TEXT,
  response_body    TEXT,
  lease_token      TEXT,
  lease_expires_at INTEGER,
  next_attempt_at  INTEGER NOT NULL DEFAULT 0,
  attempts         INTEGER NOT NULL DEFAULT 0,
  created_at       INTEGER NOT NULL,
  expires_at       INTEGER NOT NULL,
  PRIMARY KEY (client_id, key)
);
-- The recovery worker's sweep only ever looks at unfinished keys: a partial index keeps it
-- small however many finished keys the retention window holds.
CREATE INDEX IF NOT EXISTS oncely_keys_unfinished ON oncely_keys (next_attempt_at, created_at) WHERE state = 'started';
CREATE INDEX IF NOT EXISTS oncely_keys_finished_expiry ON oncely_keys (expires_at) WHERE state = 'finished';
`;

export const SQL = {
  // One row changed: admitted; none: the key was there. No RETURNING: SQLite runs one through an
  // ephemeral table, about 4 us per admission for a column nobody reads.
  insert: `INSERT INTO oncely_keys (client_id, key, request_hash, endpoint, request_body, state, lease_token, lease_expires_at, created_at, expires_at)
           VALUES (?, ?, ?, ?, ?, 'started', ?, ?, ?, ?)
           ON CONFLICT (client_id, key) DO NOTHING`,
  load: `SELECT * FROM oncely_keys WHERE client_id = ? AND key = ?`,
  takeOver: `UPDATE oncely_keys SET lease_token = ?, lease_expires_at = ?
             WHERE client_id = ? AND key = ? AND state = 'started' AND (lease_token IS NULL OR lease_expires_at <= ?)
             RETURNING lease_token`,
  fence: `SELECT 1 FROM oncely_keys WHERE client_id = ? AND key = ? AND state = 'started' AND lease_token = ?`,
  // The lease token in the WHERE is the fence: a taken-over owner changes no row.
  commitPhase: `UPDATE oncely_keys SET recovery_point = ?, lease_expires_at = ?
                WHERE client_id = ? AND key = ? AND state = 'started' AND lease_token = ?`,
  // The first phase of a row this transaction inserted: its data is still the default '{}'.
  commitFirst: `UPDATE oncely_keys SET recovery_point = ?, data = ?, lease_expires_at = ?
                WHERE client_id = ? AND key = ? AND lease_token = ?`,
  commitPhaseData: `UPDATE oncely_keys SET recovery_point = ?, data = oncely_merge(data, ?), lease_expires_at = ?
                    WHERE client_id = ? AND key = ? AND state = 'started' AND lease_token = ?`,
  // A finished key is kept its retention from now: one that finished late (parked, resumed by the
  // worker) is not reaped before its client's retries could see the answer.
  finish: `UPDATE oncely_keys SET expires_at = ? + expires_at - created_at, state = 'finished', response_status = ?, response_headers = ?, response_body = ?,
           lease_token = NULL, lease_expires_at = NULL WHERE client_id = ? AND key = ? AND state = 'started' AND lease_token = ?`,
  // The final response and the outcome mark before it, in one statement (see fenced()).
  finishAfterMark: `UPDATE oncely_keys SET expires_at = ? + expires_at - created_at, state = 'finished', recovery_point = ?, data = oncely_merge(data, ?), response_status = ?,
                    response_headers = ?, response_body = ?, lease_token = NULL, lease_expires_at = NULL
                    WHERE client_id = ? AND key = ? AND state = 'started' AND lease_token = ?`,
  // …when the mark carries no data: no merge (a JSON parse and stringify of the row's data).
  finishAfterPoint: `UPDATE oncely_keys SET expires_at = ? + expires_at - created_at, state = 'finished', recovery_point = ?, response_status = ?,
                     response_headers = ?, response_body = ?, lease_token = NULL, lease_expires_at = NULL
                     WHERE client_id = ? AND key = ? AND state = 'started' AND lease_token = ?`,
  forget: `DELETE FROM oncely_keys WHERE client_id = ? AND key = ? AND lease_token = ? AND recovery_point IS NULL`,
  release: `UPDATE oncely_keys SET lease_token = NULL, lease_expires_at = NULL
            WHERE client_id = ? AND key = ? AND state = 'started' AND lease_token = ?`,
  park: `UPDATE oncely_keys SET lease_token = NULL, lease_expires_at = NULL, attempts = attempts + 1, next_attempt_at = ?
         WHERE client_id = ? AND key = ? AND state = 'started' AND lease_token = ?`,
  sweep: `SELECT * FROM oncely_keys WHERE state = 'started' AND next_attempt_at <= ?
          AND (lease_token IS NULL OR lease_expires_at <= ?) ORDER BY created_at LIMIT ?`,
  reap: `DELETE FROM oncely_keys WHERE rowid IN
         (SELECT rowid FROM oncely_keys WHERE state = 'finished' AND expires_at <= ? LIMIT ?)`,
} as const;

export interface RawRow {
  client_id: string;
  key: string;
  request_hash: string;
  endpoint: string;
  request_body: string;
  state: 'started' | 'finished';
  recovery_point: string | null;
  data: string;
  response_status: number | null;
  response_headers: string | null;
  response_body: string | null;
  lease_token: string | null;
  lease_expires_at: number | null;
  attempts: number;
  created_at: number;
  expires_at: number;
}

/** A key row as the SQLite driver returns it, as the handler sees it; `nowMs` is the store clock, for the lease left. */
export function rowOf(raw: RawRow, nowMs: number): KeyRow {
  const response: StoredResponse | null =
    raw.response_status === null
      ? null
      : {
          status: raw.response_status,
          headers: JSON.parse(raw.response_headers ?? '{}') as Record<string, string>,
          body: raw.response_body ?? '',
        };
  return {
    clientId: raw.client_id,
    key: raw.key,
    requestHash: raw.request_hash,
    endpoint: raw.endpoint,
    requestBody: raw.request_body,
    state: raw.state,
    recoveryPoint: raw.recovery_point,
    data: JSON.parse(raw.data) as Record<string, unknown>,
    response,
    leaseRemainingMs: raw.lease_token === null || raw.lease_expires_at === null ? null : Math.max(0, raw.lease_expires_at - nowMs),
    attempts: raw.attempts,
    createdAt: raw.created_at,
    expiresAt: raw.expires_at,
  };
}
