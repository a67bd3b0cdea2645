/**
 * A key that is not a valid idempotency key.
 *
 * @module
 */
import { ErrorCode, OncelyError, type OperationRef } from './oncely-error.js';

/**
 * The key is not a valid idempotency key (1–255 characters from `A-Z a-z 0-9 _ . : ~ @ / + = -`):
 * rejected locally, or the server answered `400` about it.
 *
 * @example
 * ```ts
 * await client.post('v1/payments', { key: 'has spaces', json }); // throws InvalidKeyError
 * ```
 */
export class InvalidKeyError extends OncelyError {
  override name = 'InvalidKeyError';
  readonly method: string;
  readonly url: string;
  readonly key: string;
  /** `400` when the server refused it, `undefined` when rejected locally. */
  readonly status: number | undefined;

  constructor(ref: OperationRef, status?: number, options?: { readonly cause?: unknown }) {
    const why = status === undefined ? 'is not a valid idempotency key' : `was refused by the server (${status})`;
    super(ErrorCode.InvalidKey, `${ref.method} ${ref.url}: the Idempotency-Key ${JSON.stringify(ref.key)} ${why}`, options);
    this.method = ref.method;
    this.url = ref.url;
    this.key = ref.key;
    this.status = status;
  }
}
