/**
 * The peers compared, in table order, with the labels the results use.
 *
 * @module
 */
import type { PeerName } from './serve.js';

/** Every guarded server the peer suites run, oncely first (its steps API, then its Express middleware). */
export const PEER_LABELS: ReadonlyArray<{ readonly name: PeerName; readonly label: string }> = [
  { name: 'oncely-sqlite', label: 'oncely (SQLite)' },
  { name: 'oncely-express', label: 'oncely/express (SQLite)' },
  { name: 'oncely-express-tx', label: 'oncely/express (SQLite, transaction: true, charge through req.oncely.tx)' },
  { name: 'node-idempotency-memory', label: '@node-idempotency/core + memory' },
  { name: 'node-idempotency-redis', label: '@node-idempotency/core + Redis' },
  { name: 'express-idempotency', label: 'express-idempotency (memory)' },
  { name: 'powertools-redis', label: 'Powertools idempotency + Redis cache (payload validation on)' },
  { name: 'powertools-redis-unvalidated', label: 'Powertools idempotency + Redis cache (no payload validation)' },
  { name: 'unguarded-express', label: 'no idempotency layer (Express)' },
];

