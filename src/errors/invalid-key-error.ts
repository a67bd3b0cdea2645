/**
 * A key that is not a valid idempotency key.
 *
 * @module
 */
import { messageText } from './message-text.js';
import { ErrorCode, OncelyError, type OperationRef } from './oncely-error.js';

/**
 * The key is not a valid idempotency key (1–255 characters from `A-Z a-z 0-9 _ . : ~ @ / + = -`):
 * rejected locally, or the server answered `400` about it. The server's problem `detail`, when
 * it sent one, ends the message (cleaned, cut to 300 characters) and is kept verbatim in
 * {@link InvalidKeyError.detail}.
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
  /**
   * The `detail` of the server's problem+json answer, verbatim; `undefined` when rejected
   * locally or when the server sent none.
   *
   * @example
   * ```ts
   * if (error instanceof InvalidKeyError && error.detail !== undefined) console.warn(error.detail);
   * ```
   */
  readonly detail: string | undefined;

  /**
   * @param options `detail` is the server's problem `detail`; it goes into the message
   */
  constructor(ref: OperationRef, status?: number, options?: { readonly cause?: unknown; readonly detail?: string | undefined }) {
    const why =
      status === undefined ? 'is not a valid idempotency key (1–255 characters from A-Z a-z 0-9 _ . : ~ @ / + = -)' : `was refused by the server (${status})`;
    const said = options?.detail === undefined ? '' : messageText(options.detail);
    // The key is the caller's input, of any length: the message shows its start only.
    const shown = ref.key.length > 80 ? `${JSON.stringify(ref.key.slice(0, 80))}… (${ref.key.length} characters)` : JSON.stringify(ref.key);
    super(ErrorCode.InvalidKey, `${ref.method} ${ref.url}: the Idempotency-Key ${shown} ${why}${said === '' ? '' : `: ${said}`}`, options);
    this.method = ref.method;
    this.url = ref.url;
    this.key = ref.key;
    this.status = status;
    this.detail = options?.detail;
  }
}
