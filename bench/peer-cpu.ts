/**
 * One peer under fresh-key load (first executions), with the server process's own CPU time per
 * request — the figure to compare when changing the server's hot path, since req/s on a shared
 * machine moves with everything else running — and that time per thread (the main thread, and its
 * system part; worker threads such as V8's GC helpers and the SQLite checkpointer). Optionally
 * writes a V8 CPU profile.
 *
 * Usage: `node --import tsx bench/peer-cpu.ts [peer = oncely-sqlite] [seconds = 5] [cpuprofile-dir] [replay]`
 * (`replay`: every request repeats one finished key, instead of a fresh key each)
 * (`oncely-nostore`: the same handler over a store that writes nothing, the floor under oncely)
 * (the PostgreSQL peers — `oncely-postgres`, `unguarded-postgres`, `*-pg`, `*-pg-tx` — use `ONCELY_PG_URL`, else `postgres://postgres@127.0.0.1:5432/test`;
 * their database's server CPU and WAL per request are read from the server (`lib/pg-observe.ts`), and, where
 * `pg_stat_statements` is loaded, the statements run per request).
 * Compare two commits by running it alternately in two worktrees.
 *
 * @module
 */
import { spawn } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { bundled } from './lib/bundle.js';
import { observePg } from './lib/pg-observe.js';
import { runLoad } from './lib/load.js';
import { onPostgres as needsPostgres } from './peers/labels.js';
import { PG_URL } from './peers/pg.js';
import { freshState, pay, payBody, release } from './peers/scenarios.js';
import type { PeerName } from './peers/serve.js';

const peer = (process.argv[2] ?? 'oncely-sqlite') as PeerName;
const seconds = Number(process.argv[3] ?? 5);
const replay = process.argv.at(-1) === 'replay';
const profileDir = process.argv[4] === 'replay' ? undefined : process.argv[4];

const argv = await bundled('bench/peers/serve.ts');
const onPostgres = needsPostgres(peer);
const state = freshState(onPostgres ? PG_URL : undefined);
const profile = profileDir ? ['--cpu-prof', '--cpu-prof-interval=200', `--cpu-prof-dir=${profileDir}`] : [];
const child = spawn(argv[0]!, [...profile, ...argv.slice(1), peer], {
  env: { ...process.env, BENCH_APP_DB: state.appDb, BENCH_ONCELY_DB: state.oncelyDb, BENCH_NS: state.namespace, BENCH_PG_SCHEMA: state.pgSchema },
  stdio: ['ignore', 'pipe', 'inherit'],
});
const url = await new Promise<string>((resolve) =>
  child.stdout!.on('data', (chunk: Buffer) => {
    const match = /listening on (\S+)/.exec(chunk.toString());
    if (match) resolve(match[1]!);
  }),
);
/** The child's user + system CPU time, ms (Linux /proc; clock ticks of 10 ms). */
const cpuMs = (): number => {
  const fields = readFileSync(`/proc/${child.pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
};
/** CPU time of each of the child's threads by name (main thread, worker threads, libuv pool, V8's GC helpers), ms. */
const threadCpuMs = (): Map<string, number> => {
  const byName = new Map<string, number>();
  for (const tid of readdirSync(`/proc/${child.pid}/task`)) {
    try {
      const stat = readFileSync(`/proc/${child.pid}/task/${tid}/stat`, 'utf8');
      const name = tid === String(child.pid) ? 'main' : `${stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'))}/${tid}`;
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      byName.set(name, (byName.get(name) ?? 0) + (Number(fields[11]) + Number(fields[12])) * 10);
      if (name === 'main') byName.set('main (system)', Number(fields[12]) * 10);
    } catch {
      // the thread ended between the listing and the read
    }
  }
  return byName;
};
const replayKey = 'peer-cpu-replay';
if (replay && (await pay(url, replayKey, payBody('peer-cpu'))).status !== 201) throw new Error(`${peer}: warm-up failed`);
const observer = onPostgres ? await observePg(PG_URL) : undefined;
await observer?.resetStatements();
const db0 = await observer?.read();
const threads0 = threadCpuMs();
const cpu0 = cpuMs();
const t0 = Date.now();
const result = await runLoad({
  url: `${url}/pay`,
  method: 'POST',
  body: payBody('peer-cpu'),
  keyMode: replay ? 'fixed' : 'fresh',
  headers: replay ? { authorization: 'Bearer bench', 'idempotency-key': replayKey } : { authorization: 'Bearer bench' },
  connections: Number(process.env['BENCH_CONNECTIONS'] ?? 10),
  durationSec: seconds,
});
const cpu = cpuMs() - cpu0;
const wall = Date.now() - t0;
const db = observer && db0 ? await observer.since(db0) : undefined;
const threads = [...threadCpuMs()].map(([name, ms]) => [name, ms - (threads0.get(name) ?? 0)] as const).filter(([, ms]) => ms > 0);
console.log(
  `${peer}${replay ? ' (replays)' : ''} ${Math.round(result.rps)} req/s p99 ${result.p99} ms ${JSON.stringify(result.statuses)} server cpu ${Math.round((100 * cpu) / wall)}% = ${Math.round((1000 * cpu) / result.requests)} µs/request` +
    (db
      ? `, PostgreSQL cpu ${Math.round((100 * db.cpuMs) / wall)}% = ${Math.round((1000 * db.cpuMs) / result.requests)} µs/request, WAL ${Math.round(db.walBytes / result.requests)} B/request`
      : ''),
);
for (const s of (await observer?.statements(result.requests)) ?? []) {
  console.log(`  ${s.callsPerRequest.toFixed(2)} calls ${Math.round(s.usPerRequest)} µs ${Math.round(s.walBytesPerRequest)} B WAL /request: ${s.query}`);
}
await observer?.close();
console.log(`  by thread (µs/request): ${threads.map(([name, ms]) => `${name} ${Math.round((1000 * ms) / result.requests)}`).join(', ')}`);
child.kill('SIGTERM');
await new Promise((resolve) => child.on('exit', resolve));
await release(state);
