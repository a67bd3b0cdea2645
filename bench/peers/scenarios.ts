/**
 * The correctness scenarios run against every peer: 100 identical requests at once, the same
 * key with another body, and the server SIGKILLed in the middle of the handler followed by a
 * retry. Each starts fresh servers (fresh app database, fresh key namespace) so that no
 * scenario sees another's keys.
 *
 * @module
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { bundled } from '../lib/bundle.js';
import { sleep, startServer, type ServerProcess } from '../lib/proc.js';
import { onPostgres } from './labels.js';
import { PG_URL, dropPgSchema } from './pg.js';
import type { PeerName } from './serve.js';

/** How a peer server is started for one scenario. */
export interface PeerSetup {
  readonly workMs?: number;
  readonly holdMs?: number;
  readonly leaseMs?: number;
  /** oncely's `inFlightWaitMs` (its default when absent): `0` makes an in-flight duplicate a `409` at once. */
  readonly inFlightWaitMs?: number;
  /** Reuse the databases and namespace of an earlier start (the restart after a crash). */
  readonly state?: PeerState;
}

/** Where a peer keeps its state: kept across a restart. */
export interface PeerState {
  readonly appDb: string;
  readonly oncelyDb: string;
  readonly namespace: string;
  readonly pgSchema: string;
}

/**
 * A fresh state: temporary files and a random namespace.
 *
 * @example
 * ```ts
 * const state = freshState();
 * ```
 */
export function freshState(pgUrl?: string): PeerState {
  const dir = mkdtempSync(join(tmpdir(), 'oncely-bench-'));
  const suffix = randomUUID().slice(0, 8);
  return {
    appDb: join(dir, 'app.db'),
    oncelyDb: pgUrl ?? join(dir, 'oncely.db'),
    namespace: `bench-${suffix}`,
    pgSchema: `bench_${suffix}`,
  };
}

/**
 * Deletes a state's temporary files (a PostgreSQL schema is the caller's to drop).
 *
 * @example
 * ```ts
 * await server.stop();
 * discard(server.state);
 * ```
 */
export function discard(state: PeerState): void {
  rmSync(dirname(state.appDb), { recursive: true, force: true });
}

/**
 * {@link discard}, and the state's PostgreSQL schema dropped when the peer ran on PostgreSQL.
 *
 * @example
 * ```ts
 * await server.stop();
 * await release(server.state);
 * ```
 */
export async function release(state: PeerState): Promise<void> {
  discard(state);
  if (state.oncelyDb.startsWith('postgres')) await dropPgSchema(state.pgSchema, state.oncelyDb);
}

/**
 * Starts `peer` (see `serve.ts`) and resolves once it listens.
 *
 * @example
 * ```ts
 * const server = await startPeer('powertools-redis', { workMs: 100 });
 * ```
 */
export async function startPeer(peer: PeerName, setup: PeerSetup = {}): Promise<ServerProcess & { state: PeerState }> {
  const state = setup.state ?? freshState(onPostgres(peer) ? PG_URL : undefined);
  // Bundled once per process: the crash scenarios restart servers, and tsx would transform at every start.
  const server = await startServer([...(await bundled('bench/peers/serve.ts')), peer], {
    env: {
      BENCH_APP_DB: state.appDb,
      BENCH_ONCELY_DB: state.oncelyDb,
      BENCH_PG_SCHEMA: state.pgSchema,
      BENCH_NS: state.namespace,
      BENCH_WORK_MS: String(setup.workMs ?? 0),
      BENCH_HOLD_MS: String(setup.holdMs ?? 0),
      BENCH_LEASE_MS: String(setup.leaseMs ?? 10_000),
      ...(setup.inFlightWaitMs === undefined ? {} : { BENCH_IN_FLIGHT_WAIT_MS: String(setup.inFlightWaitMs) }),
    },
  });
  return Object.assign(server, { state });
}

/** The request every scenario sends: same headers for every peer. */
export function payBody(reference: string, amount = 1250): string {
  return JSON.stringify({ amount, currency: 'EUR', reference });
}

/**
 * One `POST /pay`; a network error is status `0`.
 *
 * @example
 * ```ts
 * const { status } = await pay(server.url, 'k1', payBody('inv-1'));
 * ```
 */
export async function pay(url: string, key: string, body: string): Promise<{ status: number; retryAfter: number | null }> {
  try {
    const response = await fetch(`${url}/pay`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': key, authorization: 'Bearer bench' },
      body,
    });
    await response.arrayBuffer();
    const retryAfter = response.headers.get('retry-after');
    return { status: response.status, retryAfter: retryAfter === null ? null : Number(retryAfter) };
  } catch {
    return { status: 0, retryAfter: null };
  }
}

/**
 * The peer's own count of charges. A peer whose charge commits only with the response
 * (`oncely-express-tx`) also says how many charges its handler has written, committed or not.
 *
 * @example
 * ```ts
 * (await executions(server.url)).executions; // 1
 * ```
 */
