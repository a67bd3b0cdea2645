/**
 * The PostgreSQL store's admission (`KeyStore.admit`): one `INSERT … ON CONFLICT DO NOTHING`,
 * alone, or opening the transaction that runs the operation's first phase (or the whole request,
 * finished) with it. The statements are `postgres-sql.node.ts`'s; the row mapping
 * `postgres-rows.node.ts`'s; the first phase and the whole request are the store core's.
 *
 * @module
 */
import { admittedRow, txOver } from './core.js';
import { admitFirst, type RowChange } from './write-plan.js';
import { checkedResponse } from './request-transaction.js';
import type { BeganRequest, RequestTransaction } from './records.js';
import { fenceArgs, landed, landedFinish, shaped } from './postgres-fenced.node.js';
import type { PostgresSql } from './postgres-sql.node.js';
import type { Opened, Runner } from './postgres-transport.node.js';
import { toAdmitResult, toRow, type Admitted, type RawRow } from './postgres-rows.node.js';
import type { AdmitInput, AdmitResult, FirstPhase, StoredResponse, WholeRequest } from './types.js';

/** Whether `error` is PostgreSQL's `lock_not_available` (55P03): a lock wait ran past `lock_timeout`. */
const lockNotAvailable = (error: unknown): boolean => (error as { code?: unknown } | null)?.code === '55P03';

/**
 * The store's `admit` over `runner`.
 *
 * @example
 * ```ts
 * const admit = admitOn(runner, postgresSql('oncely'), 65_536);
 * const result = await admit(input);
 * ```
 */
export function admitOn(runner: Runner, SQL: PostgresSql, maxResponseBytes: number) {
  return async function admit<T>(input: AdmitInput, first?: FirstPhase<T> | WholeRequest<T>): Promise<AdmitResult<T>> {
    const args = [input.clientId, input.key, input.requestHash, input.endpoint, input.requestBody, input.leaseMs, input.ttlMs];
    // An admission that opens a transaction may meet another one's still open (a whole request
    // holds its key until its work ends): it waits for that COMMIT or rollback up to `waitMs`. A
    // transaction that holds the new key (a whole request, or a first phase) is bounded like a
    // lease: idle past `leaseMs` (its process frozen), PostgreSQL ends it, and its key is free
    // again for the duplicates its uncommitted INSERT holds back.
    const options = { lockTimeoutMs: input.waitMs, idleTimeoutMs: input.leaseMs };
    // No row in the answer: the INSERT met a row committed after the statement's snapshot (it
    // waited for that owner's COMMIT). The next attempt's snapshot sees it.
    for (let attempt = 1; attempt <= 3; attempt += 1) {
      if (!first) {
        const { rows } = await runner.prepared<Admitted>(SQL.admit, args);
        if (rows[0]) return toAdmitResult(input, rows[0]);
        continue;
      }
      // The INSERT, the first phase's work and its recovery point in one transaction. The new
      // row is this transaction's until COMMIT: a duplicate's INSERT waits, then finds the row at
      // its recovery point.
      let opened: Opened<Admitted>;
      try {
        opened = await runner.open<Admitted>({ sql: SQL.admit, params: args }, undefined, options);
      } catch (error) {
        // Still open past the wait: in flight, not yet visible.
        if (input.waitMs !== undefined && lockNotAvailable(error)) return { owned: false, row: null };
        throw error;
      }
      const { result, tx } = opened;
      try {
        const found = result.rows[0];
        if (!found) {
          await tx.rollback();
          continue;
        }
        const admitted = toAdmitResult(input, found);
        if (!admitted.owned) {
          await tx.rollback();
          return admitted;
        }
        const ownTx = txOver('postgres', async (op, sql, params) => shaped(op, await tx.query(sql, params)));
        // The point after the first phase (EXTn_SENT), or a whole request's response, is written by
        // one UPDATE sent with the COMMIT: the row, inserted by this transaction, cannot change
        // hands before it. An answer lost (connection reset): the row says whether the COMMIT ran.
        const lease = admitted.lease;
        const write = (row: RowChange) =>
          row.response
            ? tx
                .commit({ sql: SQL.finish, params: [...fenceArgs(lease), row.response.status, JSON.stringify(row.response.headers), row.response.body] })
                .catch(async (error: unknown) => {
                  if (!(await landedFinish(runner, SQL, lease, input.requestHash, row.response!))) throw error;
                })
            : tx
                .commit({ sql: SQL.firstPoint, params: [...fenceArgs(lease), row.recoveryPoint, JSON.stringify(row.data), row.leaseMs] })
                .catch(async (error: unknown) => {
                  if (!(await landed(runner, SQL, lease, row.recoveryPoint!))) throw error;
                });
        return await admitFirst(admitted, first, ownTx, write, { store: 'postgresKeyStore', key: input.key, maxResponseBytes });
      } catch (error) {
        await tx.rollback();
        throw error;
      }
    }
    throw new Error(`postgresKeyStore: admission of key ${JSON.stringify(input.key.slice(0, 64))} found its row gone three times (deleted while admitted)`);
  };
}

