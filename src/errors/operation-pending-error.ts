/**
 * An outcome still unknown when the retry budget ran out.
 *
 * @module
 */
import { describeCause } from './message-text.js';
import { ErrorCode, OncelyError, describeOperation, type OperationRef } from './oncely-error.js';

/**
 * The retry budget ran out while the outcome was still unknown (network errors, `409`, `202`,
 * `503`, `5xx`). The operation stays `pending` in the journal: `client.resume()` completes it
 * later with the same key and bytes. Unknown is never reported as failed.
 *
 * When the last attempt got no response, `cause` is what happened instead — undici's
 * `TypeError: fetch failed` (its own `cause` holds the `ECONNREFUSED` or reset socket) or ky's
 * `TimeoutError` — and the message names its innermost error:
 * `…: outcome still unknown after 2 attempt(s), no response, last error: connect ECONNREFUSED 127.0.0.1:9 (retry limit of 1 reached); …`.
 *
 * @example
 * ```ts
 * try { await op.send(); } catch (error) {
 *   if (isOncelyError(error, 'OPERATION_PENDING')) showBanner('Payment still processing', error.message);
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
   *   held by another process) and goes into the message; `cause`, the last attempt's network
   *   error or timeout, is named in the message as `last error: …` (cleaned, at most 300 characters)
   */
  constructor(ref: OperationRef, attempts: number, lastStatus?: number, options?: { readonly cause?: unknown; readonly reason?: string }) {
    const status = lastStatus === undefined ? 'no response' : `last status ${lastStatus}`;
    const last = options?.cause === undefined ? status : `${status}, last error: ${describeCause(options.cause)}`;
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
