/**
 * The server side of `express-breakdown.ts`: the Express peers' payment route three times in one
 * process — no idempotency layer, `oncely/express` (SQLite), `oncely/express` with
 * `transaction: true` — each on its own port, instrumented from the outside (no change to the
 * middleware): stage stamps around the route, the key store wrapped to time and count its calls,
 * better-sqlite3's statements patched to count commits, and the process's CPU, GC pauses,
 * event-loop utilisation and delay. Only one arm is loaded at a time, so the process-wide figures
 * between a `POST /reset` and a `GET /stats` of the control port belong to that arm.
 *
 * Prints `breakdown listening on http://127.0.0.1:PORT` (the control port); `GET /arms` answers
 * each arm's URL. Usage: started by `express-breakdown.ts`.
 *
 * @module
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PerformanceObserver, monitorEventLoopDelay, performance } from 'node:perf_hooks';
import Database from 'better-sqlite3';
import express, { type NextFunction, type Request, type Response } from 'express';
import { idempotent } from '../src/server/middleware/express.js';
import { sqliteKeyStore } from '../src/server/sqlite.js';
import { CHARGE_SQL, EXECUTIONS_DDL, chargeParams, newPayment, openAppDb, parsePayment, receiptWork, runPayment } from './peers/payment.js';

/** The arms, in the order the driver alternates them. */
export const ARMS = ['unguarded', 'oncely', 'oncely-tx'] as const;

const STAGES = ['bodyParse', 'guardDecide', 'handler', 'resJson', 'afterEnd', 'total'] as const;
const ns = (): bigint => process.hrtime.bigint();
const stats = {
  requests: 0,
  stageNs: Object.fromEntries(STAGES.map((s) => [s, 0n])) as Record<(typeof STAGES)[number], bigint>,
  store: {} as Record<string, { calls: number; waitNs: bigint }>,
  commits: 0,
  gcMs: 0,
  gcCount: 0,
};
let cpu0 = process.cpuUsage();
let elu0 = performance.eventLoopUtilization();
let wall0 = ns();
const delay = monitorEventLoopDelay({ resolution: 1 });
delay.enable();
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    stats.gcMs += entry.duration;
    stats.gcCount += 1;
  }
}).observe({ entryTypes: ['gc'] });

// Commits, whoever issues them: an explicit COMMIT, or a write statement run outside a
// transaction (SQLite's autocommit, as the unguarded app's INSERT).
const probe = new Database(':memory:');
const statementProto = Object.getPrototypeOf(probe.prepare('SELECT 1')) as { run: (...args: unknown[]) => unknown };
probe.close();
const run = statementProto.run;
statementProto.run = function (this: { source: string; reader: boolean; database: { inTransaction: boolean } }, ...args: unknown[]) {
  if (
    /^\s*COMMIT\b/i.test(this.source) ||
    (!this.reader && !this.database.inTransaction && !/^\s*(BEGIN|ROLLBACK|SAVEPOINT|RELEASE|PRAGMA)\b/i.test(this.source))
  )
    stats.commits += 1;
  return run.apply(this, args);
};

/** `store` with every call timed from call to settlement (group-commit wait included) and counted. */
function timed<T extends object>(store: T): T {
  return new Proxy(store, {
    get(target, name, receiver) {
      const value = Reflect.get(target, name, receiver) as unknown;
      if (typeof value !== 'function' || typeof name !== 'string') return value;
      return (...args: unknown[]) => {
        const t0 = ns();
        const result = (value as (...a: unknown[]) => unknown).apply(target, args);
        const record = (): void => {
          const s = (stats.store[name] ??= { calls: 0, waitNs: 0n });
          s.calls += 1;
          s.waitNs += ns() - t0;
        };
        if (result instanceof Promise) return result.finally(record);
        record();
        return result;
      };
    },
  });
}

type Stamped = Request & { stamps?: Record<string, bigint> };
const stamp = (req: Request, name: string): void => {
  ((req as Stamped).stamps ??= {})[name] = ns();
};

/** The peers' Express app with stage stamps around `express.json()` and the guard. */
function app(guard: express.RequestHandler | null, handler: (req: Request, res: Response) => Promise<void>): express.Express {
  const a = express();
  a.disable('x-powered-by');
  a.use((req: Request, res: Response, next: NextFunction) => {
    stamp(req, 'arrive');
    res.on('finish', () => {
      const s = (req as Stamped).stamps!;
      const end = ns();
      stats.requests += 1;
      stats.stageNs.bodyParse += s['parsed']! - s['arrive']!;
      stats.stageNs.guardDecide += s['handler']! - s['parsed']!;
      stats.stageNs.handler += s['respond']! - s['handler']!;
      stats.stageNs.resJson += s['responded']! - s['respond']!;
      stats.stageNs.afterEnd += end - s['responded']!;
      stats.stageNs.total += end - s['arrive']!;
    });
    next();
  });
  a.use(express.json({ limit: '64kb' }));
  a.use((req, _res, next) => {
    stamp(req, 'parsed');
    next();
  });
  const route = async (req: Request, res: Response): Promise<void> => {
    stamp(req, 'handler');
    await handler(req, res);
  };
  if (guard) a.post('/pay', guard, route);
  else a.post('/pay', route);
  return a;
}

