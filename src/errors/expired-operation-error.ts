/**
 * A pending operation older than the key retention.
 *
 * @module
 */
import { ErrorCode, OncelyError, describeOperation, type OperationRef } from './oncely-error.js';

/**
 * A pending operation is older than the key retention (`keyTtlMs`): the server may have forgotten
 * its key, so resending it could apply it twice. It is never resent; reconcile it by hand.
 *
 * @example
 * ```ts
 * const results = await client.resume();
 * for (const r of results) if (r.state === 'expired' && r.error instanceof ExpiredOperationError) reconcile(r.key);
 * ```
 */
export class ExpiredOperationError extends OncelyError {
  override name = 'ExpiredOperationError';
  readonly method: string;
  readonly url: string;
  readonly key: string;
  /** Epoch milliseconds when the operation was journaled. */
  readonly createdAt: number;

  constructor(ref: OperationRef, createdAt: number, keyTtlMs: number, options?: { readonly cause?: unknown }) {
    super(
      ErrorCode.ExpiredOperation,
      `${describeOperation(ref)}: pending since ${new Date(createdAt).toISOString()}, older than the key retention of ${keyTtlMs} ms; not resent, reconcile it`,
      options,
    );
    this.method = ref.method;
    this.url = ref.url;
    this.key = ref.key;
    this.createdAt = createdAt;
  }
}
