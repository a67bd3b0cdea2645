/**
 * The handler's in-process cache of finished keys, so that a replay needs no store round trip.
 *
 * Safe because a finished row never changes: its fingerprint and stored response are final, no
 * actor may write to it again (takeover and every fenced write require `state = 'started'`), and
 * it is deleted only by the reaper once `expires_at` has passed — which the cache checks on every
 * hit. Several server processes sharing one store each keep their own cache and can never see a
 * different answer for a finished key.
 *
 * What it is not: a source of truth. A miss, an evicted entry or a restart simply reads the
 * store. `maxAgeMs` bounds how long an entry is trusted without looking at the store again, so
 * an operator who deletes a key by hand sees it take effect within that time.
 *
 * @module
 */
import { compositeId } from '../composite-id.js';
import { InvalidOptionError } from './errors/invalid-option-error.js';
import type { StoredResponse } from './store/types.js';

/** Options of the replay cache; `false` turns it off. */
export interface ReplayCacheOptions {
  /**
   * Budget for the cached response bodies and headers, in UTF-16 code units (≈ bytes for
   * ASCII); the least recently used entries go first.
   * @default 8388608 (8 Mi)
   */
  readonly maxBytes?: number;
  /**
   * How long an entry is served without reading the store again, ms.
   * @default 60000
   */
  readonly maxAgeMs?: number;
}

/** A finished key as the cache keeps it. */
export interface CachedKey {
  readonly requestHash: string;
  /**
   * Method, path with query, content type and body text of a request known to have
   * `requestHash`: a request identical to it has the same fingerprint without hashing it again.
   */
  readonly request: string;
  readonly endpoint: string;
  readonly response: StoredResponse;
  /** The headers a replay of it answers with (stored headers, key echo, `idempotency-replay`). */
  readonly replayHeaders: Readonly<Record<string, string>>;
  /** The row's own expiry (store clock, epoch ms): a row within `maxAgeMs` + 60 s of it is not cached. */
  readonly expiresAt: number;
}

interface Entry extends CachedKey {
  readonly cachedAt: number;
  readonly size: number;
  /** Insertion sequence number: how far from the eviction end this entry is. */
  order: number;
}

/** The cache; see the module comment. */
export interface ReplayCache {
  get(clientId: string, key: string, now: number): CachedKey | undefined;
  set(clientId: string, key: string, value: CachedKey, now: number): void;
  /** Entries held now. */
  readonly size: number;
}

/** How far this process's clock may be from the store's (PostgreSQL's) without harm. */
const CLOCK_MARGIN_MS = 60_000;

const sizeOf = (value: CachedKey): number => {
  let size = value.response.body.length + value.requestHash.length + value.request.length + value.endpoint.length + 64;
  for (const name in value.replayHeaders) size += 2 * (name.length + (value.replayHeaders[name]?.length ?? 0));
  return size;
};

/**
 * Creates an LRU cache of finished keys bounded by `maxBytes`.
 *
 * @example
 * ```ts
 * const cache = createReplayCache({ maxBytes: 1 << 20, maxAgeMs: 60_000 });
 * cache.set('acme', 'k1', { requestHash, request, endpoint: 'POST /v1/payments', response, replayHeaders: {}, expiresAt }, Date.now());
 * cache.get('acme', 'k1', Date.now()); // the entry, until it ages out, expires or is evicted
 * ```
 */
export function createReplayCache(options: ReplayCacheOptions = {}): ReplayCache {
  const maxBytes = options.maxBytes ?? 8 * 1024 * 1024;
  const maxAgeMs = options.maxAgeMs ?? 60_000;
  if (!(maxBytes >= 0)) throw new InvalidOptionError('createReplayCache', 'replayCache.maxBytes', `must be a number ≥ 0, got ${String(maxBytes)}`);
  if (!(maxAgeMs >= 0)) throw new InvalidOptionError('createReplayCache', 'replayCache.maxAgeMs', `must be a number ≥ 0, got ${String(maxAgeMs)}`);
  // Map iteration order is insertion order: re-inserting on a hit makes the first entry the
  // least recently used one.
  const entries = new Map<string, Entry>();
  let bytes = 0;
  let inserted = 0;
  // Length-prefixed, so no client id and key can spell another pair's entry.
  const id = compositeId;
  const drop = (name: string, entry: Entry): void => {
    entries.delete(name);
    bytes -= entry.size;
  };

  return {
    get(clientId, key, now) {
      const name = id(clientId, key);
      const entry = entries.get(name);
      if (entry === undefined) return undefined;
      if (now >= entry.expiresAt || now - entry.cachedAt >= maxAgeMs) {
        drop(name, entry);
        return undefined;
      }
      // Moved to the young end only once it has drifted into the older half: re-inserting into
      // a large Map on every hit leaves a hole each time and makes V8 rehash it again and again
      // (measured: a replay 6 -> 25 us with 20 000 entries held).
      if (inserted - entry.order > entries.size / 2) {
        entries.delete(name);
        entries.set(name, entry);
        entry.order = inserted;
        inserted += 1;
      }
      return entry;
    },
    set(clientId, key, value, now) {
      const name = id(clientId, key);
      const previous = entries.get(name);
      if (previous) drop(name, previous);
      const size = sizeOf(value);
      // Never a row within a minute (plus the entry's own lifetime) of its expiry: on PostgreSQL
      // the database's clock decides expiry, and this process's clock may differ by that much
      // without the cache ever serving a row the store has already reaped.
      if (size > maxBytes || value.expiresAt - now < maxAgeMs + CLOCK_MARGIN_MS || maxAgeMs === 0) return;
      const { requestHash, request, endpoint, response, replayHeaders, expiresAt } = value;
      entries.set(name, { requestHash, request, endpoint, response, replayHeaders, expiresAt, cachedAt: now, size, order: inserted });
      inserted += 1;
      bytes += size;
      if (bytes <= maxBytes) return;
      // Evict down to 7/8 of the budget in one pass: walking a Map from its start also walks the
      // holes its earlier deletions left, so evicting one entry per insert would cost a walk over
      // all of them every time.
      const target = maxBytes - maxBytes / 8;
      for (const [oldest, entry] of entries) {
        if (bytes <= target) break;
        drop(oldest, entry);
      }
    },
    get size() {
      return entries.size;
    },
  };
}
