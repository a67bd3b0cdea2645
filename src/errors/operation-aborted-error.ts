/**
 * A wait stopped by the caller's signal.
 *
 * @module
 */
import { ErrorCode, OncelyError, describeOperation, type OperationRef } from './oncely-error.js';

/**
 * The caller's `signal` aborted while the operation was in flight. Waiting stopped, but the
 * operation stays `pending`: an attempt may have reached the server, so `resume()` finishes it.
 *
 * @example
 * ```ts
 * const controller = new AbortController();
 * const sending = client.post('v1/payments', { json, signal: controller.signal });
 * controller.abort(); // sending rejects with OperationAbortedError; the op is still pending
 * ```
 */
export class OperationAbortedError extends OncelyError {
  override name = 'OperationAbortedError';
  readonly method: string;
  readonly url: string;
  readonly key: string;

  constructor(ref: OperationRef, options?: { readonly cause?: unknown }) {
    super(ErrorCode.Aborted, `${describeOperation(ref)}: aborted by the caller; the operation stays pending`, options);
    this.method = ref.method;
    this.url = ref.url;
    this.key = ref.key;
  }
}
