/**
 * The reference app's tables, created next to the key table by `store.migrate(referenceSchema)`.
 *
 * The app's SQL runs on SQLite and PostgreSQL alike (`$n` placeholders, `ON CONFLICT DO NOTHING`,
 * integer epoch milliseconds instead of dialect time types, text ids minted by the app), so only
 * the column types differ between the two scripts.
 *
 * - `payments`, `payment_steps`, `ledger_entries`: the payment service's own records.
 *   `payment_steps` logs every execution of H1/H2/H3 and has no unique constraint, so a step
 *   that ran twice is visible to the tests instead of being turned into an error. The ledger
 *   has no `UNIQUE(payment_id)` for the same reason: it is what the exactly-once checks count.
 * - `risk_checks`, `rail_charges`: the two simulated external systems' own tables, keyed by the
 *   derived idempotency key each system receives.
 * - `inbox_events`, `inbox_effects`: the consumer inbox and the effect it commits with each event.
 *
 * @module
 */
import type { AppSchema } from '../server/store/types.js';

function ddl(types: { readonly bigint: string }): string {
  const { bigint } = types;
  return `
CREATE TABLE IF NOT EXISTS payments (
  id              TEXT PRIMARY KEY,
  client_id       TEXT NOT NULL,
  idempotency_key TEXT NOT NULL,
  amount          ${bigint} NOT NULL,
  currency        TEXT NOT NULL,
  reference       TEXT NOT NULL,
  status          TEXT NOT NULL,
  risk_id         TEXT,
  charge_id       TEXT,
  created_at      ${bigint} NOT NULL,
  updated_at      ${bigint} NOT NULL
);
CREATE INDEX IF NOT EXISTS payments_by_client ON payments (client_id, created_at);
CREATE TABLE IF NOT EXISTS payment_steps (
  client_id  TEXT NOT NULL,
  payment_id TEXT NOT NULL,
  step       TEXT NOT NULL,
  at         ${bigint} NOT NULL
);
CREATE INDEX IF NOT EXISTS payment_steps_by_payment ON payment_steps (payment_id);
CREATE TABLE IF NOT EXISTS ledger_entries (
  id              TEXT PRIMARY KEY,
  client_id       TEXT NOT NULL,
  payment_id      TEXT NOT NULL,
  amount          ${bigint} NOT NULL,
  currency        TEXT NOT NULL,
  idempotency_key TEXT NOT NULL,
  created_at      ${bigint} NOT NULL
);
CREATE INDEX IF NOT EXISTS ledger_entries_by_client ON ledger_entries (client_id, created_at);
CREATE TABLE IF NOT EXISTS risk_checks (
  system_key TEXT PRIMARY KEY,
  client_id  TEXT NOT NULL,
  risk_id    TEXT NOT NULL,
  amount     ${bigint} NOT NULL,
  score      ${bigint} NOT NULL,
  created_at ${bigint} NOT NULL
);
CREATE TABLE IF NOT EXISTS rail_charges (
  system_key TEXT PRIMARY KEY,
  client_id  TEXT NOT NULL,
  charge_id  TEXT NOT NULL,
  amount     ${bigint} NOT NULL,
  currency   TEXT NOT NULL,
  reference  TEXT NOT NULL,
  status     TEXT NOT NULL,
  created_at ${bigint} NOT NULL
);
CREATE INDEX IF NOT EXISTS rail_charges_by_client ON rail_charges (client_id, created_at);
CREATE TABLE IF NOT EXISTS inbox_events (
  client_id   TEXT NOT NULL,
  event_id    TEXT NOT NULL,
  type        TEXT NOT NULL,
  received_at ${bigint} NOT NULL,
  PRIMARY KEY (client_id, event_id)
);
CREATE TABLE IF NOT EXISTS inbox_effects (
  id         TEXT PRIMARY KEY,
  client_id  TEXT NOT NULL,
  event_id   TEXT NOT NULL,
  type       TEXT NOT NULL,
  data       TEXT NOT NULL,
  created_at ${bigint} NOT NULL
);
CREATE INDEX IF NOT EXISTS inbox_effects_by_event ON inbox_effects (client_id, event_id);
`;
}

/**
 * The reference app's DDL for both dialects.
 *
 * @example
 * ```ts
 * await store.migrate?.(referenceSchema);
 * ```
 */
export const referenceSchema: AppSchema = {
  sqlite: ddl({ bigint: 'INTEGER' }),
  postgres: ddl({ bigint: 'BIGINT' }),
};
