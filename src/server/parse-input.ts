/**
 * A request body (received, or stored for the recovery worker) into an operation's input, with
 * the canonical JSON its fingerprint is computed from.
 *
 * @module
 */
import { canonicalJson, canonicalisesJson } from '../fingerprint.js';
import { jsonTextProblem } from './json-text.js';
import type { IdempotentOperation } from './types.js';

/** What {@link parseInput} gives: the input and the canonical form, or why the body is refused (a `400`). */
export type ParsedInput =
  { readonly ok: true; readonly input: unknown; readonly canonical: string | undefined } | { readonly ok: false; readonly detail: string };

/**
 * Parses `text` for `operation`; `contentType` decides whether the fingerprint canonicalises it.
 *
 * @example
 * ```ts
 * const parsed = parseInput(operation, '{"amount":5}', 'application/json');
 * ```
 */
export function parseInput(operation: IdempotentOperation<unknown>, text: string, contentType?: string | null): ParsedInput {
  // Refused before anything walks the value: a body no store could keep is a 400, never a 503.
  const refused = jsonTextProblem(text);
  if (refused !== undefined) return { ok: false, detail: refused };
  let json: unknown;
  try {
    json = text.length === 0 ? undefined : JSON.parse(text);
  } catch {
    return { ok: false, detail: 'the body is not valid JSON' };
  }
  // The fingerprint's canonical form is taken before the operation's parser sees the value: a
  // parser that fills in defaults must not change what the request hashes to.
  const canonical = json !== undefined && contentType !== undefined && canonicalisesJson(contentType) ? canonicalJson(json) : undefined;
  const parsed = operation.parse(json, text);
  return parsed.ok ? { ok: true, input: parsed.input, canonical } : parsed;
}

/** What the handler passes from admission to the cache. */
export interface Admission {
  readonly clientId: string;
  readonly key: string;
  readonly requestHash: string;
  readonly endpoint: string;
  readonly requestBody: string;
  /** See `CachedKey.request`; empty when there is no cache. */
  readonly identity: string;
}
