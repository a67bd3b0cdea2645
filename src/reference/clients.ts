/**
 * Caller identity: `Authorization: Bearer <token>` → `client_id` (PROTOCOL.md, "Identity and keys").
 *
 * @module
 */
import { ErrorCode, OncelyError } from '../errors.js';

/** The demo callers a server starts with when no clients file is given. */
export const DEMO_CLIENTS: Readonly<Record<string, string>> = Object.freeze({
  test_acme: 'acme',
  test_globex: 'globex',
});

/**
 * A client id: 1–64 characters from `A-Z a-z 0-9 _ - . : @`, so URN-style account ids
 * (`org:acme`) work. What the server builds from a client id and a key (derived keys, payloads,
 * cache entries) length-prefixes both, so no character of a client id can reach another caller.
 * Printable ASCII without whitespace keeps logs and the clients file unambiguous to read.
 */
const CLIENT_ID_PATTERN = /^[A-Za-z0-9_.:@-]{1,64}$/;

/**
 * Thrown for a token map that cannot be used; the message names the bad entry.
 *
 * @example
 * ```ts
 * parseClients({ tok: 'a b' }); // throws InvalidClientsError: client id "a b" ... must be ...
 * ```
 */
export class InvalidClientsError extends OncelyError {
  override name = 'InvalidClientsError';

  constructor(message: string) {
    super(ErrorCode.Config, message);
  }
}

/** Resolves bearer tokens to client ids. */
export interface Clients {
  /** The client id of an `Authorization` header value, or `undefined` for a missing/unknown token. */
  authenticate(authorization: string | null): string | undefined;
  /** The distinct client ids, for the startup log. */
  readonly ids: readonly string[];
  /** Whether these are the built-in demo callers. */
  readonly demo: boolean;
}

/**
 * Validates a token map (e.g. the parsed JSON of `--clients FILE`): every token a non-empty
 * string without whitespace, every client id matching `[A-Za-z0-9_-]{1,64}`.
 *
 * @throws InvalidClientsError naming the first bad entry
 * @example
 * ```ts
 * parseClients(JSON.parse('{"tok_1": "acme"}')); // { tok_1: 'acme' }
 * ```
 */
export function parseClients(value: unknown): Record<string, string> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new InvalidClientsError('the clients file must hold a JSON object {"<token>": "<client_id>", ...}');
  }
  const map: Record<string, string> = {};
  for (const [token, clientId] of Object.entries(value)) {
    if (token === '' || /\s/.test(token)) {
      throw new InvalidClientsError(`token ${JSON.stringify(token)} must be non-empty and contain no whitespace`);
    }
    if (typeof clientId !== 'string' || !CLIENT_ID_PATTERN.test(clientId)) {
      throw new InvalidClientsError(
        `client id ${JSON.stringify(clientId)} for token ${JSON.stringify(token)} must be 1-64 characters from A-Z a-z 0-9 _ - . : @`,
      );
    }
    map[token] = clientId;
  }
  if (Object.keys(map).length === 0) throw new InvalidClientsError('the clients file names no callers');
  return map;
}

/**
 * Creates the token resolver. Without a map, the demo callers of {@link DEMO_CLIENTS} are used.
 *
 * @example
 * ```ts
 * const clients = createClients();
 * clients.authenticate('Bearer test_acme'); // 'acme'
 * clients.authenticate('Bearer nope');      // undefined
 * ```
 */
export function createClients(tokens?: Readonly<Record<string, string>>): Clients {
  const map = new Map(Object.entries(parseClients(tokens ?? DEMO_CLIENTS)));
  return {
    authenticate(authorization) {
      const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
      return match?.[1] === undefined ? undefined : map.get(match[1]);
    },
    ids: [...new Set(map.values())],
    demo: tokens === undefined,
  };
}
