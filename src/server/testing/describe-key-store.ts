/**
 * {@link describeKeyStore}: every KeyStore contract suite against one store factory.
 *
 * @module
 */
import type { KeyStore } from '../store/types.js';
import { runKeyStoreChainedContract } from './keystore-chained.js';
import { runKeyStoreContract } from './keystore-core.js';
import { runLifecycleContract, type LifecycleMember } from './keystore-lifecycle.js';
import { runKeyStoreValuesContract } from './keystore-values.js';
import { runWholeRequestContract } from './keystore-whole.js';

/** One of the contract's suites. */
export type KeyStoreSuite = 'core' | 'values' | 'chained' | 'whole' | 'lifecycle';

/** Options of {@link describeKeyStore}. */
export interface KeyStoreSuiteOptions {
  /**
   * The suites to register.
   * @default every one: ['core', 'values', 'chained', 'whole', 'lifecycle']
   */
  readonly suites?: readonly KeyStoreSuite[];
  /**
   * The optional members your store leaves out (`sweep`, `reap`): their tests are not registered,
   * and one test checks the store indeed lacks them. Any other optional member is tested through
   * the core's fallback when absent (`beginRequest`) or not at all (`migrate`, `watch`, `close`).
   * @default []
   */
  readonly without?: readonly ('sweep' | 'reap')[];
  /**
   * Whether the store bounds an admission's wait for a whole request still open by
   * `AdmitInput.waitMs` (answering `{ owned: false, row: null }` past it). A store whose
   * admissions queue in process (SQLite, PGlite) may not.
   * @default false
   */
  readonly boundsWait?: boolean;
}

const ALL: readonly KeyStoreSuite[] = ['core', 'values', 'chained', 'whole', 'lifecycle'];

/**
 * Registers the KeyStore contract suites (vitest `describe` blocks) against `factory`, which
 * returns a fresh store on a database the suites may write to: each test migrates it with a table
 * of its own (`migrate({ [store.dialect]: 'CREATE TABLE IF NOT EXISTS …' })`, in SQL every dialect
 * accepts), works under a client id of its own (so many tests may share one database), and closes
 * it afterwards. The application statements use `$1, $2, …` placeholders, as `Tx` promises.
 *
 * @example
 * ```ts
 * // my-store.test.ts, run by vitest: here on oncely's own SQLite store, in memory
 * import { sqliteKeyStore } from 'oncely/server/sqlite';
 * import { describeKeyStore } from 'oncely/server/testing';
 *
 * describeKeyStore('sqlite in memory', async () => sqliteKeyStore({ path: ':memory:' }), { suites: ['core', 'lifecycle'] });
 * ```
 */
export function describeKeyStore(name: string, factory: () => Promise<KeyStore>, options: KeyStoreSuiteOptions = {}): void {
  const suites = options.suites ?? ALL;
  if (suites.includes('core')) runKeyStoreContract(name, factory);
  if (suites.includes('values')) runKeyStoreValuesContract(name, factory);
  if (suites.includes('chained')) runKeyStoreChainedContract(name, factory);
  if (suites.includes('whole')) runWholeRequestContract(name, factory, { boundsWait: options.boundsWait ?? false });
  if (suites.includes('lifecycle')) runLifecycleContract(name, factory, (options.without ?? []) as readonly LifecycleMember[]);
}
