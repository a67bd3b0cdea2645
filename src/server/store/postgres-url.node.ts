/**
 * What a PostgreSQL connection's settings say about the store's schema: the `options` of a libpq
 * URL (`?options=-c%20search_path%3Dpayments`) and of a `pg` pool, read once when a store opens.
 *
 * @module
 */
import type pg from 'pg';

/** The `options` parameter of a libpq URL (`?options=-c%20work_mem%3D64MB`), or `''`. */
export function urlOptions(connectionString: string | undefined): string {
  if (!connectionString) return '';
  try {
    return new URL(connectionString).searchParams.get('options') ?? '';
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
  const url = new URL(connectionString);
  url.searchParams.delete('options');
  return url.toString();
}