/**
 * The store's `beginRequest` over `runner`: BEGIN, the key's admission lock and a look for its
 * row in one round trip; owned when there is none, and the row written finished with its response
 * when the holder commits, sent with the COMMIT. One row written once: no row in flight for anyone
 * to see, update or take over (a crash or a rollback leaves nothing), and no UPDATE of it. A
 * duplicate waits on the lock (up to `waitMs`), then finds the row committed, or none.
 *
 * @example
 * ```ts
 * const began = await beginRequestOn(runner, postgresSql('oncely'), 65_536)(input);
 * if (began.owned) await began.request.commit(response);
 * ```
 */
export function beginRequestOn(runner: Runner, SQL: PostgresSql, maxResponseBytes: number) {
  return async function beginRequest(input: AdmitInput): Promise<BeganRequest> {
    const options = { lockTimeoutMs: input.waitMs, idleTimeoutMs: input.leaseMs };
    const ref = [input.clientId, input.key];
    let opened: Opened<{ now_ms: number }>;
    try {
      opened = await runner.open<{ now_ms: number }>({ sql: SQL.keyLock, params: ref }, { sql: SQL.load, params: ref }, options);
    } catch (error) {
      // Held past the wait by another admission of the key: in flight, not yet visible.
      if (input.waitMs !== undefined && lockNotAvailable(error)) return { owned: false, row: null };
      throw error;
    }
    const { result, tx, then } = opened;
    try {
      if (then?.status === 'rejected') throw then.reason;
      const found = (then?.value.rows as RawRow[] | undefined)?.[0];
      if (found) {
        await tx.rollback();
        return { owned: false, row: toRow(found) };
      }
    } catch (error) {
      await tx.rollback();
      throw error;
    }
    const nowMs = result.rows[0]!.now_ms;
    // No lease: nobody can see the row, let alone take it over, before its COMMIT.
    const lease = { clientId: input.clientId, key: input.key, token: '' };
    const request: RequestTransaction = {
      tx: txOver('postgres', async (op, sql, params) => shaped(op, await tx.query(sql, params))),
      async commit(response) {
        let stored: StoredResponse;
        try {
          stored = checkedResponse('postgresKeyStore', maxResponseBytes, input.key, response);
        } catch (error) {
          await tx.rollback();
          throw error;
        }
        const row = [input.clientId, input.key, input.requestHash, input.endpoint, stored.status, JSON.stringify(stored.headers), stored.body, input.ttlMs];
        await tx.commit({ sql: SQL.wholeFinish, params: row }).catch(async (error: unknown) => {
          // The answer was lost (connection reset): the row says whether the response is stored.
          if (!(await landedFinish(runner, SQL, lease, input.requestHash, stored))) throw error;
        });
      },
      rollback: () => tx.rollback(),
    };
    return { owned: true, row: admittedRow(input, nowMs, nowMs + input.ttlMs), request };
  };
}
