/**
 * A request that cannot leave this process at all.
 *
 * @module
 */
import { ErrorCode, OncelyError, describeOperation, type OperationRef } from './oncely-error.js';

/**
 * The request could not be sent at all: `fetch` refused it locally (a header value it does not
 * accept, a URL it cannot use) before any byte left the process. Retrying would fail the same
 * way, so it is never reported as an unknown outcome. `settled` says what happened to the
 * operation: `true` when nothing had ever been sent for it, so it was settled as `failed`;
 * `false` when an earlier attempt may have been sent (the server may have applied it), so it stays
 * pending for a `resume()` with a request that can be sent.
 *
 * @example
 * ```ts
 * try {
 *   await client.post('v1/payments', { json });
 * } catch (error) {
 *   if (isOncelyError(error, 'REQUEST_REFUSED')) console.error(error.message, error.settled ? '(failed)' : '(still pending)');
 * }
 * ```
 */
export class RequestRefusedError extends OncelyError {
  override name = 'RequestRefusedError';
  readonly method: string;
  readonly url: string;
  readonly key: string;
  /** Whether the operation was settled as `failed` (nothing was ever sent for it). */
  readonly settled: boolean;

  constructor(ref: OperationRef, reason: string, settled: boolean, options?: { readonly cause?: unknown }) {
    const then = settled ? 'nothing was ever sent, the operation is failed' : 'an earlier attempt may have been sent, the operation stays pending';
    super(ErrorCode.RequestRefused, `${describeOperation(ref)} cannot be sent: ${reason}; ${then}`, options);
    this.method = ref.method;
    this.url = ref.url;
    this.key = ref.key;
    this.settled = settled;
  }
}
