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
