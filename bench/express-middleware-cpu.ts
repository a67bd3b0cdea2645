/**
 * The CPU `oncely/express` itself adds to a request, with the noise of everything else taken out:
 * no network (requests and responses on in-memory sockets, driven ten at a time in process) and a
 * key store that only answers (no SQLite), so the figure is the middleware's own work — the
 * guard's decision and fingerprint, the response capture and the re-send — over the same Express
 * route unguarded. Rounds alternate the two arms; the Δ is taken per round. To compare two trees,
 * run it in each worktree alternately (the machine's speed drifts: compare Δ, not absolutes).
 *
 * It runs from an esbuild bundle (as the load generator does), not under tsx, whose `keepNames`
 * adds a `defineProperty` per closure that the published build does not have.
 *
 * Usage: `npx tsx bench/express-middleware-cpu.ts [requests per arm and round = 4000] [rounds = 5]`.
 *
 * @module
 */
import { spawnSync } from 'node:child_process';
import { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { Duplex } from 'node:stream';
import express from 'express';
import { idempotent } from '../src/server/middleware/express.js';
import type { KeyStore } from '../src/server/store/types.js';
import { bundled } from './lib/bundle.js';

const requests = Number(process.argv[2] ?? 4000);
const rounds = Number(process.argv[3] ?? 5);

if (process.env.ONCELY_BENCH_BUNDLED !== '1') {
  const argv = await bundled('bench/express-middleware-cpu.ts');
  const run = spawnSync(argv[0]!, [...argv.slice(1), String(requests), String(rounds)], {
    stdio: 'inherit',
    env: { ...process.env, ONCELY_BENCH_BUNDLED: '1' },
  });
  process.exit(run.status ?? 1);
}

/** Admits every key and stores nothing: what is left is the middleware's own CPU. */
const answering = {
  dialect: 'sqlite',
  migrate: async () => {},
  admit: async (input: { clientId: string; key: string }) => ({
    owned: true,
    lease: { clientId: input.clientId, key: input.key, token: 't' },
    row: { state: 'started' },
  }),
  write: async () => ({ ok: true, value: undefined }),
  close: async () => {},
};
const store = new Proxy(answering, {
  get: (target, name) =>
    name in target
      ? target[name as keyof typeof target]
      : () => Promise.reject(new Error(`express-middleware-cpu: the answering store has no ${String(name)}`)),
}) as unknown as KeyStore;

const handler: express.RequestHandler = (req, res) => {
  res.status(201).json({ id: 'ord_1', item: (req.body as { item: string }).item, amount: 1250 });
};
const app = express();
app.post('/unguarded', handler);
app.post('/oncely', idempotent({ store, clientId: () => 'acme' }), handler);

let sequence = 0;
const statuses = new Map<string, number>();

/** One request through the app, its body as `express.json()` leaves it, on a socket that discards. */
function one(path: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = new Duplex({ read() {}, write: (_chunk, _encoding, done) => done() }) as unknown as Socket;
    const req = new IncomingMessage(socket);
    req.method = 'POST';
    req.url = path;
    req.headers = { 'content-type': 'application/json', 'content-length': '15', 'idempotency-key': `k-${(sequence += 1)}` };
    Object.assign(req, { _body: true, body: { item: 'book' } });
    req.push(null);
    const res = new ServerResponse(req);
    res.assignSocket(socket);
    res.on('finish', () => {
      statuses.set(`${path} ${res.statusCode}`, (statuses.get(`${path} ${res.statusCode}`) ?? 0) + 1);
      resolve();
    });
    (app as unknown as { handle: (req: unknown, res: unknown, next: (error?: unknown) => void) => void }).handle(req, res, (error) =>
      reject(error ?? new Error(`${path}: no route answered`)),
    );
  });
}

/** CPU µs per request of `requests` requests, ten at a time. */
async function arm(path: string): Promise<number> {
  const start = process.cpuUsage();
  let left = requests;
  await Promise.all(
    Array.from({ length: 10 }, async () => {
      while (left-- > 0) await one(path);
    }),
  );
  const used = process.cpuUsage(start);
  return (used.user + used.system) / requests;
}

const ARMS = ['/unguarded', '/oncely'] as const;
for (const path of ARMS) await arm(path); // warm-up
const cpu: Record<(typeof ARMS)[number], number[]> = { '/unguarded': [], '/oncely': [] };
for (let round = 0; round < rounds; round += 1) {
  const order = round % 2 === 0 ? ARMS : [...ARMS].reverse();
  for (const path of order) cpu[path].push(await arm(path));
}
const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const unguarded = median(cpu['/unguarded']);
const oncely = median(cpu['/oncely']);
const delta = median(cpu['/oncely'].map((value, at) => value - cpu['/unguarded'][at]!));
const ratio = median(cpu['/oncely'].map((value, at) => value / cpu['/unguarded'][at]!));
console.log(`express-middleware-cpu: ${rounds} rounds × ${requests} requests per arm, CPU µs/request (medians)`);
console.log(`unguarded ${unguarded.toFixed(1)} | oncely/express ${oncely.toFixed(1)} | Δ ${delta.toFixed(1)} | oncely ÷ unguarded ${ratio.toFixed(2)}×`);
console.log(`statuses: ${[...statuses].map(([what, count]) => `${what} ×${count}`).join(', ')}`);
