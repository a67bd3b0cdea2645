/**
 * A key reused for a different request.
 *
 * @module
 */
import { ErrorCode, OncelyError, describeOperation, type OperationRef } from './oncely-error.js';

/**
 * The key was already used for a request with a different fingerprint (method, path or body):
 * the server answered `422`, or the client's journal caught it before anything was sent.
 *
 * @example
 * ```ts
 * await client.post('v1/payments', { key: 'order-7', json: { amount: 1 } });
 * await client.post('v1/payments', { key: 'order-7', json: { amount: 2 } }); // throws KeyReusedError, sends nothing
 * ```
 */
export class KeyReusedError extends OncelyError {
  override name = 'KeyReusedError';
  readonly method: string;
  readonly url: string;
  readonly key: string;
  /** `422` when the server refused it, `undefined` when caught locally. */
  readonly status: number | undefined;

  constructor(ref: OperationRef, status?: number, options?: { readonly cause?: unknown }) {
    const where = status === undefined ? 'the local journal holds' : `the server answered ${status}:`;
    super(ErrorCode.KeyReused, `${describeOperation(ref)}: ${where} a different request under this key`, options);
    this.method = ref.method;
    this.url = ref.url;
    this.key = ref.key;
    this.status = status;
  }
}
