/**
 * The app's DDL for one dialect, out of an {@link AppSchema} keyed by dialect.
 *
 * @module
 */
import { InvalidOptionError } from '../errors/invalid-option-error.js';
import type { AppSchema } from './records.js';

/**
 * The script of `dialect` in `app`; throws when the app wrote none for it (its tables would be
 * missing, and its steps' SQL unwritten for this store).
 *
 * @example
 * ```ts
 * db.exec(schemaFor('sqliteKeyStore', 'sqlite', app));
 * ```
 */
export function schemaFor(store: string, dialect: string, app: AppSchema): string {
  const script = Object.hasOwn(app, dialect) ? app[dialect] : undefined;
  if (typeof script !== 'string')
    throw new InvalidOptionError(`${store}.migrate`, 'app', `has no '${dialect}' script (it has: ${Object.keys(app).join(', ') || 'none'})`);
  return script;
}
