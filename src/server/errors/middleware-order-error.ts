/**
 * A framework middleware mounted where it cannot see the request it guards.
 *
 * @module
 */
import { ErrorCode, OncelyError } from '../../errors/oncely-error.js';

/**
 * The guard cannot fingerprint the request because a middleware before it consumed the body in a
 * form it cannot see again (a form parser before `oncely/hono`): mount `idempotent()` first. On
 * `oncely/hono`, `oncely/web` and `oncely/nestjs`, which throw it.
 *
 * @example
 * ```ts
 * import { Hono } from 'hono';
 * import { MiddlewareOrderError } from 'oncely/hono';
 * const app = new Hono();
 * app.onError((error, c) => (error instanceof MiddlewareOrderError ? c.text(`fix the middleware order: ${error.message}`, 500) : c.text('error', 500)));
 * ```
 */
export class MiddlewareOrderError extends OncelyError {
  override name = 'MiddlewareOrderError';

  constructor(message: string) {
    super(ErrorCode.Config, message);
  }
}
