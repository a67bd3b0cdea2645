/**
 * A response larger than a key store keeps.
 *
 * @module
 */
import { ErrorCode, OncelyError } from '../../errors/oncely-error.js';

/**
 * The final response given to a key store's `finish` is larger than its `maxResponseBytes`:
 * nothing was written. The middleware, whose own cap may be above the store's, catches exactly
 * this class and stores the "response not stored" notice instead.
 *
 * @example
 * ```ts
 * if (error instanceof ResponseTooLargeError) console.error(error.bytes, error.maxBytes);
 * ```
 */
export class ResponseTooLargeError extends OncelyError {
  override name = 'ResponseTooLargeError';
  readonly bytes: number;
  readonly maxBytes: number;

  constructor(store: string, key: string, bytes: number, maxBytes: number) {
    super(ErrorCode.ResponseTooLarge, `${store}: the ${bytes}-byte response of key ${JSON.stringify(key.slice(0, 64))} exceeds maxResponseBytes (${maxBytes})`);
    this.bytes = bytes;
    this.maxBytes = maxBytes;
  }
}
