/**
 * An admission carrying its first phase, or a whole request (`transaction: true`), in the
 * INSERT's own transaction (see `./admit.node.ts` for why the row lock is all the arbitration).
 *
 * A whole request's transaction stays open while the app's handler runs. PostgreSQL ends a
 * transaction idle longer than the lease; MySQL has no such limit, so the connection's
 * `wait_timeout` is set to the lease (whole seconds, at least one) until the transaction ends:
 * a handler that stalls longer loses its connection, the server rolls everything back, and the
 * key is free for a duplicate. The handler's next statement then throws a lost-lease error
 * (`LeaseLostError`), and the admission answers "in flight, not yet visible" (`row: null`) instead
 * of an owner, whatever the handler did with that error: nothing of it was committed.
 *
 * @module
 */
import { randomUUID } from 'node:crypto';
import { admitFirst, LeaseLostError, type AdmitInput, type FirstPhase, type WholeRequest } from '../store.js';
import { type AdmitContext, type Attempt, found, insert, loadOn } from './admit.node.js';
import { inTransaction, isFatal, setLimits } from './connection.node.js';
import { openTx } from './tx.js';
import { applyChange } from './write.node.js';

/** One admission with `first`: the INSERT, the work, the row written, one COMMIT. */
export function admitWithFirst<T>(ctx: AdmitContext, input: AdmitInput, first: FirstPhase<T> | WholeRequest<T>): Promise<Attempt<T>> {
  const token = randomUUID();
  const lease = { clientId: input.clientId, key: input.key, token };
  const limits = { store: 'mysqlKeyStore', key: input.key, maxResponseBytes: ctx.maxResponseBytes };
  const idleS = 'response' in first ? input.leaseMs / 1000 : undefined;
  const lost = (cause: unknown) =>
    // The error a whole request's statement gets once its idle connection was ended.
    new LeaseLostError({
      message: `mysqlKeyStore: the transaction of ${JSON.stringify(input.key)} was ended (idle past its lease, or its connection lost): nothing of it committed`,
      cause,
    });
  return ctx.connections.use(async (conn, session, spoil) => {
    let ended: LeaseLostError | undefined;
    const decided = await inTransaction(conn, async (): Promise<Attempt<T> | 'duplicate'> => {
      const outcome = await insert(ctx, conn, session, input, token, idleS);
      if (outcome === 'held') return { owned: false, row: null };
      if (outcome !== 'inserted') return outcome;
      const owned = { owned: true, lease, row: (await loadOn(conn, ctx.sql, input.clientId, input.key))! } as const;
      const open = openTx(
        conn,
        () => ended,
        (error) => (idleS !== undefined && isFatal(error) ? (ended ??= lost(error)) : error),
      );
      const apply = async (change: Parameters<typeof applyChange>[4]) => {
        await open.end();
        if (open.failure !== undefined) throw open.failure;
        await applyChange(conn, ctx.sql, lease, { data: '{}', recovery_point: null }, change);
      };
      try {
        const done = await admitFirst(owned, first, open.tx, apply, limits).finally(() => open.end());
        return { ...done, row: (await loadOn(conn, ctx.sql, input.clientId, input.key))! };
      } catch (error) {
        // A whole request whose connection ended before its COMMIT: rolled back by the server.
        if (idleS !== undefined && isFatal(error)) ended ??= lost(error);
        throw error;
      }
    }).catch((error: unknown) => {
      if (!ended) throw error;
      spoil();
      return { owned: false, row: null } as const;
    });
    if (!ended) await setLimits(conn, session, {});
    return decided === 'duplicate' ? found<T>(conn, ctx, input) : decided;
  });
}
