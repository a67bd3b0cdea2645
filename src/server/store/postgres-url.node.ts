/**
 * What a PostgreSQL URL says, read once when a store opens: the `options` of a libpq URL
 * (`?options=-c%20search_path%3Dpayments`) and of a `pg` pool (the store's schema), and the host
 * list of a libpq multi-host URL (`postgres://u@db1:5432,db2:5432/payments`), which the pure-JS
 * `pg` driver does not understand (its URL parser throws on it): the store tries those hosts in
 * order itself (`postgres-hosts.node.ts`) and hands `pg` a one-host URL at a time.
 *
 * @module
 */
import type pg from 'pg';
import { InvalidOptionError } from '../errors/invalid-option-error.js';

/** One server of a multi-host URL. */
export interface PgHost {
  readonly host: string;
  readonly port: number;
}

/** `scheme://userinfo@` · the host list · the rest (`/db?…`), of a URL with an authority. */
const AUTHORITY = /^(postgres(?:ql)?:\/\/(?:[^@/?#]*@)?)([^/?#]*)(.*)$/s;

/**
 * The hosts of a libpq URL, in order: `postgres://u@db1:5433,db2/payments` → db1:5433, db2:5432.
 * A URL with one host (or none: a socket in `?host=`) gives one entry or none.
 *
 * @example
 * ```ts
 * hostsFromUrl('postgres://oncely@10.0.0.1:5432,10.0.0.2:5432/payments'); // two hosts
 * ```
 */
export function hostsFromUrl(connectionString: string | undefined): PgHost[] {
  const list = AUTHORITY.exec(connectionString ?? '')?.[2];
  if (!list) return [];
  return list.split(',').map((entry) => {
    // `[::1]:5432`, `host:5432`, `host`
    const match = /^(\[[^\]]*\]|[^:]*)(?::(\d*))?$/.exec(entry);
    const host = match?.[1];
    if (!host || (match[2] !== undefined && !/^\d{1,5}$/.test(match[2]))) {
      throw new InvalidOptionError('postgresKeyStore', 'connectionString', `has an invalid host ${JSON.stringify(entry)} in its host list`);
    }
    return { host: host.replace(/^\[(.*)\]$/, '$1'), port: match[2] ? Number(match[2]) : 5432 };
  });
}

/**
 * `connectionString` with its host list replaced by `host` alone (user, password, database and
 * parameters kept): what `pg` can parse.
 *
 * @example
 * ```ts
 * urlForHost('postgres://u@db1,db2:5433/p', { host: 'db2', port: 5433 }); // 'postgres://u@db2:5433/p'
 * ```
 */
export function urlForHost(connectionString: string, { host, port }: PgHost): string {
  const match = AUTHORITY.exec(connectionString);
  if (!match) throw new InvalidOptionError('postgresKeyStore', 'connectionString', 'is not a postgres:// URL');
  return `${match[1]}${host.includes(':') ? `[${host}]` : host}:${port}${match[3]}`;
}

/** A URL `new URL` can read: a multi-host URL's first host stands for the list. */
function parsable(connectionString: string): string {
  const hosts = hostsFromUrl(connectionString);
  return hosts.length > 1 ? urlForHost(connectionString, hosts[0]!) : connectionString;
}

/** The `options` parameter of a libpq URL (`?options=-c%20work_mem%3D64MB`), or `''`. */
export function urlOptions(connectionString: string | undefined): string {
  if (!connectionString) return '';
  try {
    return new URL(parsable(connectionString)).searchParams.get('options') ?? '';
  } catch {
    return '';
  }
}

/**
 * The schema a URL's options put first on the search path (`-c search_path=payments,public`), so
 * `--db 'postgres://…?options=-csearch_path%3Dpayments'` works like `--pg-schema payments`.
 */
export function schemaFromUrl(connectionString: string | undefined): string | undefined {
  return schemaFromOptions(urlOptions(connectionString));
}

/** The schema a libpq `options` setting (`-c search_path=payments,public`) puts first, if any. */
export function schemaFromOptions(options: string | undefined): string | undefined {
  return /(?:^|\s)-c\s*search_path\s*=\s*"?([a-z_][a-z0-9_]*)/.exec(options ?? '')?.[1];
}

/**
 * The schema a pool passed in looks in first, as the app's own unqualified statements see it: from
 * its URL's `?options=` when it has some (`pg` then ignores the `options` setting), else from that.
 */
export function schemaFromPool(pool: pg.Pool | undefined): string | undefined {
  const config = (pool as { options?: { connectionString?: string; options?: string } } | undefined)?.options;
  return config === undefined ? undefined : schemaFromOptions(urlOptions(config.connectionString) || config.options);
}

/** `connectionString` without its `options` parameter (the runner passes them on its own). */
export function withoutOptions(connectionString: string | undefined): string | undefined {
  if (!connectionString || !urlOptions(connectionString)) return connectionString;
  const match = AUTHORITY.exec(connectionString)!;
  // Only the query changes, so a host list survives (`new URL` cannot hold one).
  const url = new URL(`postgres://h${match[3]}`);
  url.searchParams.delete('options');
  return `${match[1]}${match[2]}${url.toString().slice('postgres://h'.length)}`;
}
