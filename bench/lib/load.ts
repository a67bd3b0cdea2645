/**
 * One autocannon run, in a separate process (see `load-worker.ts`).
 *
 * @module
 */
import { bundled } from './bundle.js';
import { runJson } from './proc.js';

/** What to fire at the server. */
export interface LoadSpec {
  /** Full URL, e.g. `http://127.0.0.1:4000/pay`. */
  readonly url: string;
  readonly method: 'GET' | 'POST';
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: string;
  /** `fresh`: a new `Idempotency-Key` per request (first executions); `fixed`: headers as given. */
  readonly keyMode: 'fresh' | 'fixed';
  readonly keyPrefix?: string;
  readonly connections: number;
  readonly durationSec: number;
  /** Seconds of the same load, unmeasured, right before the measured one (pools open, JIT and caches warm). */
  readonly settleSec?: number;
  /** What the load costs, read around the measured load only: see {@link LoadCost}. */
  readonly observe?: {
    /** The server process under load. */
    readonly pid: number;
    /** Its PostgreSQL (`postgres://…`): the CPU of the backends serving its connections, and the WAL written. */
    readonly pgUrl?: string;
  };
}

/** What a measured load cost, per request answered (absent where not observed). */
export interface LoadCost {
  /** The server process's CPU time (user + system, every thread), µs per request. */
  readonly cpuUs: number;
  /** The CPU time of the PostgreSQL backends serving the server's connections, µs per request. */
  readonly pgCpuUs?: number;
  /** WAL written by the whole PostgreSQL server, bytes per request. */
  readonly walBytes?: number;
}

/** autocannon's figures for one run. */
export interface LoadResult {
  /** Mean requests per second over the run. */
  readonly rps: number;
  /** Latency percentiles in milliseconds. */
  readonly p50: number;
  readonly p99: number;
  readonly requests: number;
  /** Socket errors and timeouts. */
  readonly errors: number;
  readonly non2xx: number;
  /** Response count per status code. */
  readonly statuses: Readonly<Record<string, number>>;
  /** With `observe`: what the measured load cost per request. */
  readonly cost?: LoadCost;
}

/**
 * Runs autocannon once with `spec` in its own process.
 *
 * @example
 * ```ts
 * const r = await runLoad({ url: `${server.url}/pay`, method: 'POST', body, keyMode: 'fresh', connections: 10, durationSec: 3 });
 * r.rps; r.p99;
 * ```
 */
export async function runLoad(spec: LoadSpec): Promise<LoadResult> {
  return runJson<LoadResult>([...(await bundled('bench/lib/load-worker.ts')), JSON.stringify(spec)]);
}
