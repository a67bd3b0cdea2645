/**
 * A guarded handler that outlived its lease.
 *
 * @module
 */
import { ErrorCode, OncelyError } from '../../errors/oncely-error.js';
import type { Lease } from '../store/types.js';

/**
 * Reported to the middleware's `onError` (never thrown at the caller): the handler answered
 * after its lease ran out (another request took the key over, or, with `transaction: true`, its
 * transaction was rolled back at the lease), so its response was not
 * stored. Raise `leaseMs` above the handler's slowest run.
 *
 * @example
 * ```ts
 * import { idempotent, LeaseExpiredError } from 'oncely/express';
 * const onError = (error: unknown) => {
 *   if (error instanceof LeaseExpiredError) console.warn(`raise leaseMs: ${error.message}`);
 * };
 * app.post('/orders', idempotent({ store, clientId: (req) => req.get('x-account-id') ?? null, onError }), createOrder);
 * ```
 */
export class LeaseExpiredError extends OncelyError {
  override name = 'LeaseExpiredError';
  readonly clientId: string;
  readonly key: string;

  constructor(lease: Pick<Lease, 'clientId' | 'key'>) {
    super(
      ErrorCode.LeaseExpired,
      `oncely: the lease ran out before the handler of key ${JSON.stringify(lease.key.slice(0, 64))} answered: its response was not stored (its transaction rolled back, or another request took the key over); raise leaseMs`,
    );
    this.clientId = lease.clientId;
    this.key = lease.key;
  }
}
