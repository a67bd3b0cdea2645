/**
 * oncely guarding the shared payment handler, through the server library — the same library
 * the reference server is built on.
 *
 * The handler maps onto oncely's steps as its design asks: the charge is a **local** step (its
 * row commits in the same transaction as the `H1_DONE` recovery point), and the slow rest of
 * the work is an **external** step (`EXT1_SENT` before, `EXT1_DONE` after), so that no store
 * transaction stays open while it runs. A crash in the middle resumes after the charge.
 *
 * @module
 */
import { createIdempotencyHandler } from '../../src/server/handler.js';
import { sqliteKeyStore } from '../../src/server/store/sqlite.node.js';
import type { KeyStore, StoredResponse } from '../../src/server/store/types.js';
import type { IdempotentOperation } from '../../src/server/types.js';
import { noStore } from './nostore.js';
import {
  CHARGE_SQL,
  COUNT_SQL,
  EXECUTIONS_DDL,
  chargeParams,
  newPayment,
  parsePayment,
  receiptWork,
  toCount,
  type PaymentInput,
  type WorkOptions,
} from './payment.js';

/** Options of {@link createOncelyPeer}. */
export interface OncelyPeerOptions {
  /** A SQLite file path, a `postgres://` URL, or `nostore` (a diagnostic store that writes nothing, `nostore.ts`). */
  readonly db: string;
  /** PostgreSQL schema, so runs never see each other's keys. */
  readonly pgSchema?: string;
  readonly work: WorkOptions;
  readonly leaseMs: number;
  /** The handler's `inFlightWaitMs`; its default when absent. */
  readonly inFlightWaitMs?: number;
}

/** A fetch-style app: `POST /pay` (guarded) and `GET /executions`. */
export interface FetchApp {
  fetch(request: Request): Promise<Response>;
  close(): Promise<void>;
}

async function openStore(options: OncelyPeerOptions): Promise<KeyStore> {
  if (options.db === 'nostore') return noStore();
  if (!options.db.startsWith('postgres')) return sqliteKeyStore({ path: options.db });
  // Loaded only when asked for, so the SQLite figures never need the PostgreSQL store's code.
  const { postgresKeyStore } = await import('../../src/server/store/postgres.node.js');
  return postgresKeyStore({ connectionString: options.db, ...(options.pgSchema ? { schema: options.pgSchema } : {}) });
}

function paymentOperation(work: WorkOptions): IdempotentOperation<PaymentInput> {
  return {
    method: 'POST',
    path: '/pay',
    parse: (body) => {
      const input = parsePayment(body);
      return typeof input === 'string' ? { ok: false, detail: input } : { ok: true, input };
    },
    steps: [
      {
        kind: 'local',
        point: 'H1_DONE',
        async run(ctx, tx) {
          const payment = newPayment(ctx.input);
          await tx.run(CHARGE_SQL, chargeParams(payment));
          return { payment };
        },
      },
      {
        kind: 'external',
        system: 1,
        sent: 'EXT1_SENT',
        done: 'EXT1_DONE',
        async call(ctx) {
          await receiptWork(ctx.input, work);
          return { outcome: 'done' };
        },
        // The receipt leaves nothing behind to find: a resumed attempt simply does it again.
        probe: () => Promise.resolve({ outcome: 'absent' }),
      },
    ],
    final: {
      kind: 'final',
      run: (ctx): Promise<StoredResponse> =>
        Promise.resolve({ status: 201, headers: { 'content-type': 'application/json' }, body: JSON.stringify(ctx.data['payment']) }),
    },
  };
}

/**
 * Builds the oncely peer over a SQLite file or PostgreSQL.
 *
 * @example
 * ```ts
 * const app = await createOncelyPeer({ db: '/tmp/oncely.db', work: { workMs: 0, holdMs: 0 }, leaseMs: 10_000 });
 * serve({ fetch: app.fetch, port: 0 });
 * ```
 */
export async function createOncelyPeer(options: OncelyPeerOptions): Promise<FetchApp> {
  const store = await openStore(options);
  await store.migrate?.({ sqlite: `${EXECUTIONS_DDL};`, postgres: `${EXECUTIONS_DDL};` });
  const handler = createIdempotencyHandler({
    store,
    operations: [paymentOperation(options.work) as IdempotentOperation<unknown>],
    authenticate: () => 'bench',
    leaseMs: options.leaseMs,
    ...(options.inFlightWaitMs === undefined ? {} : { inFlightWaitMs: options.inFlightWaitMs }),
  });
  return {
    async fetch(request) {
      const handled = await handler.handle(request);
      if (handled) return handled;
      if (request.method === 'GET' && new URL(request.url).pathname === '/executions') {
        const row = await store.transaction((tx) => tx.get<{ executions: number | string; distinct_refs: number | string }>(COUNT_SQL));
        return Response.json(toCount(row));
      }
      return new Response('not found', { status: 404 });
    },
    close: async () => store.close?.(),
  };
}
