/**
 * `oncely/journal`: for the people who implement a journal of their own (or read one): the
 * `Journal` interface the client writes through, the records it keeps and their states, the
 * fingerprint every row is checked against before it is sent, and the errors a journal raises.
 * A caller never needs this entry: `oncely`, `oncely/node` and `oncely/browser` hold what a
 * caller calls. Nothing here imports Node-only code.
 *
 * @module
 */
export { DEFAULT_NAMESPACE, MAX_KEY_LENGTH } from './keys.js';
export { fingerprint, type FingerprintBody, type FingerprintOptions } from './fingerprint.js';
export {
  JOURNALED_HEADERS,
  OperationState,
  isExpired,
  scopeOf,
  type DamagedRecord,
  type Journal,
  type ListFilter,
  type NewOperation,
  type OperationPatch,
  type OperationRecord,
  type PutOutcome,
  type StoredResult,
} from './journal/types.js';
export type { LockRequester } from './journal/web-locks.js';
export { JournalError } from './errors.js';