export async function executions(url: string): Promise<{ executions: number; distinct: number; charged?: number }> {
  const response = await fetch(`${url}/executions`, { headers: { authorization: 'Bearer bench' } });
  return (await response.json()) as { executions: number; distinct: number; charged?: number };
}

function countStatuses(statuses: readonly number[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const s of statuses) out[String(s)] = (out[String(s)] ?? 0) + 1;
  return out;
}

/** Result of {@link concurrentDuplicates}. */
export interface ConcurrentResult {
  readonly executions: number;
  readonly statuses: Readonly<Record<string, number>>;
}

/**
 * 100 identical requests (same key, same body) fired at once at a handler that takes `workMs`.
 *
 * @example
 * ```ts
 * const r = await concurrentDuplicates('node-idempotency-redis');
 * r.executions; // how many times the payment ran
 * ```
 */
export async function concurrentDuplicates(peer: PeerName, count = 100, workMs = 100): Promise<ConcurrentResult> {
  const server = await startPeer(peer, { workMs });
  try {
    const body = payBody('concurrent-1');
    const statuses = await Promise.all(Array.from({ length: count }, () => pay(server.url, 'same-key-1', body)));
    return { executions: (await executions(server.url)).executions, statuses: countStatuses(statuses.map((s) => s.status)) };
  } finally {
    await server.stop();
    await release(server.state);
  }
}

/** Result of {@link keyReuse}. */
export interface KeyReuseResult {
  readonly firstStatus: number;
  /** The answer to the same key with another body. */
  readonly status: number;
  readonly executions: number;
}

/**
 * The same key sent again with a different body.
 *
 * @example
 * ```ts
 * (await keyReuse('oncely-sqlite')).status; // 422
 * ```
 */
export async function keyReuse(peer: PeerName): Promise<KeyReuseResult> {
  const server = await startPeer(peer);
  try {
    const first = await pay(server.url, 'reused-key-1', payBody('reuse-1', 1250));
    const second = await pay(server.url, 'reused-key-1', payBody('reuse-1', 9900));
    return { firstStatus: first.status, status: second.status, executions: (await executions(server.url)).executions };
  } finally {
    await server.stop();
    await release(server.state);
  }
}

/** Result of {@link crashMidHandler}. */
export interface CrashResult {
  readonly executions: number;
  /** Status of the first retry after the restart. */
  readonly firstRetryStatus: number;
  /** The last status seen within the retry window. */
  readonly finalStatus: number;
  readonly retries: number;
  /** No 2xx within the retry window: the key is blocked (for a lease, or until its TTL). */
  readonly stuck: boolean;
  /** From the restart to the 2xx. */
  readonly recoveredAfterMs: number | null;
}

/**
 * SIGKILLs the peer's server after the charge and before the response, restarts it on the same
 * state, and retries the same request (honouring `Retry-After`, capped at 1 s) for `windowMs`.
 *
 * @example
 * ```ts
 * const r = await crashMidHandler('powertools-redis', { leaseMs: 3000, windowMs: 10_000 });
 * r.executions; r.stuck;
 * ```
 */
export async function crashMidHandler(peer: PeerName, options: { leaseMs: number; windowMs: number }): Promise<CrashResult> {
  const body = payBody('hold-crash-1');
  const key = 'crash-key-1';
  const first = await startPeer(peer, { holdMs: 120_000, leaseMs: options.leaseMs });
  const inFlight = pay(first.url, key, body);
  const deadline = Date.now() + 15_000;
  // Past the charge: committed, or written in a transaction that is still open.
  const charged = async (): Promise<number> => {
    const count = await executions(first.url);
    return count.charged ?? count.executions;
  };
  while ((await charged()) < 1) {
    if (Date.now() > deadline) throw new Error(`${peer}: the held payment never reached its charge`);
    await sleep(20);
  }
  await first.kill();
  await inFlight;
  const second = await startPeer(peer, { leaseMs: options.leaseMs, state: first.state });
  try {
    const restarted = Date.now();
    let firstRetryStatus = -1;
    let finalStatus = 0;
    let retries = 0;
    let recoveredAfterMs: number | null = null;
    while (Date.now() - restarted < options.windowMs) {
      const r = await pay(second.url, key, body);
      retries += 1;
      if (firstRetryStatus === -1) firstRetryStatus = r.status;
      finalStatus = r.status;
      if (r.status >= 200 && r.status < 300) {
        recoveredAfterMs = Date.now() - restarted;
        break;
      }
      if (r.status >= 400 && r.status < 500 && r.status !== 409 && r.status !== 429) break;
      await sleep(Math.min(1000, (r.retryAfter ?? 0.25) * 1000));
    }
    return {
      executions: (await executions(second.url)).executions,
      firstRetryStatus,
      finalStatus,
      retries,
      stuck: recoveredAfterMs === null,
      recoveredAfterMs,
    };
  } finally {
    await second.stop();
    await release(second.state);
  }
}
