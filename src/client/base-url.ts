/**
 * The client's `baseUrl` resolved into where its requests go: the base, its origin and the
 * client's scope.
 *
 * When is it resolved?
 *
 * | `baseUrl`                       | a `location` here (page, worker) | no `location` (Node, a server render) |
 * |---------------------------------|----------------------------------|---------------------------------------|
 * | absolute (`https://api.shop/`)  | at `createClient`                | at `createClient`                     |
 * | relative (`/api`, `//api.shop`) | at `createClient`, on the page   | at first use, on the `location` then  |
 *
 * A relative base is not resolved at creation where there is no page, because a module that
 * creates a client at its top level is evaluated there too: Next.js renders client components on
 * the server. Such a client costs nothing until it is used; used there, it fails with an error
 * that says why. A malformed or non-http(s) base fails `createClient` in every case.
 *
 * @module
 * @internal
 */
import { ErrorCode, OncelyError } from '../errors.js';
import { scopeOf } from '../journal/scope.js';

/** Where a client's requests go. @internal */
export interface ClientTarget {
  /** The base, absolute, ending in `/`, without query or fragment. */
  readonly baseUrl: string;
  /** The origin of `baseUrl`: the only place requests go. */
  readonly origin: string;
  /** See `scopeOf` (../journal/scope.ts). */
  readonly scope: string;
}

/**
 * The client's target; `doing` names the call that needs it (`POST "v1/payments"`, `resume()`)
 * for the error a relative base with no page to resolve against throws.
 *
 * @internal
 */
export type TargetOf = (doing: string) => ClientTarget;

// Only the syntax of a relative base can be checked without a page: against an origin of none.
const NO_ORIGIN = 'http://relative.invalid/';

function parse(baseUrl: string, page: string | undefined): URL {
  try {
    return new URL(baseUrl, page);
  } catch (cause) {
    throw new OncelyError(ErrorCode.Config, `createClient: baseUrl ${JSON.stringify(baseUrl)} is not an absolute URL`, { cause });
  }
}

function targetOf(baseUrl: string, page: string | undefined, scope: string | undefined): ClientTarget {
  const base = parse(baseUrl, page);
  // A base path is kept: 'v1/payments' under 'http://host/api' is 'http://host/api/v1/payments'.
  if (!base.pathname.endsWith('/')) base.pathname = `${base.pathname}/`;
  base.search = '';
  base.hash = '';
  if (base.protocol !== 'http:' && base.protocol !== 'https:') {
    throw new OncelyError(ErrorCode.Config, `createClient: baseUrl ${JSON.stringify(baseUrl)} is not an http(s) URL`);
  }
  if (base.username !== '' || base.password !== '') {
    throw new OncelyError(
      ErrorCode.Config,
      'createClient: baseUrl holds a user name or password; fetch refuses such URLs and the journal would keep them. Send credentials as a header',
    );
  }
  return { baseUrl: base.href, origin: base.origin, scope: scopeOf(base, scope) };
}

/** The page's URL, if this platform has one (a page or a worker has `location`; Node has none). */
const pageHref = (): string | undefined => globalThis.location?.href;

/**
 * Resolves `baseUrl` now where it can be (see the table above), else checks its syntax now and
 * resolves it at the first call that needs it, once.
 *
 * @internal
 */
export function resolveTarget(baseUrl: string, scope: string | undefined): TargetOf {
  const page = pageHref();
  const now = page !== undefined || URL.canParse(baseUrl);
  let resolved = targetOf(baseUrl, now ? page : NO_ORIGIN, scope);
  let found = now;
  return (doing) => {
    if (found) return resolved;
    const later = pageHref();
    if (later === undefined) {
      const why = 'is relative, and there is no page here to resolve it against (a server render?): use the client in the browser, or give it an absolute URL';
      throw new OncelyError(ErrorCode.Config, `${doing}: baseUrl ${JSON.stringify(baseUrl)} ${why}. Nothing was sent`);
    }
    resolved = targetOf(baseUrl, later, scope);
    found = true;
    return resolved;
  };
}
