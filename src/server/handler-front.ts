/**
 * The reference handler's side of the pre-admission checks (`pre-admission.ts`): its request as a
 * web `Request` presents it, the body read under its cap, what the fingerprint is computed from,
 * and the admission the checks hand over to (`handler-run.ts`).
 *
 * A request identical to one known to match a finished key is its replay: no parsing (it parsed
 * before) and no hashing (it hashes the same). The identity compared is everything the
 * fingerprint is computed from, as one string.
 *
 * @module
 * @internal
 */
import { fingerprintInputParsed } from '../fingerprint.js';
import { replay } from './answers.js';
import { admitAndRun, type HandlerRun } from './handler-run.js';
import { parseInput } from './parse-input.js';
import { reportError } from './phases.js';
import { TOO_LARGE, type Fingerprinted, type Keyed, type KeyedFrontEnd } from './pre-admission.js';
import { readCappedBody } from './read-body.js';
import type { Answer } from './answers.js';
import type { RequestTrace } from './telemetry.js';
import type { IdempotentOperation } from './types.js';

/** One request to an operation of the handler, its caller authenticated. */
export interface HandlerRequest {
  readonly request: Request;
  readonly url: URL;
  readonly operation: IdempotentOperation<unknown>;
  readonly clientId: string | null;
  readonly trace: RequestTrace | undefined;
}

/** What the fingerprinting keeps for the admission. */
interface Parsed {
  readonly input: unknown;
  readonly endpoint: string;
  readonly text: string;
  readonly identity: string;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

async function readBody(request: HandlerRequest, maxBodyBytes: number): Promise<Uint8Array | typeof TOO_LARGE> {
  const body = await readCappedBody(request.request, maxBodyBytes);
  return body.ok ? body.bytes : TOO_LARGE;
}

/** The body decoded and parsed for the operation, and the bytes its fingerprint hashes (or the cached replay of an identical request). */
function fingerprint(cached: boolean, { request, url, operation }: HandlerRequest, bytes: Uint8Array, keyed: Keyed): Fingerprinted<Parsed> {
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    return { refused: 'the body is not UTF-8' };
  }
  const method = request.method.toUpperCase();
  const path = url.pathname + url.search;
  const contentType = request.headers.get('content-type');
  // Content type first: it decides whether the body is canonicalised, and a missing one differs from an empty one.
  const identity = cached ? `${method}\n${path}\n${contentType === null ? '-' : `+${contentType}`}\n${text}` : '';
  if (keyed.known && keyed.known.request === identity) return { answer: replay(keyed.known) };
  const parsed = parseInput(operation, text, contentType);
  if (!parsed.ok) return { refused: parsed.detail };
  // The decoded text, not the bytes: with no Content-Type the fingerprint then still
  // canonicalises a JSON body, exactly as the client's fingerprint() does.
  const bytesHashed = fingerprintInputParsed(method, path, text, contentType, parsed.canonical);
  return { bytes: bytesHashed, kept: { input: parsed.input, endpoint: `${method} ${url.pathname}`, text, identity } };
}

/**
 * The handler as the pre-admission checks see it; built once per handler.
 *
 * @example
 * ```ts
 * const answer = await checkThenAdmit(handlerFrontEnd(run), { request, url: new URL(request.url), operation, clientId, trace });
 * ```
 */
export function handlerFrontEnd(run: HandlerRun): KeyedFrontEnd<HandlerRequest, Uint8Array, Parsed, Answer> {
  const { config, cache } = run;
  const cached = cache !== undefined;
  return {
    maxBodyBytes: config.maxBodyBytes,
    cache,
    digest: config.digest,
    noCaller: 'send Authorization: Bearer <token>',
    caller: (request) => request.clientId,
    keyHeader: (request) => request.request.headers.get('idempotency-key'),
    body: (request) => readBody(request, config.maxBodyBytes),
    fingerprint: (request, bytes, keyed) => fingerprint(cached, request, bytes, keyed),
    admit(request, { clientId, key, echo }, requestHash, parsed) {
      const admission = { clientId, key, requestHash, endpoint: parsed.endpoint, requestBody: parsed.text, identity: parsed.identity };
      const prefer = request.request.headers.get('prefer');
      return admitAndRun(run, { operation: request.operation, input: parsed.input, admission, echo, prefer, trace: request.trace });
    },
    answer: (answer) => answer,
    report: (error, ref) => reportError(config.hooks, error, ref),
  };
}
