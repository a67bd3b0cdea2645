/**
 * A final non-2xx answer.
 *
 * @module
 */
import { messageText, parseProblem, type ProblemDetails } from './message-text.js';
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
 * When the body is a problem+json document (RFC 9457), its `title` and `detail` are in the
 * message (`…: the server answered 400 Invalid request: amount must be an integer`), cleaned of
 * control characters and cut to 300 characters, and verbatim in {@link HttpError.title},
 * {@link HttpError.detail} and {@link HttpError.problemType}.
 *
 * @example
 * ```ts
 * try { await client.post('v1/payments', { json: { amount: 5_000_000, currency: 'EUR' } }); } catch (error) {
 *   if (isOncelyError(error, 'HTTP_ERROR') && error.status === 402) console.log('declined:', error.detail ?? error.body);
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
  /**
   * The problem document's `type` URI (`https://oncely.dev/problems/declined`), verbatim;
   * `undefined` when the body is not a JSON object or has no string `type`.
   *
   * @example
   * ```ts
   * if (error.problemType?.endsWith('/declined') === true) showDeclined();
   * ```
   */
  readonly problemType: string | undefined;
  /**
   * The problem document's `title`, the summary of its type (`Invalid request`), verbatim;
   * `undefined` when the body is not a JSON object or has no string `title`.
   *
   * @example
   * ```ts
   * console.error(error.title ?? `HTTP ${error.status}`);
   * ```
   */
  readonly title: string | undefined;
  /**
   * The problem document's `detail`, what was wrong with this request (`amount must be an
   * integer`), verbatim and uncapped: the server wrote it, so escape it before showing it in a
   * page. `undefined` when the body is not a JSON object or has no string `detail`.
   *
   * @example
   * ```ts
   * form.showError(error.detail ?? 'The payment service refused the request.');
   * ```
   */
  readonly detail: string | undefined;

  constructor(ref: OperationRef, response: HttpErrorResponse, options?: { readonly cause?: unknown }) {
    const replay = response.replayed ? ' (replayed)' : '';
    const problem = parseProblem(response.body);
    // A refused credential settles nothing (the client leaves the operation pending): say so.
    const pending =
      response.status === 401 || response.status === 403
        ? '. Nothing was executed and the operation stays pending: resume() with valid credentials completes it'
        : '';
    super(ErrorCode.Http, `${describeOperation(ref)}: the server answered ${response.status}${replay}${problemSummary(problem)}${pending}`, options);
    this.method = ref.method;
    this.url = ref.url;
    this.key = ref.key;
    this.status = response.status;
    this.headers = response.headers;
    this.body = response.body;
    this.replayed = response.replayed;
    this.problemType = problem?.type;
    this.title = problem?.title;
    this.detail = problem?.detail;
  }
}

/** ` Title: detail`, ` Title` or `: detail`, to follow the status; empty when the server said neither. */
function problemSummary(problem: ProblemDetails | undefined): string {
  const title = messageText(problem?.title ?? '');
  const detail = messageText(problem?.detail ?? '');
  if (title === '') return detail === '' ? '' : `: ${detail}`;
  return ` ${detail === '' || detail === title ? title : messageText(`${title}: ${detail}`)}`;
}
