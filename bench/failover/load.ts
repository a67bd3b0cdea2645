/**
 * Payments across a PostgreSQL primary failover, counted. For each mode (synchronous, then
 * asynchronous replication):
 *
 * 1. a primary and a streaming standby on loopback (`cluster.ts`), the standby streaming over a
 *    link with `--lag-ms` of latency each way (`lag-proxy.ts`, as between two zones);
 * 2. two `oncely serve` instances on the host list `postgres://…@127.0.0.1:P1,127.0.0.1:P2/…`;
 * 3. a client load: the oncely client (`createClient`, retries on), each payment sent through one
 *    instance and every fifth also, with the same key, through the other at once;
 * 4. once `--kill-after` payments are acknowledged, the link is cut and the primary killed
 *    (`pg_ctl stop -m immediate`), the standby promoted after `--promote-after` ms, and its
 *    `synchronous_standby_names` emptied (as an orchestrator does when its only standby is gone:
 *    else every commit would wait for a standby that no longer exists);
 * 5. when the load is over, the new primary is read (lost: an acknowledged key whose row is gone),
 *    then every acknowledged key is sent once more — the retry of a client that never heard its
 *    answer. A key answered with another payment than the one acknowledged ran twice: a duplicate
 *    effect, the rail charged twice. (The simulated rail keeps its charges in the same database, so
 *    the lost charge vanishes with the key; a real rail keeps both. The count is from the answers.)
 *
 * Prints a table and writes `bench/results/failover.json`.
 *
 * Usage: `npx tsx bench/failover/load.ts [--payments 600] [--concurrency 24] [--kill-after 250]
 * [--promote-after 1000] [--modes sync,async] [--trials 1] [--lag-ms 10]`
 *
 * @module
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { createClient } from '../../src/index.js';
import { memoryJournal } from '../../src/journal/memory.js';
import { checkReplication } from '../../src/server/store/postgres-replication.node.js';
import { ROOT, TSX, startServer, type ServerProcess } from '../lib/proc.js';
import { startPair, type PgPair } from './cluster.js';
import { startLagProxy, type LagProxy } from './lag-proxy.js';

const { values } = parseArgs({
  options: {
    payments: { type: 'string', default: '600' },
    concurrency: { type: 'string', default: '24' },
    'kill-after': { type: 'string', default: '250' },
    'promote-after': { type: 'string', default: '1000' },
    modes: { type: 'string', default: 'sync,async' },
    trials: { type: 'string', default: '1' },
    'lag-ms': { type: 'string', default: '10' },
  },
});
const PAYMENTS = Number(values.payments);
const CONCURRENCY = Number(values.concurrency);
const KILL_AFTER = Number(values['kill-after']);
const PROMOTE_AFTER_MS = Number(values['promote-after']);
const LAG_MS = Number(values['lag-ms']);
const SCHEMA = 'failover';
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** One mode's run, counted. */
interface Trial {
  readonly mode: 'sync' | 'async';
  readonly replicationAtStart: string;
  readonly payments: number;
  /** Keys answered 201 at least once during the load. */
  readonly acknowledged: number;
  /** Keys that never got a final answer within the client's retry budget. */
  readonly unfinished: number;
  /** Acknowledged keys whose acknowledged payment is not on the promoted primary. */
  readonly lostKeys: number;
  /** Keys answered with two different payments (during the load or by the late retry). */
  readonly duplicateEffects: number;
  /** Payments rows sharing one idempotency key on the promoted primary. */
  readonly duplicateRows: number;
  /** From the kill to the first 201 of a payment admitted after the promotion. */
  readonly servingAgainMs: number | undefined;
  /** From the promotion (standby read-write) to that 201. */
  readonly afterPromotionMs: number | undefined;
  readonly attempts: number;
  readonly status503: number;
}

const body = (n: number) => ({ amount: 100 + n, currency: 'EUR', reference: `inv-${n}` });

