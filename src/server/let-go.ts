/**
 * Letting a key go (release, forget, park) after a transient failure, and keeping the promise a
 * `503` makes when the store could not record it: the key is free again once the store recovers.
 *
 * The store is usually what failed (a full disk, a dropped connection), so the let-go after it often
 * fails too, and the row keeps a lease nobody works under: every retry would wait it out and get
 * `409`. This instance knows the lease it abandoned, so it remembers the let-go and tries it again:
 *
 * ```
 * attempt fails ─► let go ─► done ─────────────────────────────────────────────► (nothing left)
 *                         └► store error ─► remembered: (client, key) → the same fenced let-go
 * a request for the key on this instance ─► the let-go again, first ─► done ─► admitted as usual
 *                                                                    └► fails ─► 503 (fail closed)
 * in the background, backing off 50 ms → 1 s ─► the let-go again ─► done: free for any instance
 * the lease would have run out ─► forgotten here (anyone may take the row over by then)
 * ```
 *
 * Fenced: a retried let-go is the same statement under the same lease token, so it changes nothing
 * once another owner has taken the row over (or the first attempt landed after all). Bounded: at most
 * {@link MAX_PENDING} keys are remembered, each for one lease; past that a key waits its lease out.
 *
 * @module
 * @internal
 */
import { compositeId } from '../composite-id.js';
import type { KeyRow, KeyStore, Lease } from './store/types.js';

/** Keys remembered at most: a store that never recovers costs this much and no more. */
export const MAX_PENDING = 1000;
const FIRST_RETRY_MS = 50;
const MAX_RETRY_MS = 1000;

/** Reports a let-go that failed (the front end's error hook). */
export type LetGoReporter = (error: unknown, ref: { readonly clientId: string; readonly key: string }) => void;

/** A front end's let-go of the keys it gives up; see the module comment. */
export interface LetGo {
  /** The store's `release` under `lease`, remembered and retried when it fails. Never rejects. */
  release(lease: Lease, options: { readonly forget: boolean }): Promise<void>;
  /** The store's `park` under `lease`, remembered and retried when it fails. Never rejects. */
  park(lease: Lease, options: { readonly retryAfterMs: number }): Promise<void>;
  /**
   * The let-go of the key this instance could not record, tried again before a request for it is
   * admitted; `undefined` when there is none. Rejects with the store's error when it fails again.
   */
  before(clientId: string, key: string): Promise<void> | undefined;
  /**
   * The row just taken over under `lease`, read again; when the store fails, the lease is let go
   * first (the answer will be `503`, and a `503`'s key is free) and the error rethrown.
   */
  reload(lease: Lease): Promise<KeyRow | undefined>;
}

/** Options of {@link createLetGo}. */
export interface LetGoOptions {
  readonly store: Pick<KeyStore, 'write' | 'load'>;
  /** The lease the front end grants: how long a let-go stays worth retrying. */
  readonly leaseMs: number;
  /** Told the first failure of each let-go. */
  readonly report?: LetGoReporter | undefined;
}

interface Pending {
  readonly attempt: () => Promise<unknown>;
  /** Epoch ms past which the lease has run out on its own. */
  readonly until: number;
  /** The retry under way, shared by everyone waiting on it. */
  trying?: Promise<void> | undefined;
}

/**
 * The let-go of one front end over `store`.
 *
 * @example
 * ```ts
 * const letGo = createLetGo({ store, leaseMs: 30_000 });
 * await letGo.release(lease, { forget: true }); // never rejects
 * await letGo.before(clientId, key); // rejects while the store still fails
 * ```
 */
export function createLetGo(options: LetGoOptions): LetGo {
  const { store, leaseMs, report } = options;
  const pending = new Map<string, Pending>();
  let timer: ReturnType<typeof setTimeout> | undefined;
  let delayMs = FIRST_RETRY_MS;

  /** One more try of `entry`: forgotten once done (or moot), kept when the store fails again. */
  const retry = (id: string, entry: Pending): Promise<void> =>
    (entry.trying ??= entry.attempt().then(
      () => {
        if (pending.get(id) === entry) pending.delete(id);
      },
      (error: unknown) => {
        entry.trying = undefined;
        throw error;
      },
    ));

  const sweep = async (): Promise<void> => {
    timer = undefined;
    const now = Date.now();
    const tries: Promise<void>[] = [];
    for (const [id, entry] of pending) {
      if (entry.until <= now) pending.delete(id);
      else tries.push(retry(id, entry).catch(() => undefined));
    }
    await Promise.all(tries);
    delayMs = Math.min(MAX_RETRY_MS, delayMs * 2);
    schedule();
  };

  const schedule = (): void => {
    if (timer !== undefined || pending.size === 0) return;
    timer = setTimeout(() => void sweep(), delayMs);
    timer.unref?.();
  };

  const letGo = async (lease: Lease, attempt: () => Promise<unknown>): Promise<void> => {
    const id = compositeId(lease.clientId, lease.key);
    try {
      await attempt();
      // Let go under this lease: an older one's let-go of the key has nothing left to free.
      pending.delete(id);
    } catch (error) {
      report?.(error, { clientId: lease.clientId, key: lease.key });
      if (!pending.has(id) && pending.size >= MAX_PENDING) return;
      pending.set(id, { attempt, until: Date.now() + leaseMs });
      if (timer === undefined) delayMs = FIRST_RETRY_MS;
      schedule();
    }
  };

  return {
    // Async, so that a store throwing instead of rejecting fails the same way.
    release: (lease, { forget }) => letGo(lease, async () => store.write(lease, { kind: 'release', forget })),
    park: (lease, { retryAfterMs }) => letGo(lease, async () => store.write(lease, { kind: 'park', retryAfterMs })),
    reload: (lease) =>
      store.load(lease.clientId, lease.key).catch(async (error: unknown) => {
        await letGo(lease, async () => store.write(lease, { kind: 'release', forget: false }));
        throw error;
      }),
    before(clientId, key) {
      if (pending.size === 0) return undefined;
      const id = compositeId(clientId, key);
      const entry = pending.get(id);
      if (entry === undefined) return undefined;
      // Its lease has run out: the row is anyone's to take over, this instance's admission included.
      if (entry.until <= Date.now()) return void pending.delete(id);
      return retry(id, entry);
    },
  };
}
