/**
 * A response larger than a key store keeps.
 *
 * @module
 */
import { ErrorCode, OncelyError } from '../../errors/oncely-error.js';

/**
 * The final response given to a key store is larger than its `maxResponseBytes`: nothing was
 * written. A store of one's own throws exactly this class (from `oncely/server/store`): the
 * middleware over a store that does not declare its cap catches it and stores the "response not
 * stored" notice instead. The handler reports it to `hooks.onError` and answers `503`.
 *
 * @example
 * ```ts
 * import { createIdempotencyHandler, ResponseTooLargeError } from 'oncely/server';
 * import { sqliteKeyStore } from 'oncely/server/sqlite';
 * const store = sqliteKeyStore({ path: 'oncely.db', maxResponseBytes: 16_384 });
 * const onError = (error: unknown) => {
 *   if (error instanceof ResponseTooLargeError) console.error(`a ${error.bytes}-byte response is over the store's ${error.maxBytes}`);
 * };
 * const handler = createIdempotencyHandler({ store, operations: [], authenticate: () => 'acme', hooks: { onError } });
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
