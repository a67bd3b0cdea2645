/**
 * What counts as a credential where the journal would otherwise keep it: a query parameter, a
 * request header named in `journalHeaders`, a response header. Decided by rule, not by a list of
 * known names, since every API invents its own (`api_token`, `private_token`, `X-Amz-Credential`,
 * `passphrase`, …):
 *
 * | rule | matches |
 * |---|---|
 * | a word of the name contains token, secret, key, pass, pwd, credential, session, sessid, cookie, bearer, ticket, signature, verifier, or auth (not author/authority) | `access_token`, `apiKey`, `X-Amz-Signature`, `client_secret`, `PHPSESSID`, `x-auth-token`, `code_verifier` |
 * | a word of the name is sig, sid, pw, pin, otp, totp, hotp, mfa, 2fa, cvv, cvc, jwt, jws or hmac | `sig`, `jwt`, `otp`, `cvv` |
 * | the whole name is `code`: OAuth's authorization code (RFC 6749 §4.1.2), a bearer credential until redeemed | `code`, `Code` |
 * | a word is code, and another says what it proves (device, verification, confirm, reset, recovery, backup, login, magic, security, access, activation, sms…) | `device_code`, `verificationCode`, `mfa-code` |
 * | a value shaped like a JWT (`eyJ….….…`) | any name |
 *
 * A word is a run of letters and digits, split at camelCase humps (`apiKey` → `api`, `key`). The
 * rule errs on the side of refusing (`keyword`, `passenger`): a caller opts such a name in. A
 * `code` that names a category is no credential and stays allowed (`postcode`, `zip_code`,
 * `country_code`, `currency_code`, `promo_code`, `status_code`): only a bare `code`, or one
 * qualified as a proof, is refused. Nor is a `nonce` or a `state`: both are public by design
 * (OAuth signs over its nonce, and sends `state` back to the page that made it).
 *
 * @module
 * @internal
 */

const WITHIN = /token|secret|key|pass|pwd|credential|session|sessid|cookie|bearer|ticket|signature|verifier|auth(?!or(?!i[sz]))/;
const EXACT = /^(?:sig|sid|pw|pin|otp|totp|hotp|mfa|2fa|cvv2?|cvc2?|jwt|jws|hmac)$/;
/** Words that make a `code` a one-time proof of identity rather than a category. */
const PROOF = /^(?:device|verification|verify|confirmation|confirm|reset|recovery|backup|login|signin|magic|security|access|activation|sms|onetime)$/;
const JWT = /^eyJ[\w-]*\.[\w-]+\.[\w-]*$/;

/**
 * Whether a query parameter's or a header's name marks its value as a credential.
 *
 * @example
 * ```ts
 * isCredentialName('private_token'); // true
 * isCredentialName('X-Amz-Credential'); // true
 * isCredentialName('code'); // true: OAuth's authorization code
 * isCredentialName('country_code'); // false
 * isCredentialName('author'); // false
 * ```
 * @internal
 */
export function isCredentialName(name: string): boolean {
  // Its words: runs of letters and digits, split at camelCase humps (`apiKey` → api, key).
  const words = name
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((word) => word !== '');
  if (words.some((word) => EXACT.test(word) || WITHIN.test(word))) return true;
  // `code` alone is OAuth's authorization code; beside a category (`zip_code`) it is no secret.
  const code = words.findIndex((word) => word === 'code' || word === 'codes');
  return code !== -1 && (words.length === 1 || words.some((word) => PROOF.test(word)));
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
