/**
 * The peers compared, in table order, with the labels the results use and where each one keeps
 * its idempotency keys (the tables' durability column), so that a reader compares like with like:
 * a layer whose keys live in process memory or in a Redis that writes nothing to disk forgets
 * them on a restart; one on SQLite or PostgreSQL commits them durably.
 *
 * @module
 */
import type { PeerName } from './serve.js';

/** Where a layer's keys live: what survives a restart of the server (or of Redis). */
export type KeyDurability = 'memory' | 'Redis without persistence' | 'SQLite' | 'PostgreSQL' | 'none (no keys)';

/** One row of the peer tables. */
export interface PeerLabel {
  readonly name: PeerName;
  readonly label: string;
  readonly keys: KeyDurability;
}

/** Every guarded server the peer suites run, oncely first (its steps API, then its Express middleware). */
export const PEER_LABELS: ReadonlyArray<PeerLabel> = [
  { name: 'oncely-sqlite', label: 'oncely (SQLite)', keys: 'SQLite' },
  { name: 'oncely-express', label: 'oncely/express (SQLite)', keys: 'SQLite' },
  { name: 'oncely-express-tx', label: 'oncely/express (SQLite, transaction: true, charge through req.oncely.tx)', keys: 'SQLite' },
  { name: 'oncely-express-pg', label: 'oncely/express (PostgreSQL, the app’s pg.Pool)', keys: 'PostgreSQL' },
  { name: 'oncely-express-pg-tx', label: 'oncely/express (PostgreSQL, transaction: true, charge through req.oncely.tx)', keys: 'PostgreSQL' },
  {
    name: 'floor-express-pg-tx',
    label: 'hand-written floor of transaction: true (Express, PostgreSQL, pg alone: BEGIN + lock, the INSERT, row + COMMIT)',
    keys: 'PostgreSQL',
  },
  { name: 'node-idempotency-memory', label: '@node-idempotency/core + memory', keys: 'memory' },
  { name: 'node-idempotency-redis', label: '@node-idempotency/core + Redis', keys: 'Redis without persistence' },
  { name: 'express-idempotency', label: 'express-idempotency (memory)', keys: 'memory' },
  { name: 'powertools-redis', label: 'Powertools idempotency + Redis cache (payload validation on)', keys: 'Redis without persistence' },
  { name: 'powertools-redis-unvalidated', label: 'Powertools idempotency + Redis cache (no payload validation)', keys: 'Redis without persistence' },
  { name: 'unguarded-express', label: 'no idempotency layer (Express)', keys: 'none (no keys)' },
  { name: 'unguarded-express-pg', label: 'no idempotency layer (Express, charge in PostgreSQL)', keys: 'none (no keys)' },
];

/** The heading of the durability column in the peer tables. */
export const KEYS_COLUMN = 'keys live in';

/** The peers that need a PostgreSQL server (`ONCELY_PG_URL`). */
export const onPostgres = (name: PeerName): boolean => name.endsWith('-pg') || name.endsWith('-pg-tx') || name.endsWith('-postgres');

/**
 * Where the peer labelled `label` keeps its keys; `null` for a label no peer has.
 *
 * @example
 * ```ts
 * keysOf('@node-idempotency/core + Redis'); // 'Redis without persistence'
 * ```
 */
export const keysOf = (label: string): KeyDurability | null => PEER_LABELS.find((p) => p.label === label)?.keys ?? null;
