/**
 * How key rows travel between PostgreSQL and the handler: the select list (durations and epoch
 * milliseconds computed by the database clock), and the mapping to {@link KeyRow}.
 *
 * @module
 */
import { admittedRow } from './core.js';
import type { AdmitInput, AdmitResult, KeyRow } from './types.js';

/** The select list of a key row; `lease_remaining_ms` is `null` when no lease is held. */
export const ROW = `client_id, key, request_hash, endpoint, request_body, state, recovery_point, data,
  response_status, response_headers, response_body,
  CASE WHEN lease_token IS NULL THEN NULL
       ELSE greatest(0, ceil(extract(epoch FROM lease_until - now()) * 1000))::float8 END AS lease_remaining_ms,
  attempts, floor(extract(epoch FROM created_at) * 1000)::float8 AS created_ms,
  floor(extract(epoch FROM expires_at) * 1000)::float8 AS expires_ms`;

/** A row as {@link ROW} selects it. */
export interface RawRow {
  client_id: string;
  key: string;
  request_hash: string;
  endpoint: string;
  request_body: string;
  state: 'started' | 'finished';
  recovery_point: string | null;
  data: Record<string, unknown>;
  response_status: number | null;
  response_headers: Record<string, string> | null;
  response_body: string | null;
  lease_remaining_ms: number | null;
  attempts: number;
  created_ms: number;
  expires_ms: number;
}

/** `row_to_json(row)` from the admission: timestamps as ISO strings, computed fields absent. */
interface JsonRow extends Omit<RawRow, 'lease_remaining_ms' | 'created_ms' | 'expires_ms'> {
  lease_until: string | null;
  lease_token: string | null;
  created_at: string;
  expires_at: string;
}

/** {@link RawRow} → {@link KeyRow}. */
export const toRow = (raw: RawRow): KeyRow => ({
  clientId: raw.client_id,
  key: raw.key,
  requestHash: raw.request_hash,
  endpoint: raw.endpoint,
  requestBody: raw.request_body,
  state: raw.state,
  recoveryPoint: raw.recovery_point,
  data: raw.data,
  response: raw.response_status === null ? null : { status: raw.response_status, headers: raw.response_headers ?? {}, body: raw.response_body ?? '' },
  leaseRemainingMs: raw.lease_remaining_ms,
  attempts: raw.attempts,
  createdAt: raw.created_ms,
  expiresAt: raw.expires_ms,
});

/** Admission's row, with the lease computed against the database clock it was read with. */
const fromJson = (json: JsonRow, nowMs: number): KeyRow =>
  toRow({
    ...json,
    lease_remaining_ms: json.lease_token === null || json.lease_until === null ? null : Math.max(0, Math.ceil(Date.parse(json.lease_until) - nowMs)),
    created_ms: Date.parse(json.created_at),
    expires_ms: Date.parse(json.expires_at),
  });

/**
 * What the admission answers, with the database clock it answered at: a row it found as JSON, or
 * for a row it inserted only what the database chose (the lease, its clock); the rest is the input.
 */
export interface Admitted {
  owned: boolean;
  lease: string | null;
  row_json: JsonRow | null;
  created_ms: number | null;
  expires_ms: number | null;
  lease_ms: number | null;
  now_ms: number;
}

/** The admission's answer → {@link AdmitResult}: a lease only for the owner. */
export const toAdmitResult = (input: AdmitInput, found: Admitted): AdmitResult<never> => {
  const { clientId, key } = input;
  if (found.row_json !== null) return { owned: false, row: fromJson(found.row_json, found.now_ms) };
  // The lease is the one just granted: `lease_ms` echoes input.leaseMs.
  return { owned: true, lease: { clientId, key, token: found.lease! }, row: admittedRow(input, found.created_ms!, found.expires_ms!) };
};
