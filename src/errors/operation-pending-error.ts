/**
 * An outcome still unknown when the retry budget ran out.
 *
 * @module
 */
import { ErrorCode, OncelyError, describeOperation, type OperationRef } from './oncely-error.js';

/**
 * The retry budget ran out while the outcome was still unknown (network errors, `409`, `202`,
 * `503`, `5xx`). The operation stays `pending` in the journal: `client.resume()` completes it
 * later with the same key and bytes. Unknown is never reported as failed.
 *
 * @example
 * ```ts
 * try { await op.send(); } catch (error) {
 *   if (isOncelyError(error, 'OPERATION_PENDING')) showBanner('Payment still processing');
 * }
 * ```
 */
export class OperationPendingError extends OncelyError {
  override name = 'OperationPendingError';
  readonly method: string;
  readonly url: string;
  readonly key: string;
  /** Attempts made so far, across processes. */
  readonly attempts: number;
  /** The last status seen, or `undefined` when no response arrived. */
  readonly lastStatus: number | undefined;

  /**
   * @param options `reason` says why the client stopped (the retry limit, the time budget, a claim
   *   held by another process) and goes into the message
   */
  constructor(
    ref: OperationRef,
    attempts: number,
    lastStatus?: number,
    options?: { readonly cause?: unknown; readonly reason?: string },
  ) {
    const last = lastStatus === undefined ? 'no response' : `last status ${lastStatus}`;
    const reason = options?.reason === undefined ? '' : ` (${options.reason})`;
    super(
      ErrorCode.OperationPending,
      `${describeOperation(ref)}: outcome still unknown after ${attempts} attempt(s), ${last}${reason}; the operation stays pending and resume() can complete it`,
      options,
    );
    this.method = ref.method;
    this.url = ref.url;
    this.key = ref.key;
    this.attempts = attempts;
    this.lastStatus = lastStatus;
  }
}
