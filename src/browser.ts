/**
 * The browser entry: everything in `oncely`, with the IndexedDB journal as the default.
 *
 * @module
 */
export * from './index.js';
