/**
 * Every statement of the MySQL / MariaDB key store, and the key table they run on.
 *
 * The table is InnoDB, keyed by `(client_id, idem_key)`. Both are `VARBINARY`: a key is compared
 * byte for byte, case-sensitively, with no trailing-space padding. (MariaDB's `utf8mb4_bin` is a
 * PAD SPACE collation, under which `'k'` and `'k '` would be one primary key; MySQL 8's
 * `utf8mb4_0900_bin` is not, but MariaDB 10.11 has no such collation under that name.) Their
 * widths keep the primary key within InnoDB's 3072-byte index limit: a key of oncely's 255
 * UTF-16 code units is at most 765 UTF-8 bytes.
 *
 * Time: every timestamp is epoch milliseconds by the database's clock ({@link NOW_MS}), never the
 * application's. `UTC_TIMESTAMP(6)` is read once per statement and does not depend on the
 * session's time zone, so instances in several zones, or a zone that changes its clock, agree.
 *
 * The response headers keep their order: the response is stored as JSON text, not in a `JSON`
 * column (MySQL 8's binary JSON sorts an object's keys).
 *
 * @module
 */

/** The widths of the primary key's two columns, in bytes. */
export const CLIENT_ID_BYTES = 1024;
export const KEY_BYTES = 768;

/** Epoch milliseconds now, by the database's clock (one value for the whole statement). */
export const NOW_MS = "(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) DIV 1000)";

/** The columns a row is read with (`now_ms`: the clock its lease is measured against). */
const ROW = `client_id, idem_key, request_hash, endpoint, request_body, state, recovery_point, data, response,
  lease_token, lease_until, attempts, created_at, expires_at, ${NOW_MS} AS now_ms`;

/** `name` as a quoted identifier, after checking it is a plain one (no quoting games). */
export function identifier(name: string, what: string): string {
  if (!/^[A-Za-z_][A-Za-z0-9_$]{0,63}$/.test(name)) throw new TypeError(`mysqlKeyStore: ${what} ${JSON.stringify(name)} is not a plain identifier`);
  return `\`${name}\``;
}

/** The statements of one key table (`table` already quoted, optionally database-qualified). */
export function statementsFor(table: string) {
  const pk = 'client_id = ? AND idem_key = ?';
  return {
    createTable: `CREATE TABLE IF NOT EXISTS ${table} (
  client_id        VARBINARY(${CLIENT_ID_BYTES}) NOT NULL,
  idem_key         VARBINARY(${KEY_BYTES}) NOT NULL,
  request_hash     VARCHAR(255) NOT NULL,
  endpoint         TEXT NOT NULL,
  request_body     LONGTEXT NOT NULL,
  state            VARCHAR(8) CHARACTER SET ascii NOT NULL,
  recovery_point   VARCHAR(255),
  data             LONGTEXT NOT NULL,
  response         LONGTEXT,
  lease_token      VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin,
  lease_until      BIGINT,
  next_attempt_at  BIGINT NOT NULL DEFAULT 0,
  attempts         INT NOT NULL DEFAULT 0,
  created_at       BIGINT NOT NULL,
  expires_at       BIGINT NOT NULL,
  PRIMARY KEY (client_id, idem_key),
  KEY oncely_unfinished (state, next_attempt_at, created_at),
  KEY oncely_expiry (expires_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
    /** Admission: a plain INSERT; a duplicate fails with ER_DUP_ENTRY (see the store). */
    insert: `INSERT INTO ${table} (client_id, idem_key, request_hash, endpoint, request_body, state, data, lease_token, lease_until, created_at, expires_at)
  VALUES (?, ?, ?, ?, ?, 'started', '{}', ?, ${NOW_MS} + ?, ${NOW_MS}, ${NOW_MS} + ?)`,
    load: `SELECT ${ROW} FROM ${table} WHERE ${pk}`,
    takeOver: `UPDATE ${table} SET lease_token = ?, lease_until = ${NOW_MS} + ?
  WHERE ${pk} AND state = 'started' AND (lease_token IS NULL OR lease_until <= ${NOW_MS})`,
    /** The fence: locks the row for the transaction while the lease holds it. */
    lock: `SELECT recovery_point, data FROM ${table} WHERE ${pk} AND state = 'started' AND lease_token = ? FOR UPDATE`,
    forget: `DELETE FROM ${table} WHERE ${pk} AND lease_token = ? AND recovery_point IS NULL`,
    sweep: (limit: number) => `SELECT ${ROW} FROM ${table}
  WHERE state = 'started' AND next_attempt_at <= ${NOW_MS} AND (lease_token IS NULL OR lease_until <= ${NOW_MS})
  ORDER BY created_at LIMIT ${limit}`,
    reap: (limit: number) => `DELETE FROM ${table} WHERE state = 'finished' AND expires_at <= ${NOW_MS} ORDER BY expires_at LIMIT ${limit}`,
    /** The fenced UPDATE of the columns named by `set` (each `column = …` with its `?` parameters). */
    update: (set: readonly string[]) => `UPDATE ${table} SET ${set.join(', ')} WHERE ${pk} AND state = 'started' AND lease_token = ?`,
  };
}

/** The store's statements, as {@link statementsFor} returns them. */
export type Statements = ReturnType<typeof statementsFor>;
