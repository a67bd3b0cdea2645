/**
 * What counts as a credential where the journal would otherwise keep it: a query parameter, a
 * request header named in `journalHeaders`, a response header. Decided by rule, not by a list of
 * known names, since every API invents its own (`api_token`, `private_token`, `X-Amz-Credential`,
 * `passphrase`, …):
 *
 * | rule | matches |
 * |---|---|
 * | a word of the name contains token, secret, key, pass, pwd, credential, session, sessid, cookie, bearer, ticket, signature, or auth (not author/authority) | `access_token`, `apiKey`, `X-Amz-Signature`, `client_secret`, `PHPSESSID`, `x-auth-token` |
 * | a word of the name is sig, sid, pw, pin, otp, jwt, jws or hmac | `sig`, `jwt`, `otp` |
 * | a value shaped like a JWT (`eyJ….….…`) | any name |
 *
 * A word is a run of letters and digits, split at camelCase humps (`apiKey` → `api`, `key`). The
 * rule errs on the side of refusing (`keyword`, `passenger`): a caller opts such a name in.
 *
 * @module
 * @internal
 */

const WITHIN = /token|secret|key|pass|pwd|credential|session|sessid|cookie|bearer|ticket|signature|auth(?!or(?!i[sz]))/;
const EXACT = /^(?:sig|sid|pw|pin|otp|jwt|jws|hmac)$/;
const JWT = /^eyJ[\w-]*\.[\w-]+\.[\w-]*$/;

/**
 * Whether a query parameter's or a header's name marks its value as a credential.
 *
 * @example
 * ```ts
 * isCredentialName('private_token'); // true
 * isCredentialName('X-Amz-Credential'); // true
 * isCredentialName('author'); // false
 * ```
 * @internal
 */
export function isCredentialName(name: string): boolean {
  // Its words: runs of letters and digits, split at camelCase humps (`apiKey` → api, key).
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .some((word) => EXACT.test(word) || WITHIN.test(word));
}

/**
 * Whether a value has the shape of a bearer credential whatever its name (a JWT).
 *
 * @example
 * ```ts
 * isCredentialValue('eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig'); // true
 * ```
 * @internal
 */
export function isCredentialValue(value: string): boolean {
  return JWT.test(value.trim());
}

/**
 * The response headers a settled operation's journaled result keeps: what a caller reads back
 * from a result answered by the journal (its type, where the resource is, its version, the
 * replay marker, the server's request id). Every other response header is dropped, whatever its
 * name: a server may echo a request's token, or answer with a session. A `location` is kept only
 * when its query holds no credential ({@link queryCredential}): a signed URL is one.
 *
 * @internal
 */
export const JOURNALED_RESPONSE_HEADERS: ReadonlySet<string> = new Set(
  'content-type content-language content-location location etag last-modified date retry-after idempotency-key idempotency-replay idempotent-replayed request-id x-request-id'.split(
    ' ',
  ),
);

/**
 * The first query parameter of `url` that holds a credential by name or by value, or
 * `undefined`; `allowed` names (lower-case) are the caller's opt-ins.
 *
 * @example
 * ```ts
 * queryCredential(new URL('https://x.test/pay?api_token=1'), new Set()); // 'api_token'
 * ```
 * @internal
 */
export function queryCredential(url: URL, allowed: ReadonlySet<string>): string | undefined {
  for (const [name, value] of url.searchParams) {
    if (allowed.has(name.toLowerCase())) continue;
    if (isCredentialName(name) || isCredentialValue(value)) return name;
  }
  return undefined;
}

/**
 * `headers` cut to {@link JOURNALED_RESPONSE_HEADERS} (names in lower case, as results hold them).
 *
 * @internal
 */
export function journaledResponseHeaders(headers: Readonly<Record<string, string>>): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (!JOURNALED_RESPONSE_HEADERS.has(name)) continue;
    if ((name === 'location' || name === 'content-location') && !isPlainLocation(value)) continue;
    kept[name] = value;
  }
  return kept;
}

function isPlainLocation(value: string): boolean {
  if (!URL.canParse(value, 'http://relative.invalid')) return false;
  const url = new URL(value, 'http://relative.invalid');
  return url.username === '' && url.password === '' && queryCredential(url, new Set()) === undefined;
}
