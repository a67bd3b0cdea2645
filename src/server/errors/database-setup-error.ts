/**
 * The database (or a pooler in front of it) is set up in a way the key store cannot work with.
 *
 * @module
 */
import { ErrorCode, OncelyError } from '../../errors/oncely-error.js';

/**
 * Thrown by a store's `migrate()` (before any request is served) when the database or the pooler
 * in front of it is configured so that the store's guarantees would not hold: a session default
 * isolation other than READ COMMITTED, a pooler that refuses the store's startup parameters, a
 * schema left by a development build. The message names the setting to change.
 *
 * @example
 * ```ts
 * try {
 *   await store.migrate?.();
 * } catch (error) {
 *   if (error instanceof DatabaseSetupError) console.error(`change ${error.setting}: ${error.message}`);
 * }
 * ```
 */
export class DatabaseSetupError extends OncelyError {
  override name = 'DatabaseSetupError';
  /** The setting to change, as its owner spells it (`default_transaction_isolation`, `ignore_startup_parameters`). */
  readonly setting: string;

  constructor(setting: string, message: string, options?: { readonly cause?: unknown }) {
    super(ErrorCode.Config, message, options);
    this.setting = setting;
  }
}
