/**
 * One admitted run of a guarded request under its lease: what both executions (plain and
 * `transaction: true`) share — the key echoed on every answer, giving the key up, the answers for
 * a lost lease or a failed store, and the in-flight mark that wakes the key's waiters.
 *
 * @module
 * @internal
 */
import { DEFAULT_NAMESPACE } from '../../keys.js';
import { inFlight, storeUnavailable, type Answer, type WireResponse } from '../answers.js';
import { downstreamKey } from '../derived-key.js';
import { LeaseExpiredError } from '../errors/lease-expired-error.js';
import type { LetGo } from '../let-go.js';
import type { KeyStore, Lease, Tx } from '../store/types.js';
import type { GuardContext } from './types.js';

/** `oncely.deriveKey(name)`: {@link downstreamKey} in oncely's default namespace (the handler's default too). */
function namedDownstreamKey(clientId: string, key: string, name: string): string {
  if (typeof name !== 'string' || name === '') throw new TypeError(`oncely.deriveKey: name must be a non-empty string, got ${JSON.stringify(name)}`);
  return downstreamKey(DEFAULT_NAMESPACE, clientId, key, name);
}

/** Reports an error about one key (the guard's `onError`, never throwing). */
export type Reporter = (error: unknown, ref: { readonly clientId: string; readonly key: string }) => void;

/** The lease a guarded request runs under, and what every way of running it needs. */
export class LeasedRun {
  readonly echo: Readonly<Record<string, string>>;

  constructor(
    readonly store: KeyStore,
    /** The guard's let-go of the keys it gives up (retried while the store cannot record it). */
    private readonly letGo: Pick<LetGo, 'release'>,
    /**
     * The lease the run holds. A whole request's admission (`transaction: true` on a fresh key)
     * holds its key by its open transaction instead, and has no token before it commits: its
     * lease's token is `''`, never sent (nothing is released or finished under it).
     */
    readonly lease: Lease,
    /** Ends the key's in-flight mark (wakes its waiters). */
    end: () => void,
    private readonly reporter: Reporter,
  ) {
    this.echo = { 'idempotency-key': lease.key };
    let ended = false;
    this.end = () => {
      if (ended) return;
      ended = true;
      end();
    };
  }

  /**
   * Ends the key's in-flight mark, waking its waiters, once the run's outcome is committed (or
   * nothing of it will be); later calls do nothing.
   */
  readonly end: () => void;

  /** What the handler sees as `oncely`. */
  context(tx: Tx | undefined): GuardContext {
    const { clientId, key } = this.lease;
    return { clientId, key, tx, deriveKey: (name) => namedDownstreamKey(clientId, key, name) };
  }

  /** The handler's response with the key echoed. */
  echoed(response: WireResponse): WireResponse {
    return { ...response, headers: { ...response.headers, ...this.echo } };
  }

  report(error: unknown): void {
    this.reporter(error, { clientId: this.lease.clientId, key: this.lease.key });
  }

  /**
   * Gives the key up with nothing stored: a retry runs afresh. A store error is reported, and the
   * release retried until the store records it (`../let-go.ts`): a retry is not held for a lease.
   */
  release(): Promise<void> {
    return this.letGo.release(this.lease, { forget: true });
  }

  /** The answer when another request took the key over before the response was stored (reported). */
  lost(): Answer {
    this.report(new LeaseExpiredError(this.lease));
    return inFlight(1000, this.echo);
  }

  /** The answer when the store failed. */
  unavailable(): Answer {
    return storeUnavailable(this.echo);
  }
}
