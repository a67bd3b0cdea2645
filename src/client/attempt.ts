/**
 * One HTTP attempt: the journaled bytes, the key and the credentials go out through ky with
 * its own retry and error throwing turned off, and whatever happens comes back as a value
 * the retry policy can judge.
 *
 * @module
 */
import ky, { TimeoutError } from 'ky';
import { headersToRecord } from './results.js';

/**
 * What one attempt sends.
 *
 * @internal
 */
export interface AttemptRequest {
  readonly method: string;
  readonly url: string;
  /** Every header to send, idempotency key and credentials included. */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string | null;
  readonly timeoutMs: number;
  readonly signal: AbortSignal;
  readonly fetch: ((request: Request) => Promise<Response>) | undefined;
}

/**
 * The server answered: the outcome plus what it said.
 *
 * @internal
 */
export interface ResponseReport {
  readonly outcome: { readonly kind: 'response'; readonly status: number; readonly retryAfter: string | null };
  readonly headers: Record<string, string>;
  readonly body: string;
}

/**
 * No answer arrived.
 *
 * @internal
 */
export interface NetworkReport {
  readonly outcome: { readonly kind: 'network'; readonly error: unknown };
}

/**
 * What one attempt produced.
 *
 * @internal
 */
export type AttemptReport = ResponseReport | NetworkReport;

type Input = string | URL | Request;

// ky hands its fetch a Request already; the option's narrower type promises callers exactly that.
const toRequest = (input: Input, init?: RequestInit): Request => (input instanceof Request ? input : new Request(input, init));

/**
 * An abort controller that follows `signal`, and aborts with ky's `TimeoutError` once `timeoutMs`
 * (0: never) have passed; `dispose` once the attempt is over.
 */
function attemptController(request: AttemptRequest): { readonly signal: AbortSignal; dispose(): void } {
  const controller = new AbortController();
  const follow = (): void => controller.abort(request.signal.reason);
  if (request.signal.aborted) follow();
  else request.signal.addEventListener('abort', follow, { once: true });
  const expire = (): void => controller.abort(new TimeoutError(new Request(request.url, { method: request.method })));
  const timer = request.timeoutMs === 0 ? undefined : setTimeout(expire, request.timeoutMs);
  return {
    signal: controller.signal,
    dispose: () => {
      clearTimeout(timer);
      request.signal.removeEventListener('abort', follow);
    },
  };
}

/**
 * Sends one attempt. Never throws for HTTP statuses, network errors or timeouts: those are
 * outcomes. It throws only when `signal` is aborted, with the signal's reason.
 *
 * `timeoutMs` bounds the whole attempt, body included: ky's own `timeout` ends when the headers
 * arrive, and a body dripped a byte at a time would otherwise hold the attempt for ever.
 *
 * @internal
 */
export async function sendAttempt(request: AttemptRequest): Promise<AttemptReport> {
  const { fetch: customFetch } = request;
  const attempt = attemptController(request);
  try {
    const response = await ky(request.url, {
      method: request.method,
      headers: request.headers,
      ...(request.body === null ? {} : { body: request.body }),
      retry: 0,
      throwHttpErrors: false,
      // The attempt's own timer (attemptController) bounds it, body included; ky's stops at the headers.
      timeout: false,
      signal: attempt.signal,
      ...(customFetch ? { fetch: (input: Input, init?: RequestInit) => customFetch(toRequest(input, init)) } : {}),
    });
    // Reading the body is part of the attempt: a connection cut mid-body is an unknown outcome.
    const body = await response.text();
    return {
      outcome: { kind: 'response', status: response.status, retryAfter: response.headers.get('retry-after') },
      headers: headersToRecord(response.headers),
      body,
    };
  } catch (error) {
    if (request.signal.aborted) throw request.signal.reason;
    // Cut off mid-body by the attempt's timer: the timeout, not the stream's abort, is the cause.
    return { outcome: { kind: 'network', error: attempt.signal.aborted ? (attempt.signal.reason as unknown) : error } };
  } finally {
    attempt.dispose();
  }
}
