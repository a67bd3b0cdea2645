/**
 * `oncely/server/testing`: the KeyStore contract suites, for the author of a key store to run
 * from their own test runner (vitest, an optional peer dependency of this entry only). The same
 * suites prove oncely's own stores (SQLite, PostgreSQL, and a minimal reference store) in its test
 * suite: admission (the 100-way race included), fencing, the points around a phase, hostile
 * values, the whole request in one transaction, park, sweep and reap. docs/key-store.md walks
 * through writing a store and running them.
 *
 * @module
 */
export { describeKeyStore, type KeyStoreSuite, type KeyStoreSuiteOptions } from './testing/describe-key-store.js';
