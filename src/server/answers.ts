/**
 * The one answer type of both server front ends (the reference handler and the framework
 * middleware): what PROTOCOL.md's matrix says to send — stored responses and replays, and the
 * problem responses (422, 409, 202, 503, 400, 401, 413) — with the key echoed, as plain data. Each
 * edge converts it once: {@link toResponse} for the web `Response` the handler returns, the
 * framework's own reply for the middleware.
 *
 * @module
 */
import type { RequestOutcome } from './metrics.js';
import type { StepsOutcome } from './phases.js';
import { ProblemType, problemBody } from './problems.js';
import type { CachedKey } from './replay-cache.js';
import type { StoredResponse } from './store/types.js';

/** A response on its way to the client: lower-case header names, the body as written. */
export interface WireResponse {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string | Uint8Array | null;
}

/** What a front end sends for a keyed request, and how the metrics count it. */
export interface Answer extends WireResponse {
  readonly outcome: RequestOutcome;
}

/** `Retry-After` seconds: rounded up, at least 1. */
export const seconds = (ms: number): string => String(Math.max(1, Math.ceil(ms / 1000)));

/** Fetch forbids a body on 204/205/304; everything else is replayed byte for byte. */
export function replayBody(response: StoredResponse): string | null {
  const status = response.status;
  return status === 204 || status === 205 || status === 304 ? null : response.body;
}

/**
 * A plain object with lower-cased names: a stored header differing from an extra one only in
 * case is replaced, not doubled, and @hono/node-server writes a plain object straight to the
 * socket where a Headers instance would first be copied into one.
 */
export function replayHeaders(response: StoredResponse, extra: Readonly<Record<string, string>>): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const name in response.headers) headers[name.toLowerCase()] = response.headers[name]!;
  for (const name in extra) headers[name.toLowerCase()] = extra[name]!;
  return headers;
}

/** A problem document answer (RFC 9457) of `type`, counted as `outcome`. */
export function problemAnswer(outcome: RequestOutcome, type: ProblemType, detail: string, headers: Readonly<Record<string, string>> = {}): Answer {
  return { outcome, status: type.status, headers: { ...headers, 'content-type': 'application/problem+json' }, body: JSON.stringify(problemBody(type, detail)) };
}

/** A finished key's replay: its headers (key echo and `idempotency-replay` included) were built once. */
export function replay(known: Pick<CachedKey, 'response' | 'replayHeaders'>): Answer {
  return { outcome: 'replayed', status: known.response.status, headers: known.replayHeaders, body: replayBody(known.response) };
}

export function mismatch(endpoint: string, echo: Readonly<Record<string, string>>): Answer {
  return problemAnswer('mismatch', ProblemType.KeyReused, `this Idempotency-Key was used for a different request (${endpoint})`, echo);
}

export function inFlight(retryAfterMs: number, echo: Readonly<Record<string, string>>): Answer {
  return problemAnswer('in_flight', ProblemType.KeyInFlight, 'a request with this key is being processed', { ...echo, 'retry-after': seconds(retryAfterMs) });
}

/** The key store failed: fail closed, nothing ran that was not recorded. */
export function storeUnavailable(echo: Readonly<Record<string, string>>): Answer {
  return problemAnswer('transient', ProblemType.UpstreamUnavailable, 'the key store is unavailable', { ...echo, 'retry-after': '1' });
}

/** What the phase runner's outcome is sent as. */
export function respond(outcome: StepsOutcome, echo: Readonly<Record<string, string>>): Answer {
  switch (outcome.kind) {
    case 'finished':
      return { outcome: 'executed', status: outcome.response.status, headers: replayHeaders(outcome.response, echo), body: replayBody(outcome.response) };
    case 'pending':
      return problemAnswer('pending', ProblemType.OutcomeUnknown, 'the outcome is not known yet; retry with the same key', {
        ...echo,
        'retry-after': seconds(outcome.retryAfterMs),
      });
    case 'transient':
      return problemAnswer('transient', ProblemType.UpstreamUnavailable, 'a dependency is unavailable; retry with the same key', {
        ...echo,
        'retry-after': seconds(outcome.retryAfterMs),
      });
    case 'lost':
      return inFlight(1000, echo);
  }
}

/** The web `Response` of an answer (the reference handler's edge). */
export function toResponse(answer: WireResponse): Response {
  const { body } = answer;
  // The handler's answers are text; bytes (a framework's body) are copied onto an ArrayBuffer.
  return new Response(typeof body === 'string' || body === null ? body : new Uint8Array(body), { status: answer.status, headers: answer.headers });
}
