/**
 * Small response helpers shared by the reference app's routes.
 *
 * @module
 */
import { jsonTextProblem } from '../server/json-text.js';
import { readCappedBody } from '../server/read-body.js';
import { ProblemType, problem } from '../server/problems.js';

/**
 * A JSON response.
 *
 * @example
 * ```ts
 * return jsonResponse(200, { status: 'ok' });
 * ```
 */
export function jsonResponse(status: number, body: unknown, headers: Readonly<Record<string, string>> = {}): Response {
  return new Response(JSON.stringify(body), { status, headers: { ...headers, 'content-type': 'application/json' } });
}

/**
 * A `404` problem. Used for every "not yours or not there" answer, so a caller can never tell
 * another caller's payment, key or event from one that does not exist.
 *
 * @example
 * ```ts
 * return notFound('no such payment');
 * ```
 */
export function notFound(detail: string): Response {
  return new Response(JSON.stringify({ type: 'about:blank', title: 'Not Found', status: 404, detail }), {
    status: 404,
    headers: { 'content-type': 'application/problem+json' },
  });
}

/**
 * Reads a JSON body under a byte cap: the parsed value, or the `400`/`413` problem to answer.
 *
 * @example
 * ```ts
 * const body = await readJson(request, 65_536);
 * if (!body.ok) return body.response;
 * ```
 */
export async function readJson(
  request: Request,
  maxBytes: number,
): Promise<{ readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly response: Response }> {
  const body = await readCappedBody(request, maxBytes);
  if (!body.ok) return { ok: false, response: problem(ProblemType.TooLarge, `the body is larger than ${maxBytes} bytes`) };
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(body.bytes);
  } catch {
    return { ok: false, response: problem(ProblemType.InvalidRequest, 'the body is not UTF-8 JSON') };
  }
  // As for the idempotent operations: a body no store could keep is refused before it is walked.
  const refused = jsonTextProblem(text);
  if (refused !== undefined) return { ok: false, response: problem(ProblemType.InvalidRequest, refused) };
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false, response: problem(ProblemType.InvalidRequest, 'the body is not UTF-8 JSON') };
  }
}

/**
 * Decodes the last segment of a path after `prefix` (`/v1/payments/` → the id), or `undefined`
 * when it is empty or badly percent-encoded.
 *
 * @example
 * ```ts
 * pathParam('/v1/idempotency-keys/a%2Fb', '/v1/idempotency-keys/'); // 'a/b'
 * ```
 */
export function pathParam(pathname: string, prefix: string): string | undefined {
  const raw = pathname.slice(prefix.length);
  if (raw === '') return undefined;
  try {
    return decodeURIComponent(raw);
  } catch {
    return undefined;
  }
}
