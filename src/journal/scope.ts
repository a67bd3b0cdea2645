/**
 * A record's scope (see `types.ts`): the origin of the client's `baseUrl`, plus its optional
 * `scope` name; what a scope's records may be sent to; what a scope name may hold.
 *
 * @module
 */

/**
 * The scope of a client: the origin of its `baseUrl`, plus `#name` when it was given a `scope`
 * name. Records of one scope are invisible to clients of another.
 *
 * @example
 * ```ts
 * scopeOf('https://api.example.com/v1/');             // 'https://api.example.com'
 * scopeOf('https://api.example.com', 'payroll');      // 'https://api.example.com#payroll'
 * ```
 */
export function scopeOf(baseUrl: string | URL, name?: string): string {
  const { origin } = typeof baseUrl === 'string' ? new URL(baseUrl) : baseUrl;
  return name === undefined ? origin : `${origin}#${name}`;
}

/**
 * The origin a scope's records may be sent to: the scope without its `#name` (an origin holds no
 * `#`). Keep in step with {@link scopeOf}.
 *
 * @example
 * ```ts
 * scopeOrigin('https://api.example.com#payroll'); // 'https://api.example.com'
 * ```
 */
export function scopeOrigin(scope: string): string {
  const hash = scope.indexOf('#');
  return hash === -1 ? scope : scope.slice(0, hash);
}

/** What a scope name may hold: an application's name, not a place for data. */
export const SCOPE_NAME = /^[A-Za-z0-9._~-]{1,64}$/;
