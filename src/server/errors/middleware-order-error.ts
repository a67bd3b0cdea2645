/**
 * A framework middleware mounted where it cannot see the request it guards.
 *
 * @module
 */
import { ErrorCode, OncelyError } from '../../errors/oncely-error.js';

/**
 * The guard cannot fingerprint the request because a middleware before it consumed the body in a
 * form it cannot see again (a form parser before `oncely/hono`): mount `idempotent()` first.
 *
 * @example
 * ```ts
 * if (error instanceof MiddlewareOrderError) console.error(error.message);
 * ```
 */
export class MiddlewareOrderError extends OncelyError {
  override name = 'MiddlewareOrderError';

  constructor(message: string) {
    super(ErrorCode.Config, message);
  }
}
