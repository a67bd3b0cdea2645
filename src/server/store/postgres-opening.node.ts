/**
 * How a store transaction begins ({@link Runner.open}): READ COMMITTED, the schema first on the
 * search path and the statement timeout (`beginSql`), then, for this transaction only, the bound
 * on the first statement's lock wait and on the transaction's idle time. Written two ways: one
 * simple-protocol script for a pipelined connection, and single statements with bind parameters
 * for a batch (`postgres-batch.node.ts`), whose messages carry one statement each.
 *
 * @module
 */
import { InvalidOptionError } from '../errors/invalid-option-error.js';
import type { OpenOptions, Statement } from './postgres-transport.node.js';

/**
 * The session's own lock timeout, kept aside for this transaction, and put back (see
 * {@link OpenOptions.lockTimeoutMs}): `SET LOCAL … TO DEFAULT` would give the role's or the
 * server's default instead of what the pool's sessions set.
 */
const LOCK_TIMEOUT_KEPT = "SELECT set_config('oncely.kept_lock_timeout', current_setting('lock_timeout'), true)";
/** PostgreSQL's largest `lock_timeout` and `idle_in_transaction_session_timeout` (an int of milliseconds). */
const MAX_TIMEOUT_MS = 2_147_483_647;
/** The statement that puts the session's own lock timeout back, behind the first statement. */
export const LOCK_TIMEOUT_DEFAULT = "SELECT set_config('lock_timeout', current_setting('oncely.kept_lock_timeout'), true)";
/**
 * The idle bound for this transaction (see {@link OpenOptions.idleTimeoutMs}), never looser than
 * the session's own: a pool whose operator set a shorter `idle_in_transaction_session_timeout`
 * keeps it (`0` is none).
 */
const idleBound = (ms: string): string => {
  const current = "current_setting('idle_in_transaction_session_timeout')";
  return `SELECT set_config('idle_in_transaction_session_timeout', CASE WHEN ${current}::interval = '0' OR ${current}::interval > interval '1 ms' * ${ms}::int THEN ${ms}::int::text ELSE ${current} END, true)`;
};

/**
 * `value` of {@link OpenOptions} `name` as PostgreSQL takes it: rounded up to a whole
 * millisecond, from 1 (`0` would mean no bound) to PostgreSQL's largest.
 */
function milliseconds(name: keyof OpenOptions, value: number | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (Number.isNaN(value) || value < 0) throw new InvalidOptionError('postgresKeyStore', name, `must be a number of milliseconds ≥ 0, got ${value}`);
  return Math.min(MAX_TIMEOUT_MS, Math.max(1, Math.ceil(value)));
}

/** A transaction's opening, both ways, and whether the first statement's lock wait is bounded. */
export interface Opening {
  /** For a pipelined connection: one message. */
  readonly script: string;
  /** For a batch: one statement each. */
  readonly statements: readonly Statement[];
  /** Whether the lock timeout must be put back ({@link LOCK_TIMEOUT_DEFAULT}) behind the first statement. */
  readonly bounded: boolean;
}

/**
 * The opening of a transaction that begins with `begin` (`beginSql`'s script) under `options`.
 *
 * @example
 * ```ts
 * const { script, statements } = opening(beginSql('oncely', 15000), 'oncely', 15000, { lockTimeoutMs: 500 });
 * ```
 */
export function opening(begin: string, schema: string, statementTimeoutMs: number | undefined, options?: OpenOptions): Opening {
  const bounded = milliseconds('lockTimeoutMs', options?.lockTimeoutMs);
  const idle = milliseconds('idleTimeoutMs', options?.idleTimeoutMs);
  let script = bounded === undefined ? begin : `${begin}; ${LOCK_TIMEOUT_KEPT}; SET LOCAL lock_timeout = ${bounded}`;
  if (idle !== undefined) script += `; ${idleBound(String(idle))}`;
  // One statement sets them all, in the order written (PostgreSQL computes a select list left to
  // right): the session's own lock timeout is kept aside before the bound replaces it.
  const settings = [`set_config('search_path', $1, true)`];
  const params: unknown[] = [`${schema}, public`];
  const param = (value: unknown): string => `$${params.push(value)}`;
  if (statementTimeoutMs !== undefined) settings.push(`set_config('statement_timeout', ${param(String(statementTimeoutMs))}, true)`);
  if (bounded !== undefined) settings.push(LOCK_TIMEOUT_KEPT.slice('SELECT '.length), `set_config('lock_timeout', ${param(String(bounded))}, true)`);
  if (idle !== undefined) settings.push(idleBound(param(idle)).slice('SELECT '.length));
  const statements: Statement[] = [
    { sql: 'BEGIN ISOLATION LEVEL READ COMMITTED', params: [] },
    { sql: `SELECT ${settings.join(', ')}`, params },
  ];
  return { script, statements, bounded: bounded !== undefined };
}
