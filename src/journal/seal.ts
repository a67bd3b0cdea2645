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
 * | attempts, lastStatus                              | claims (owner, expiry, process): liveness only, and  |
 * | result: status, headers, body, replayed           | written by every claim; a forged claim only delays   |
 * |                                                   | a resume. Insertion order (`seq`, `rowid`): ordering |
 *
 * `updatedAt` is sealed although only `prune()` reads it: deleting a settled row is acting on it,
 * and it costs nothing to hash.
 *
 * The digest is computed synchronously, inside a SQLite transaction and inside an IndexedDB
 * transaction callback (awaiting WebCrypto there would let the transaction commit): a UUIDv5, i.e.
 * SHA-1 truncated to 122 bits, from the `uuid` package (Node's crypto in Node, its own code in
 * browsers), over a JSON array of the fields in a fixed order. JSON quotes every string, so no
 * field can spill into its neighbour; header maps are sorted, so the seal does not depend on the
 * order a backend keeps them in. The request body is not hashed again: the fingerprint stands
 * for it.
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

/** `uuid5(URL, "https://oncely.dev/ns/journal-seal")`: seals share no namespace with derived keys. */
const SEAL_NAMESPACE = 'b4d27a55-b96e-5a6e-96b2-b77ae361fc66';
/** Bumped when the sealed fields change, so an old seal never passes for a new layout. */
const SEAL_LAYOUT = 'oncely-journal-seal-1';

/** Why a row whose seal does not match is damaged, when nothing more specific can be said. */
export const SEAL_MISMATCH = "its key, scope, state, headers, stored response or timestamps were changed outside oncely (they no longer match the row's seal)";

const encoder = new TextEncoder();

// Header maps sorted by name: the same map always encodes alike, whatever order it was kept in.
const sortedEntries = (map: unknown): unknown =>
  typeof map === 'object' && map !== null ? Object.entries(map).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)) : map;

/**
 * The seal of `record`: written with the row, and compared with {@link sealOf} of the record read
 * back. Robust to any value a damaged row may hold (it never throws on a wrong type).
 *
 * @example
 * ```ts
 * const row = { record, seal: sealOf(record) };
 * sealDamage(row.record, row.seal); // undefined: intact
 * ```
 */
export function sealOf(record: OperationRecord): string {
  const { result } = record as { result: unknown };
  const response =
    typeof result === 'object' && result !== null
      ? [
          (result as Record<string, unknown>)['status'],
          sortedEntries((result as Record<string, unknown>)['headers']),
          (result as Record<string, unknown>)['body'],
          (result as Record<string, unknown>)['replayed'],
        ]
      : result;
  const fields = [
    SEAL_LAYOUT,
    record.scope,
    record.key,
    record.fingerprint,
    sortedEntries(record.headers),
    record.state,
    record.createdAt,
    record.updatedAt,
    record.submittedAt,
    record.attempts,
    record.lastStatus,
    response,
  ];
  return uuidv5(encoder.encode(JSON.stringify(fields)), SEAL_NAMESPACE);
}

/**
 * Why a row read back with `seal` must not be acted on, or `undefined` when `record` is what was
 * sealed. A mismatch is named by the more specific problem when one is plain to see (a credential
 * among the headers), otherwise by {@link SEAL_MISMATCH}.
 *
 * @example
 * ```ts
 * const reason = sealDamage(record, row.seal);
 * if (reason !== undefined) report({ scope: record.scope, key: record.key, reason });
 * ```
 */
export function sealDamage(record: OperationRecord, seal: unknown): string | undefined {
  if (typeof seal !== 'string') return 'it has no seal: it was not written by this oncely';
  if (seal === sealOf(record)) return undefined;
  return journaledHeaderDamage(record.headers) ?? SEAL_MISMATCH;
}
