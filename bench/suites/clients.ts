/**
 * Client suite: duplicate effects per 1 000 operations for four client strategies, each against
 * a fresh server behind a loopback proxy that drops responses after the server has acted —
 * once with the client process left alone, once with it SIGKILLed mid-flight ten times and
 * restarted.
 *
 * The keyed strategies talk to the reference server (`oncely serve`). The naive client sends no
 * key, which the reference server refuses (`400`) by design; it runs against the same payment
 * work with no idempotency layer — the API such a client is written for.
 *
 * Run alone: `node --import tsx bench/suites/clients.ts`.
 *
 * @module
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { WorkerSpec, Strategy } from '../clients/worker.js';
import { QUICK, emit, figure, type Figure, type ResultTable } from '../lib/figures.js';
import { bundled } from '../lib/bundle.js';
import { startFaultProxy } from '../lib/fault-proxy.js';
import { ROOT, TSX, startServer, type ServerProcess } from '../lib/proc.js';
import { discard, executions, startPeer } from '../peers/scenarios.js';

const OPS = Number(process.env['BENCH_CLIENT_OPS'] ?? (QUICK ? 200 : 1000));
const DROP_RATE = 0.1;
const KILLS = 10;
const CONCURRENCY = 8;

const STRATEGIES: ReadonlyArray<{ readonly name: Strategy; readonly label: string }> = [
  { name: 'naive', label: 'naive retrying ky (retry.methods [post], no key)' },
  { name: 'fresh-key', label: 'fresh key per attempt' },
  { name: 'memory-key', label: 'key minted once, kept in memory' },
  { name: 'oncely', label: 'oncely (SQLite journal)' },
];

interface RunResult {
  readonly effects: number;
  readonly duplicates: number;
  readonly lost: number;
  readonly dropped: number;
  readonly kills: number;
  readonly ms: number;
}

async function referenceServer(dir: string): Promise<ServerProcess> {
  return startServer([...TSX, 'src/cli/main.ts', 'serve', '--port', '0', '--db', join(dir, 'server.db'), '--quiet']);
}

async function ledger(url: string): Promise<{ effects: number; distinct: number }> {
  // The ledger is paged: walk every page, or the count of distinct amounts would be capped.
  const amounts: number[] = [];
  let total = 0;
  for (let offset = 0; ; offset += 1000) {
    const response = await fetch(`${url}/v1/ledger?limit=1000&offset=${offset}`, { headers: { authorization: 'Bearer test_acme' } });
    const body = (await response.json()) as { count: number; entries: Array<{ amount: number }> };
    total = body.count;
    amounts.push(...body.entries.map((e) => e.amount));
    if (body.entries.length === 0 || amounts.length >= total) break;
  }
  return { effects: total, distinct: new Set(amounts).size };
}

/** Runs one worker to completion, SIGKILLing it after every `OPS / (kills + 1)` settled operations. */
async function drive(spec: WorkerSpec, kills: number): Promise<number> {
  const every = Math.floor(OPS / (kills + 1));
  let settled = 0;
  let killed = 0;
  for (;;) {
    const [node, ...script] = await bundled('bench/clients/worker.ts');
    const child = spawn(node!, [...script, JSON.stringify(spec)], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stderr.on('data', (chunk: Buffer) => appendFileSync(spec.doneFile.replace(/done\.txt$/, 'worker.log'), chunk));
    let finished = false;
    const lines = createInterface({ input: child.stdout });
    lines.on('line', (line) => {
      if (line === 'finished') finished = true;
      if (!line.startsWith('done ')) return;
      settled += 1;
      if (killed < kills && settled >= every * (killed + 1)) {
        killed += 1;
        child.kill('SIGKILL');
      }
    });
    await once(child, 'exit');
    if (finished) return killed;
  }
}

async function run(strategy: Strategy, kills: number, seed: number): Promise<RunResult> {
  const dir = mkdtempSync(join(tmpdir(), `oncely-bench-${strategy}-`));
  const peer = strategy === 'naive' ? await startPeer('unguarded') : undefined;
  const server = peer ?? (await referenceServer(dir));
  const proxy = await startFaultProxy({ upstream: server.url, dropRate: DROP_RATE, seed });
  const started = Date.now();
  try {
    const killed = await drive(
      {
        strategy,
        url: proxy.url,
        path: strategy === 'naive' ? 'pay' : 'v1/payments',
        count: OPS,
        concurrency: CONCURRENCY,
        doneFile: join(dir, 'done.txt'),
        journalPath: join(dir, 'journal.db'),
      },
      kills,
    );
    const log = join(dir, 'worker.log');
    if (existsSync(log)) console.error(`clients: ${strategy} worker errors (${log}):\n${readFileSync(log, 'utf8').slice(-1500)}`);
    const counted =
      strategy === 'naive' ? await executions(server.url).then((e) => ({ effects: e.executions, distinct: e.distinct })) : await ledger(server.url);
    return {
      effects: counted.effects,
      duplicates: counted.effects - counted.distinct,
      lost: OPS - counted.distinct,
      dropped: proxy.dropped(),
      kills: killed,
      ms: Date.now() - started,
    };
  } finally {
    await proxy.close();
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
    if (peer) discard(peer.state);
  }
}

const perThousand = (n: number): number => Math.round((n * 1000) / OPS);
const only = process.env['BENCH_CLIENT_ONLY'];
const chosen = STRATEGIES.filter((s) => only === undefined || s.name === only);

// Counts, not timings: the runs may overlap (each has its own server, proxy and files).
const jobs = chosen.flatMap(({ name }, i) => [
  { name, kills: 0, seed: 11 + 2 * i },
  { name, kills: KILLS, seed: 12 + 2 * i },
]);
const results = new Map<string, RunResult>();
let nextJob = 0;
const lane = async (): Promise<void> => {
  for (let j = nextJob++; j < jobs.length; j = nextJob++) {
    const job = jobs[j]!;
    const result = await run(job.name, job.kills, job.seed);
    results.set(`${job.name}.${job.kills === 0 ? 'drops' : 'drops+kills'}`, result);
    console.error(`clients: ${job.name} kills=${job.kills} ${JSON.stringify(result)}`);
  }
};
await Promise.all(Array.from({ length: 3 }, lane));

const figures: Figure[] = [];
const rows: Array<Array<string | number | boolean | null>> = [];
for (const { name, label } of chosen) {
  const calm = results.get(`${name}.drops`)!;
  const killed = results.get(`${name}.drops+kills`)!;
  figures.push(
    figure(`clients.${name}.duplicates`, `${label}: duplicate effects per 1 000 (responses dropped)`, 'per 1 000', [perThousand(calm.duplicates)]),
    figure(`clients.${name}.duplicates_killed`, `${label}: duplicate effects per 1 000 (dropped + ${KILLS} client kills)`, 'per 1 000', [
      perThousand(killed.duplicates),
    ]),
  );
  rows.push([label, perThousand(calm.duplicates), perThousand(calm.lost), perThousand(killed.duplicates), perThousand(killed.lost)]);
}
const raw = Object.fromEntries(results);

const table: ResultTable = {
  id: 'clients.duplicates',
  title: `Client strategies: duplicate effects per 1 000 operations (${OPS} operations, ${DROP_RATE * 100} % of responses dropped after the server acted)`,
  columns: ['client', 'duplicates / 1 000', 'lost / 1 000', `duplicates / 1 000, client SIGKILLed ${KILLS}× mid-flight`, 'lost / 1 000 (killed)'],
  rows,
  notes: [
    'Every strategy has the same retry budget (20 attempts, 10–200 ms backoff, Retry-After honoured); only the key handling differs.',
    'After a kill the restarted process redoes every operation it had not seen succeed (the intent survives, an in-memory key does not); oncely resumes from its journal.',
    'The naive client runs against the same payment work without an idempotency layer: the reference server answers 400 to a POST without a key.',
  ],
};
emit({ suite: 'clients', figures, tables: [table], details: { ops: OPS, dropRate: DROP_RATE, concurrency: CONCURRENCY, kills: KILLS, raw } });
