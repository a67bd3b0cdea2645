/**
 * One peer, two checkouts, side by side: each checkout's own `bench/peers/serve.ts` server for
 * `peer`, loaded by autocannon in turns, round by round (the order flips every round), and the
 * per-round ratio of the second checkout's req/s to the first's. The before/after of a change for
 * one figure, in one run, on a shared machine: both arms see the same noise.
 *
 * Usage: `node --import tsx bench/peer-ab.ts <peer> <rounds> <seconds> <checkout-before> <checkout-after> [replay]`
 * (`replay`: every request repeats one finished key, instead of a fresh key each)
 * (e.g. `git worktree add ../before <commit>` with `node_modules` linked). PostgreSQL peers use
 * `ONCELY_PG_URL`, else `postgres://postgres@127.0.0.1:5432/test`.
 *
 * @module
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { runLoad } from './lib/load.js';
import { pay, payBody } from './peers/scenarios.js';

const [peer, roundsArg = '10', secondsArg = '5', ...rest] = process.argv.slice(2);
const replay = rest.at(-1) === 'replay';
const roots = replay ? rest.slice(0, -1) : rest;
if (!peer || roots.length !== 2) throw new Error('usage: bench/peer-ab.ts <peer> <rounds> <seconds> <checkout-before> <checkout-after>');

/** A checkout's server for `peer`, started by that checkout's own code (its startPeer, its bundle). */
function start(root: string): Promise<{ url: string; stop(): void }> {
  const starter = `const { startPeer } = await import(${JSON.stringify(join(root, 'bench/peers/scenarios.ts'))});
    const server = await startPeer(${JSON.stringify(peer)}, {});
    console.log('READY ' + server.url);
    process.on('SIGTERM', async () => { await server.stop(); process.exit(0); });
    setInterval(() => undefined, 1 << 30);`;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', starter], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const url = /READY (\S+)/.exec(out)?.[1];
      if (url) resolve({ url, stop: () => child.kill('SIGTERM') });
    });
    child.on('exit', (code) => reject(new Error(`${root}: the ${peer} server exited (${code}) before listening`)));
  });
}

const servers = [await start(roots[0]!), await start(roots[1]!)];
const body = payBody('peer-ab');
for (const server of servers) if ((await pay(server.url, 'peer-ab-replay', body)).status !== 201) throw new Error(`${peer}: warm-up failed`);
const rps: number[][] = [[], []];
for (let round = 0; round < Number(roundsArg); round += 1) {
  for (const arm of round % 2 === 0 ? [0, 1] : [1, 0]) {
    const result = await runLoad({
      url: `${servers[arm]!.url}/pay`,
      method: 'POST',
      body,
      connections: 10,
      durationSec: Number(secondsArg),
      keyMode: replay ? 'fixed' : 'fresh',
      headers: replay ? { authorization: 'Bearer bench', 'idempotency-key': 'peer-ab-replay' } : { authorization: 'Bearer bench' },
    });
    rps[arm]!.push(Math.round(result.rps));
  }
  console.log(`round ${round + 1}: before ${rps[0]!.at(-1)} req/s, after ${rps[1]!.at(-1)} req/s`);
}
const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const ratios = rps[1]!.map((after, round) => after / rps[0]![round]!);
console.log(`${peer}${replay ? ' (replays)' : ''}: after ÷ before per round ${ratios.map((r) => r.toFixed(3)).join(' ')}; median ${median(ratios).toFixed(3)}`);
for (const server of servers) server.stop();
process.exit(0);
