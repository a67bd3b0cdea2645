/**
 * The handler's answers: stored responses and replays, and the problem responses of PROTOCOL.md's
 * matrix (422, 409, 202, 503), each with the key echoed.
 *
 * @module
 */
import type { RequestOutcome } from './metrics.js';
import type { StepsOutcome } from './phases.js';
import { ProblemType, problem } from './problems.js';
import type { CachedKey } from './replay-cache.js';
import type { StoredResponse } from './store/types.js';

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

export function stored(response: StoredResponse, extra: Readonly<Record<string, string>>): Response {
  return new Response(replayBody(response), { status: response.status, headers: replayHeaders(response, extra) });
}

export function mismatch(endpoint: string, echo: Readonly<Record<string, string>>): [RequestOutcome, Response] {
  return ['mismatch', problem(ProblemType.KeyReused, `this Idempotency-Key was used for a different request (${endpoint})`, echo)];
}

/** A cached finished key's replay: its headers (key echo and `idempotency-replay` included) were built once. */
export function replayFromCache(known: CachedKey): [RequestOutcome, Response] {
  return ['replayed', new Response(replayBody(known.response), { status: known.response.status, headers: known.replayHeaders })];
}

export function inFlight(remainingMs: number, echo: Readonly<Record<string, string>>): [RequestOutcome, Response] {
  return ['in_flight', problem(ProblemType.KeyInFlight, 'a request with this key is being processed', { ...echo, 'retry-after': seconds(remainingMs) })];
}

export function respond(outcome: StepsOutcome, echo: Readonly<Record<string, string>>): [RequestOutcome, Response] {
  switch (outcome.kind) {
    case 'finished':
      return ['executed', stored(outcome.response, echo)];
    case 'pending':
      return ['pending', problem(ProblemType.OutcomeUnknown, 'the outcome is not known yet; retry with the same key', { ...echo, 'retry-after': seconds(outcome.retryAfterMs) })];
    case 'transient':
      return ['transient', problem(ProblemType.UpstreamUnavailable, 'a dependency is unavailable; retry with the same key', { ...echo, 'retry-after': seconds(outcome.retryAfterMs) })];
    case 'lost':
      return inFlight(1000, echo);
  }
}
