/**
 * An option of the server library, the middleware or `oncely serve` that cannot be used.
 *
 * @module
 */
import { ErrorCode, OncelyError } from '../../errors/oncely-error.js';

/**
 * An option is invalid: thrown at construction (`createIdempotencyHandler`, `idempotent()`,
 * `sqliteKeyStore`, `postgresKeyStore`, `createReferenceApp`), never on a request. The message
 * names the option, its value and what it must be. Exported by every entry whose functions throw
 * it (`oncely/server`, `oncely/server/sqlite`, `oncely/server/postgres`, each middleware entry).
 *
 * @example
 * ```ts
 * import { createIdempotencyHandler, InvalidOptionError } from 'oncely/server';
 * import { sqliteKeyStore } from 'oncely/server/sqlite';
 * const store = sqliteKeyStore({ path: 'oncely.db' });
 * try {
 *   createIdempotencyHandler({ store, operations: [], authenticate: () => null, leaseMs: -1 });
 * } catch (error) {
 *   if (error instanceof InvalidOptionError) console.error(error.option); // 'leaseMs'
 * }
 * ```
 */
export class InvalidOptionError extends OncelyError {
  override name = 'InvalidOptionError';
  /** The option, as the caller spells it (`leaseMs`, `replayCache.maxBytes`). */
  readonly option: string;

  constructor(where: string, option: string, problem: string, options?: { readonly cause?: unknown }) {
    super(ErrorCode.Config, `${where}: ${option} ${problem}`, options);
    this.option = option;
  }
}