async function trial(mode: 'sync' | 'async', round: number): Promise<Trial> {
  let link: LagProxy | undefined;
  const pair: PgPair = await startPair({ synchronous: mode === 'sync', link: async (port) => (link = await startLagProxy(port, LAG_MS)).port });
  const servers: ServerProcess[] = [];
  try {
    const replicationAtStart = (await checkReplication({ connectionString: pair.url })).state;
    for (let i = 0; i < 2; i += 1) {
      servers.push(
        await startServer([
          ...TSX,
          join(ROOT, 'src/cli/main.ts'),
          'serve',
          '--port',
          '0',
          '--db',
          pair.url,
          '--pg-schema',
          SCHEMA,
          '--quiet',
          '--lease',
          '2s',
          '--recovery-interval',
          '200ms',
        ]),
      );
    }
    let attempts = 0;
    let status503 = 0;
    const clients = servers.map((server) =>
      createClient({
        baseUrl: server.url,
        journal: memoryJournal(),
        headers: { authorization: 'Bearer test_acme' },
        retry: { backoffMs: 50, maxBackoffMs: 500, maxRetryAfterMs: 1000, budgetMs: 60_000 },
        timeoutMs: 10_000,
        onAttempt: () => (attempts += 1),
        onRetry: (event) => {
          if (event.status === 503) status503 += 1;
        },
      }),
    );
    /** Payment ids answered per key. */
    const answered = new Map<string, Set<string>>();
    /** The instance that first answered each key. */
    const answeredBy = new Map<string, number>();
    let acknowledged = 0;
    let unfinished = 0;
    let killedAt: number | undefined;
    let promotedAt: number | undefined;
    let servingAgainMs: number | undefined;
    let afterPromotionMs: number | undefined;
    const killing = (async () => {
      while (acknowledged < KILL_AFTER) await sleep(5);
      killedAt = performance.now();
      // The primary's machine dies: its process, and the WAL still on the link to the standby.
      link?.cut();
      pair.killPrimary();
      await sleep(PROMOTE_AFTER_MS);
      pair.promoteStandby();
      const promoted = new pg.Client({ connectionString: pair.standbyUrl });
      await promoted.connect();
      await promoted.query("ALTER SYSTEM SET synchronous_standby_names = ''");
      await promoted.query('SELECT pg_reload_conf()');
      await promoted.end();
      promotedAt = performance.now();
    })();

    const keyOf = (n: number): string => `fo-${mode}-${round}-${n}`;
    const send = async (n: number, via: number): Promise<void> => {
      const startedAt = performance.now();
      try {
        const reply = await clients[via]!.post<{ id: string }>('v1/payments', { key: keyOf(n), json: body(n) });
        if (reply.status !== 201) throw new Error(`${keyOf(n)}: ${reply.status}`);
        const ids = answered.get(keyOf(n)) ?? new Set<string>();
        if (ids.size === 0) {
          acknowledged += 1;
          answeredBy.set(keyOf(n), via);
        }
        ids.add(reply.data.id);
        answered.set(keyOf(n), ids);
        if (servingAgainMs === undefined && promotedAt !== undefined && startedAt > promotedAt && killedAt !== undefined) {
          servingAgainMs = performance.now() - killedAt;
          afterPromotionMs = performance.now() - promotedAt;
        }
      } catch {
        unfinished += 1;
      }
    };
    let next = 0;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < PAYMENTS) {
          const n = (next += 1);
          // Every fifth payment is also sent, with its key, through the other instance at once.
          await Promise.all(n % 5 === 0 ? [send(n, 0), send(n, 1)] : [send(n, n % 2)]);
        }
      }),
    );
    await killing;

    const admin = new pg.Client({ connectionString: pair.standbyUrl });
    await admin.connect();
    // Lost: an acknowledged payment that is not on the promoted primary (its key may have been run
    // again since, by a retry still going through the failover: then it is a duplicate as well).
    const present = new Set((await admin.query<{ id: string }>(`SELECT id FROM ${SCHEMA}.payments`)).rows.map((row) => row.id));
    const lostKeys = [...answered.values()].filter((ids) => [...ids].some((id) => !present.has(id))).length;
    // The late retry of every acknowledged key: a client that never heard its answer sends it again,
    // through the instance that did not answer it. (The one that did may replay it from its cache of
    // finished keys, which hides the loss only until that cache forgets or the instance restarts.)
    const late = clients.map((client, i) =>
      createClient({ baseUrl: servers[i]!.url, journal: memoryJournal(), headers: { authorization: 'Bearer test_acme' }, retry: { budgetMs: 30_000 } }),
    );
    for (const key of answered.keys()) {
      const n = Number(key.split('-').at(-1));
      const reply = await late[1 - answeredBy.get(key)!]!.post<{ id: string }>('v1/payments', { key, json: body(n) }).catch(() => undefined);
      if (reply?.status === 201) answered.get(key)!.add(reply.data.id);
    }
    const duplicateEffects = [...answered.values()].filter((ids) => ids.size > 1).length;
    const duplicateRows = Number(
      (
        await admin.query<{ n: string }>(
          `SELECT count(*) AS n FROM (SELECT idempotency_key FROM ${SCHEMA}.payments GROUP BY idempotency_key HAVING count(*) > 1) d`,
        )
      ).rows[0]!.n,
    );
    await admin.end();
    return {
      mode,
      replicationAtStart,
      payments: PAYMENTS,
      acknowledged,
      unfinished,
      lostKeys,
      duplicateEffects,
      duplicateRows,
      servingAgainMs,
      afterPromotionMs,
      attempts,
      status503,
    };
  } finally {
    await Promise.all(servers.map((server) => server.stop()));
    pair.destroy();
    await link?.close();
  }
}

const trials: Trial[] = [];
for (let round = 1; round <= Number(values.trials); round += 1) {
  for (const mode of values.modes.split(',') as ('sync' | 'async')[]) {
    const result = await trial(mode, round);
    trials.push(result);
    console.error(`[failover] ${mode} #${round}: ${JSON.stringify(result)}`);
  }
}
const ms = (value: number | undefined): string => (value === undefined ? '–' : `${Math.round(value)} ms`);
console.log(
  '| mode | replication at start | payments | acknowledged | lost keys | duplicate effects | duplicate rows | unfinished | 503s | first 201 after kill | after promotion |',
);
console.log('|---|---|---|---|---|---|---|---|---|---|---|');
for (const t of trials) {
  console.log(
    `| ${t.mode} | ${t.replicationAtStart} | ${t.payments} | ${t.acknowledged} | ${t.lostKeys} | ${t.duplicateEffects} | ${t.duplicateRows} | ${t.unfinished} | ${t.status503} | ${ms(t.servingAgainMs)} | ${ms(t.afterPromotionMs)} |`,
  );
}
mkdirSync(join(ROOT, 'bench/results'), { recursive: true });
writeFileSync(
  join(ROOT, 'bench/results/failover.json'),
  `${JSON.stringify({ at: new Date().toISOString(), lagMs: LAG_MS, killAfter: KILL_AFTER, promoteAfterMs: PROMOTE_AFTER_MS, concurrency: CONCURRENCY, trials }, null, 2)}\n`,
);
