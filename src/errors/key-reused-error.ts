/**
 * A key reused for a different request.
 *
 * @module
 */
import { messageText } from './message-text.js';
import { ErrorCode, OncelyError, describeOperation, type OperationRef } from './oncely-error.js';

/**
 * The key was already used for a request with a different fingerprint (method, path or body):
 * the server answered `422`, or the client's journal caught it before anything was sent. The
 * server's problem `detail`, when it sent one, ends the message (cleaned, cut to 300
 * characters) and is kept verbatim in {@link KeyReusedError.detail}.
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
  /**
   * The `detail` of the server's problem+json answer, verbatim; `undefined` when caught locally
   * or when the server sent none.
   *
   * @example
   * ```ts
   * if (error instanceof KeyReusedError) console.warn(error.key, error.detail ?? 'reused locally');
   * ```
   */
  readonly detail: string | undefined;

  /**
   * @param options `detail` is the server's problem `detail`; it goes into the message
   */
  constructor(ref: OperationRef, status?: number, options?: { readonly cause?: unknown; readonly detail?: string | undefined }) {
    const where = status === undefined ? 'the local journal holds' : `the server answered ${status}:`;
    const said = options?.detail === undefined ? '' : messageText(options.detail);
    super(ErrorCode.KeyReused, `${describeOperation(ref)}: ${where} a different request under this key${said === '' ? '' : `: ${said}`}`, options);
    this.method = ref.method;
    this.url = ref.url;
    this.key = ref.key;
    this.status = status;
    this.detail = options?.detail;
  }
}
