/**
 * A final non-2xx answer.
 *
 * @module
 */
import { ErrorCode, OncelyError, describeOperation, type OperationRef } from './oncely-error.js';

/**
 * The response part of an {@link HttpError}.
 *
 * @example
 * ```ts
 * new HttpError(ref, { status: 402, headers: {}, body: '{"type":"…/declined"}', replayed: false });
 * ```
 */
export interface HttpErrorResponse {
  readonly status: number;
  /** Lower-case header names. */
  readonly headers: Readonly<Record<string, string>>;
  /** The body text. */
  readonly body: string;
  /** Whether the server marked the response as a replay. */
  readonly replayed: boolean;
}

/**
 * A final non-2xx answer, such as `402` (declined), `401` or `404`. Never retried. The operation
 * is settled as `failed` (a `402` is also what the server replays for this key) — except on a
 * `401`, where the server executed nothing: the operation stays pending, and `resume()` with
 * valid credentials completes it.
 *
 * @example
 * ```ts
 * try { await client.post('v1/payments', { json: { amount: 5_000_000, currency: 'EUR' } }); } catch (error) {
 *   if (isOncelyError(error, 'HTTP_ERROR') && error.status === 402) console.log('declined', error.body);
 * }
 * ```
 */
export class HttpError extends OncelyError {
  override name = 'HttpError';
  readonly method: string;
  readonly url: string;
  readonly key: string;
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  /** The response body text (a problem+json document from the oncely server). */
  readonly body: string;
  readonly replayed: boolean;

  constructor(ref: OperationRef, response: HttpErrorResponse, options?: { readonly cause?: unknown }) {
    const replay = response.replayed ? ' (replayed)' : '';
    super(ErrorCode.Http, `${describeOperation(ref)}: the server answered ${response.status}${replay}`, options);
    this.method = ref.method;
    this.url = ref.url;
    this.key = ref.key;
    this.status = response.status;
    this.headers = response.headers;
    this.body = response.body;
    this.replayed = response.replayed;
  }
}
