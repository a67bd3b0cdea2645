/**
 * A key row as the store reads it from MySQL, and as the contract's {@link KeyRow}.
 *
 * @module
 */
import type { KeyRow, StoredResponse } from '../store.js';

/** The columns of the store's row reads (`statementsFor(…).load`). */
export interface RawRow {
  readonly client_id: Buffer | string;
  readonly idem_key: Buffer | string;
  readonly request_hash: string;
  readonly endpoint: string;
  readonly request_body: string;
  readonly state: string;
  readonly recovery_point: string | null;
  readonly data: string;
  readonly response: string | null;
  readonly lease_token: string | null;
  readonly lease_until: number | string | null;
  readonly attempts: number | string;
  readonly created_at: number | string;
  readonly expires_at: number | string;
  /** The database's clock when the row was read. */
  readonly now_ms: number | string;
}

/** A VARBINARY column's text (UTF-8). */
const text = (value: Buffer | string): string => (typeof value === 'string' ? value : value.toString('utf8'));

/**
 * The contract's row. The lease's time left is measured against the database's clock, read by
 * the same statement.
 */
export function keyRowOf(raw: RawRow): KeyRow {
  const leaseLeft = raw.lease_token === null || raw.lease_until === null ? null : Math.max(0, Number(raw.lease_until) - Number(raw.now_ms));
  return {
    clientId: text(raw.client_id),
    key: text(raw.idem_key),
    requestHash: raw.request_hash,
    endpoint: raw.endpoint,
    requestBody: raw.request_body,
    state: raw.state === 'finished' ? 'finished' : 'started',
    recoveryPoint: raw.recovery_point,
    data: JSON.parse(raw.data) as Record<string, unknown>,
    response: raw.response === null ? null : (JSON.parse(raw.response) as StoredResponse),
    leaseRemainingMs: leaseLeft,
    attempts: Number(raw.attempts),
    createdAt: Number(raw.created_at),
    expiresAt: Number(raw.expires_at),
  };
}
