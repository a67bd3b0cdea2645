/**
 * The Node entry: everything in `oncely`, with the SQLite journal as the default.
 *
 * @module
 */
export * from './index.js';
