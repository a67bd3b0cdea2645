/**
 * The load generator's own process: runs autocannon against a URL — first `settleSec` unmeasured,
 * then `durationSec` measured — and prints one JSON line. Kept out of the server's process (and
 * out of the runner's) so that the generator never competes with the server for the same event
 * loop. With `observe`, the server's CPU time (and its PostgreSQL backends' CPU and the WAL) is
 * read right before and right after the measured load, so that the cost per request covers
 * exactly the requests counted.
 *
 * Usage: `node --import tsx bench/lib/load-worker.ts '<LoadSpec JSON>'`
 *
 * @module
 */
import { readFileSync } from 'node:fs';
import autocannon from 'autocannon';
import type { LoadCost, LoadResult, LoadSpec } from './load.js';
import { observePg, type PgObserver, type PgReading } from './pg-observe.js';

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

const fire = (seconds: number): Promise<autocannon.Result> =>
  autocannon({ url: url.origin, connections: spec.connections, duration: seconds, requests: [request] });

/** A process's user + system CPU time over all its threads, ms (`/proc/<pid>/stat`, 10-ms ticks). */
const cpuMs = (pid: number): number => {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
};

const observer: PgObserver | undefined = spec.observe?.pgUrl ? await observePg(spec.observe.pgUrl, { clientPid: spec.observe.pid }) : undefined;
if ((spec.settleSec ?? 0) > 0) await fire(spec.settleSec!);
const pg0: PgReading | undefined = await observer?.read();
const cpu0 = spec.observe ? cpuMs(spec.observe.pid) : 0;
const result = await fire(spec.durationSec);
const cpu = spec.observe ? cpuMs(spec.observe.pid) - cpu0 : 0;
const pg = observer && pg0 ? await observer.since(pg0) : undefined;
await observer?.close();

const statuses: Record<string, number> = {};
for (const [status, stat] of Object.entries(result.statusCodeStats ?? {})) {
  statuses[status] = (stat as { count: number }).count;
}
const answered = Math.max(1, result.requests.total);
const cost: LoadCost | undefined = spec.observe
  ? { cpuUs: (1000 * cpu) / answered, ...(pg ? { pgCpuUs: (1000 * pg.cpuMs) / answered, walBytes: pg.walBytes / answered } : {}) }
  : undefined;
const out: LoadResult = {
  rps: result.requests.average,
  p50: result.latency.p50,
  p99: result.latency.p99,
  requests: result.requests.total,
  errors: result.errors + result.timeouts,
  non2xx: result.non2xx,
  statuses,
  ...(cost ? { cost } : {}),
};
console.log(JSON.stringify(out));
