/**
 * RFC 9457 problem details (`application/problem+json`) with the stable problem types of
 * PROTOCOL.md, so a client can branch on `type` instead of parsing prose.
 *
 * @module
 */

/**
 * Base URI of every oncely problem type.
 *
 * @example
 * ```ts
 * body.type === `${PROBLEM_BASE}key-reused`; // the client reused a key for another request
 * ```
 */
export const PROBLEM_BASE = 'https://oncely.dev/problems/';

/**
 * The problem types PROTOCOL.md names, with their status and title.
 *
 * @example
 * ```ts
 * problem(ProblemType.TooLarge, 'the body is larger than 65536 bytes'); // a 413 response
 * ```
 */
export const ProblemType = {
  KeyInFlight: { slug: 'key-in-flight', status: 409, title: 'A request with this key is in flight' },
  KeyReused: { slug: 'key-reused', status: 422, title: 'The key was used for a different request' },
  InvalidKey: { slug: 'invalid-key', status: 400, title: 'Missing or invalid Idempotency-Key' },
  InvalidRequest: { slug: 'invalid-request', status: 400, title: 'Invalid request' },
  OutcomeUnknown: { slug: 'outcome-unknown', status: 202, title: 'The outcome is not known yet' },
  UpstreamUnavailable: { slug: 'upstream-unavailable', status: 503, title: 'Temporarily unavailable' },
  Declined: { slug: 'declined', status: 402, title: 'Declined' },
  Unauthorized: { slug: 'unauthorized', status: 401, title: 'Missing or unknown credentials' },
  TooLarge: { slug: 'too-large', status: 413, title: 'Request body too large' },
} as const;

/** One of {@link ProblemType}'s values. */
export type ProblemType = (typeof ProblemType)[keyof typeof ProblemType];

/** The JSON body of a problem response. */
export interface ProblemBody {
  readonly type: string;
  readonly title: string;
  readonly status: number;
  readonly detail: string;
}

/**
 * The problem body for `type`, as a stored-response-ready JSON text and object.
 *
 * @example
 * ```ts
 * problemBody(ProblemType.Declined, 'amount above the rail limit').type;
 * // 'https://oncely.dev/problems/declined'
 * ```
 */
export function problemBody(type: ProblemType, detail: string): ProblemBody {
  return { type: `${PROBLEM_BASE}${type.slug}`, title: type.title, status: type.status, detail };
}

/**
 * A `Response` carrying an RFC 9457 problem.
 *
 * @param headers extra headers (`Retry-After`, `Idempotency-Key`, `WWW-Authenticate`)
 *
 * @example
 * ```ts
 * return problem(ProblemType.KeyInFlight, 'retry later', { 'retry-after': '3' });
 * ```
 */
export function problem(type: ProblemType, detail: string, headers: Readonly<Record<string, string>> = {}): Response {
  return new Response(JSON.stringify(problemBody(type, detail)), {
    status: type.status,
    headers: { ...headers, 'content-type': 'application/problem+json' },
  });
}
