/**
 * The reference app's tables, created next to the key table by `store.migrate(referenceSchema)`.
 *
 * The app's SQL runs on SQLite, PostgreSQL and MySQL alike (`$n` placeholders, an insert that does
 * nothing on a duplicate (`./insert-once.ts`), integer epoch milliseconds instead of dialect time
 * types, text ids minted by the app), so only the scripts differ.
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
 * The same tables on MySQL / MariaDB: a key or an indexed column is a `VARCHAR` (an index takes no
 * `TEXT`), compared byte for byte (`utf8mb4_bin`) as on the other two, and the indexes are
 * declared in the table (MySQL 8 has no `CREATE INDEX IF NOT EXISTS`). The widths hold what the
 * app accepts: ids and keys of at most 255 characters, an event type of at most 100.
 */
const MYSQL = `
CREATE TABLE IF NOT EXISTS payments (
  id VARCHAR(64) PRIMARY KEY, client_id VARCHAR(255) NOT NULL, idempotency_key VARCHAR(255) NOT NULL, amount BIGINT NOT NULL,
  currency VARCHAR(16) NOT NULL, reference TEXT NOT NULL, status VARCHAR(32) NOT NULL, risk_id VARCHAR(64), charge_id VARCHAR(64),
  created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL, KEY payments_by_client (client_id, created_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE TABLE IF NOT EXISTS payment_steps (
  client_id VARCHAR(255) NOT NULL, payment_id VARCHAR(64) NOT NULL, step VARCHAR(32) NOT NULL, at BIGINT NOT NULL,
  KEY payment_steps_by_payment (payment_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE TABLE IF NOT EXISTS ledger_entries (
  id VARCHAR(64) PRIMARY KEY, client_id VARCHAR(255) NOT NULL, payment_id VARCHAR(64) NOT NULL, amount BIGINT NOT NULL,
  currency VARCHAR(16) NOT NULL, idempotency_key VARCHAR(255) NOT NULL, created_at BIGINT NOT NULL,
  KEY ledger_entries_by_client (client_id, created_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE TABLE IF NOT EXISTS risk_checks (
  system_key VARCHAR(255) PRIMARY KEY, client_id VARCHAR(255) NOT NULL, risk_id VARCHAR(64) NOT NULL, amount BIGINT NOT NULL,
  score BIGINT NOT NULL, created_at BIGINT NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE TABLE IF NOT EXISTS rail_charges (
  system_key VARCHAR(255) PRIMARY KEY, client_id VARCHAR(255) NOT NULL, charge_id VARCHAR(64) NOT NULL, amount BIGINT NOT NULL,
  currency VARCHAR(16) NOT NULL, reference TEXT NOT NULL, status VARCHAR(32) NOT NULL, created_at BIGINT NOT NULL,
  KEY rail_charges_by_client (client_id, created_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE TABLE IF NOT EXISTS inbox_events (
  client_id VARCHAR(255) NOT NULL, event_id VARCHAR(255) NOT NULL, type VARCHAR(100) NOT NULL, received_at BIGINT NOT NULL,
  PRIMARY KEY (client_id, event_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE TABLE IF NOT EXISTS inbox_effects (
  id VARCHAR(64) PRIMARY KEY, client_id VARCHAR(255) NOT NULL, event_id VARCHAR(255) NOT NULL, type VARCHAR(100) NOT NULL,
  data LONGTEXT NOT NULL, created_at BIGINT NOT NULL, KEY inbox_effects_by_event (client_id, event_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
`;

/**
 * The reference app's DDL for each dialect.
 *
 * @example
 * ```ts
 * await store.migrate?.(referenceSchema);
 * ```
 */
export const referenceSchema: AppSchema = {
  sqlite: ddl({ bigint: 'INTEGER' }),
  postgres: ddl({ bigint: 'BIGINT' }),
  mysql: MYSQL,
};