/** `res.status(201).json(payment)`, stamped around (the capture's `end` runs inside it). */
function respond(req: Request, res: Response, body: unknown): void {
  stamp(req, 'respond');
  res.status(201).json(body);
  stamp(req, 'responded');
}

const dir = mkdtempSync(join(tmpdir(), 'oncely-breakdown-'));
const work = { workMs: 0, holdMs: 0 };
const appDb = openAppDb(join(dir, 'app.db'));
const plainStore = sqliteKeyStore({ path: join(dir, 'oncely.db') });
await plainStore.migrate();
const txStore = sqliteKeyStore({ path: join(dir, 'oncely-tx.db') });
await txStore.migrate({ sqlite: `${EXECUTIONS_DDL};`, postgres: `${EXECUTIONS_DDL};` });
const options = { clientId: () => 'bench', leaseMs: 10_000 } as const;

const plainHandler = async (req: Request, res: Response): Promise<void> => {
  const input = parsePayment(req.body);
  if (typeof input === 'string') return void res.status(400).json({ error: input });
  respond(req, res, await runPayment(input, appDb, work));
};
const apps: Record<(typeof ARMS)[number], express.Express> = {
  unguarded: app(null, plainHandler),
  oncely: app(idempotent({ ...options, store: timed(plainStore) }), plainHandler),
  'oncely-tx': app(idempotent({ ...options, store: timed(txStore), transaction: true }), async (req, res) => {
    const input = parsePayment(req.body);
    if (typeof input === 'string') return void res.status(400).json({ error: input });
    const payment = newPayment(input);
    await req.oncely!.tx!.run(CHARGE_SQL, chargeParams(payment));
    await receiptWork(input, work);
    respond(req, res, payment);
  }),
};

const listen = (handler: Parameters<typeof createServer>[1]): Promise<string> =>
  new Promise((resolve) => {
    const server = createServer(handler);
    server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`));
  });
const urls = Object.fromEntries(await Promise.all(ARMS.map(async (arm) => [arm, await listen(apps[arm])] as const)));

function reset(): void {
  stats.requests = 0;
  for (const s of STAGES) stats.stageNs[s] = 0n;
  stats.store = {};
  stats.commits = 0;
  stats.gcMs = 0;
  stats.gcCount = 0;
  cpu0 = process.cpuUsage();
  elu0 = performance.eventLoopUtilization();
  wall0 = ns();
  delay.reset();
}

function snapshot(): object {
  const cpu = process.cpuUsage(cpu0);
  const n = Math.max(1, stats.requests);
  const per = (v: bigint): number => Number(v) / 1000 / n; // ns → µs per request
  return {
    requests: stats.requests,
    wallMs: Number(ns() - wall0) / 1e6,
    cpuUserUs: cpu.user / n,
    cpuSystemUs: cpu.system / n,
    gcUs: (1000 * stats.gcMs) / n,
    gcCount: stats.gcCount,
    elu: performance.eventLoopUtilization(elu0).utilization,
    loopDelayMeanMs: delay.mean / 1e6,
    loopDelayP99Ms: delay.percentile(99) / 1e6,
    stagesUs: Object.fromEntries(STAGES.map((s) => [s, per(stats.stageNs[s])])),
    store: Object.fromEntries(
      Object.entries(stats.store).map(([k, v]) => [k, { perRequest: v.calls / n, waitUs: Number(v.waitNs) / 1000 / Math.max(1, v.calls) }]),
    ),
    commitsPerRequest: stats.commits / n,
  };
}

const control = await listen((req, res) => {
  if (req.url === '/reset') reset();
  const body = req.url === '/arms' ? urls : req.url === '/stats' ? snapshot() : { ok: true };
  res.setHeader('content-type', 'application/json');
  res.end(JSON.stringify(body));
});
console.log(`breakdown listening on ${control}`);
process.on('SIGTERM', () => {
  void Promise.all([plainStore.close(), txStore.close()]).finally(() => {
    appDb.close();
    rmSync(dir, { recursive: true, force: true });
    process.exit(0); // a --cpu-prof profile is written on this exit
  });
});
