/**
 * A journal row's seal: a digest over every field of the record the journal and the client act
 * on that the fingerprint does not already cover, written with the row and checked whenever it is
 * read back, so that a row changed outside oncely is reported damaged instead of acted on.
 *
 * Why: the fingerprint (`integrity.ts`) ties the method, the URL's path and query and the body
 * together, but the client also trusts the row's key (the body is sent under it), its scope (whose
 * credentials send it), its state and outcome (a settled or declined operation is never sent
 * again; `replacesRefused` gives a refused key to another request), `submittedAt` (only submitted
 * operations are resumed), `createdAt` (an expired operation is never resent) and its headers.
 * A key changed by hand would send a body under a key that was never journaled; a `402` set back
 * to pending would be paid again. The seal covers exactly those fields, and the fingerprint itself,
 * which ties in what it covers:
 *
 * | sealed                                            | not sealed, and why                                  |
 * |---------------------------------------------------|------------------------------------------------------|
 * | scope, key, fingerprint, headers                  | method, URL, body: the fingerprint covers them, and  |
 * | state, createdAt, updatedAt, submittedAt          | the client's check names what changed                |
 * | attempts, lastStatus                              | claims (owner, expiry, process): rewritten by every  |
 * | result: status, headers, body, replayed           | claim; they say who may send, not what is sent.      |
 * |                                                   | Insertion order (`seq`, `rowid`): ordering only      |
 *
 * `updatedAt` is sealed although only `prune()` reads it: deleting a settled row is acting on it,
 * and it costs nothing to hash.
 *
 * The digest is computed synchronously, inside a SQLite transaction and inside an IndexedDB
 * transaction callback (awaiting WebCrypto there would let the transaction commit), over a JSON
 * array of the fields in a fixed order. JSON quotes every string, so no field can spill into its
 * neighbour; every object's keys are sorted, so the seal does not depend on the order a backend
 * keeps them in. The request body is not hashed again (the fingerprint stands for it); a settled
 * row's stored response is, as the client capped it. Each journal passes its digest
 * ({@link sealer}): the SQLite journal `node:crypto`'s SHA-256 (`seal.node.ts`); the IndexedDB
 * journal {@link portableSeal}, a UUIDv5 (SHA-1 truncated to 122 bits) from the `uuid` package, the
 * one synchronous digest a browser has without another dependency, about twice as slow in Node
 * through `uuid`'s wrapping: that matters on `post()`'s path (three seals per operation: its row,
 * the outcome's read-back and its write).
 *
 * Limits, on purpose, as for the fingerprint: the seal is keyless and kept in the row, so whoever
 * edits a row deliberately can compute a matching seal, and a whole row put back as an earlier
 * version of itself (a restored backup) carries its earlier, valid seal. It catches a disk's
 * damage, a bug and an edit by hand; not a forger who may write the journal.
 *
 * @module
 * @internal
 */
import { v5 as uuidv5 } from 'uuid';
import { journaledHeaderDamage } from './integrity.js';
import type { OperationRecord } from './types.js';

/**
 * The first field of every seal's text: names what it is (no derived key's input starts so), and
 * is bumped when the sealed fields change, so that an old seal never passes for a new layout.
 */
const SEAL_LAYOUT = 'oncely-journal-seal-1';

/** Why a row whose seal does not match is damaged, when nothing more specific can be said. */
export const SEAL_MISMATCH = 'its key, scope, state, outcome or timestamps were changed outside oncely';

// Every object's keys sorted (header maps, the stored response), so that the same value always
// encodes alike, whatever order a backend kept its keys in; arrays and scalars as they are.
const sorted = (_name: string, value: unknown): unknown =>
  typeof value === 'object' && value !== null && !Array.isArray(value) ? Object.fromEntries(Object.entries(value).sort()) : value;

/** A synchronous digest of a seal's text. */
export type SealDigest = (text: string) => string;

/** The seal functions of one digest. */
export interface Sealer {
  /**
   * The seal of `record`: written with the row, and compared with the seal of the record read
   * back. Robust to any value a damaged row may hold (it never throws on a wrong type).
   */
  sealOf(record: OperationRecord): string;
  /**
   * Why a row read back with `seal` must not be acted on, or `undefined` when `record` is what was
   * sealed. A mismatch is named by the more specific problem when one is plain to see (a
   * credential among the headers), otherwise by {@link SEAL_MISMATCH}.
   */
  sealDamage(record: OperationRecord, seal: unknown): string | undefined;
}

/** The text a seal is the digest of (see the module comment); never throws on a damaged row's values. */
function sealText(record: OperationRecord): string {
  const { scope, key, fingerprint, headers, state, createdAt, updatedAt, submittedAt, attempts, lastStatus, result } = record;
  return JSON.stringify([SEAL_LAYOUT, scope, key, fingerprint, headers, state, createdAt, updatedAt, submittedAt, attempts, lastStatus, result], sorted);
}

/**
 * The seal functions of `digest`. A journal keeps one digest for all its rows: seals of another
 * digest read as mismatches.
 *
 * @example
 * ```ts
 * const { sealOf, sealDamage } = sealer((text) => createHash('sha256').update(text).digest('base64url'));
 * const row = { record, seal: sealOf(record) };
 * sealDamage(row.record, row.seal); // undefined: intact
 * ```
 */
export function sealer(digest: SealDigest): Sealer {
  const sealOf = (record: OperationRecord): string => digest(sealText(record));
  return {
    sealOf,
    sealDamage(record, seal) {
      // A missing seal (a row unreadable when seals were added, or one oncely never wrote) differs too.
      if (seal === sealOf(record)) return undefined;
      return journaledHeaderDamage(record.headers) ?? SEAL_MISMATCH;
    },
  };
}

/**
 * The seal functions of a digest every platform computes synchronously: a UUIDv5 of the text.
 *
 * @example
 * ```ts
 * const row = { record, seal: portableSeal.sealOf(record) };
 * ```
 */
export const portableSeal: Sealer = sealer((text) => uuidv5(text, uuidv5.URL));
