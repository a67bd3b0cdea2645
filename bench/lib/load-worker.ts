/**
 * The load generator's own process: runs autocannon once against a URL and prints one JSON
 * line. Kept out of the server's process (and out of the runner's) so that the generator never
 * competes with the server for the same event loop.
 *
 * Usage: `node --import tsx bench/lib/load-worker.ts '<LoadSpec JSON>'`
 *
 * @module
 */
import autocannon from 'autocannon';
import type { LoadResult, LoadSpec } from './load.js';

const spec = JSON.parse(process.argv[2] ?? '{}') as LoadSpec;
const url = new URL(spec.url);
let counter = 0;
const prefix = `${spec.keyPrefix ?? 'bench'}-${process.pid}-${Date.now().toString(36)}`;

const base: autocannon.Request = {
  method: spec.method,
  path: url.pathname + url.search,
  headers: { 'content-type': 'application/json', ...spec.headers },
  ...(spec.body === undefined ? {} : { body: spec.body }),
};

const request =
  spec.keyMode === 'fresh'
    ? {
        ...base,
        // A fresh key per request: every request is a first execution.
        setupRequest: (req: autocannon.Request): autocannon.Request => ({
          ...req,
          headers: { ...req.headers, 'idempotency-key': `${prefix}-${(counter += 1)}` },
        }),
      }
    : base;

const result = await autocannon({
  url: url.origin,
  connections: spec.connections,
  duration: spec.durationSec,
  requests: [request],
});

const statuses: Record<string, number> = {};
for (const [status, stat] of Object.entries(result.statusCodeStats ?? {})) {
  statuses[status] = (stat as { count: number }).count;
}
const out: LoadResult = {
  rps: result.requests.average,
  p50: result.latency.p50,
  p99: result.latency.p99,
  requests: result.requests.total,
  errors: result.errors + result.timeouts,
  non2xx: result.non2xx,
  statuses,
};
console.log(JSON.stringify(out));
