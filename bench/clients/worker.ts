/**
 * One client process doing operations `0 … count-1` with one retry strategy; the suite SIGKILLs
 * and restarts it. What survives a kill is the business intent (the list of operations, and a
 * `done` file of those the process saw succeed) — and, for oncely only, its journal.
 *
 * Operation `i` is a payment of `amount = i + 1` (so duplicates are countable in the ledger).
 * Prints `done <i>` per settled operation and `finished` at the end.
 *
 * Usage: `node --import tsx bench/clients/worker.ts '<WorkerSpec JSON>'`
 *
 * @module
 */
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import ky, { type KyInstance } from 'ky';
import { createClient } from '../../src/index.js';
import { sqliteJournal } from '../../src/journal/sqlite.node.js';
import { newKey } from '../../src/keys.js';

/** The four client strategies compared. */
export const STRATEGIES = ['naive', 'fresh-key', 'memory-key', 'oncely'] as const;

/** One of {@link STRATEGIES}. */
export type Strategy = (typeof STRATEGIES)[number];

/** What the suite passes to a worker. */
export interface WorkerSpec {
  readonly strategy: Strategy;
  /** The proxy in front of the server. */
  readonly url: string;
  /** `v1/payments` (reference server) or `pay` (the unguarded app). */
  readonly path: string;
  readonly count: number;
  readonly concurrency: number;
  readonly doneFile: string;
  readonly journalPath: string;
}

const spec = JSON.parse(process.argv[2] ?? '{}') as WorkerSpec;
const auth = { authorization: 'Bearer test_acme' };
const body = (i: number) => ({ amount: i + 1, currency: 'EUR', reference: `op-${i}` });
const indexOf = (reference: unknown): number => Number(String(reference).replace('op-', ''));

const done = new Set<number>();
if (existsSync(spec.doneFile)) {
  for (const line of readFileSync(spec.doneFile, 'utf8').split('\n')) if (line) done.add(Number(line));
}
const settle = (i: number): void => {
  if (done.has(i)) return;
  done.add(i);
  appendFileSync(spec.doneFile, `${i}\n`);
  console.log(`done ${i}`);
};

// Every strategy gets the same retry budget and short delays; only the key handling differs.
const retryingKy: KyInstance = ky.create({
  prefixUrl: spec.url,
  headers: auth,
  timeout: 5000,
  retry: {
    limit: 20,
    methods: ['post'],
    statusCodes: [408, 409, 429, 500, 502, 503, 504],
    afterStatusCodes: [409, 429, 503],
    maxRetryAfter: 1000,
    delay: (attempt) => Math.min(200, 10 * 2 ** attempt),
  },
});

let send: (i: number) => Promise<void>;
/** Called once every operation has been tried: oncely finishes what its journal still holds. */
let drain: () => Promise<void> = () => Promise.resolve();
/** Operations this process must not start afresh (oncely: already journaled under a key). */
const skip = new Set<number>();
if (spec.strategy === 'oncely') {
  const client = createClient({
    baseUrl: spec.url,
    headers: auth,
    journal: sqliteJournal({ path: spec.journalPath }),
    retry: { limit: 20, backoffMs: 10, maxBackoffMs: 200, maxRetryAfterMs: 1000 },
    // A claim of the killed process blocks its operations until it lapses; claims are kept
    // alive while held, so a short one is safe and lets the restarted process take over sooner.
    claimTtlMs: 2000,
  });
  const settleResumed = async (): Promise<void> => {
    for (const outcome of await client.resume({ concurrency: spec.concurrency })) {
      if (outcome.state === 'succeeded') settle(indexOf((outcome.result.data as { reference?: string } | null)?.reference));
    }
  };
  // After a restart: finish what the journal holds, with the journaled keys and bytes.
  await settleResumed();
  for (const record of await client.journal.list()) {
    if (!record.body) continue;
    const i = indexOf((JSON.parse(record.body) as { reference: string }).reference);
    if (record.state === 'succeeded') settle(i);
    else skip.add(i);
  }
  send = async (i) => {
    await client.post(spec.path, { json: body(i) });
    settle(i);
  };
  drain = async () => {
    const deadline = Date.now() + 60_000;
    while ((await client.pending()).length > 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      await settleResumed();
    }
  };
} else {
  send = async (i) => {
    const key = newKey();
    await retryingKy.post(spec.path, {
      json: body(i),
      headers: spec.strategy === 'naive' ? {} : { 'idempotency-key': key },
      hooks: {
        beforeRetry: spec.strategy === 'fresh-key' ? [({ request }) => void request.headers.set('idempotency-key', newKey())] : [],
      },
    });
    settle(i);
  };
}

let next = 0;
const worker = async (): Promise<void> => {
  for (;;) {
    while (next < spec.count && (done.has(next) || skip.has(next))) next += 1;
    if (next >= spec.count) return;
    const i = next;
    next += 1;
    try {
      await send(i);
    } catch (error) {
      console.error(`op ${i}: ${(error as Error).message}`);
    }
  }
};
await Promise.all(Array.from({ length: spec.concurrency }, worker));
await drain();
console.log('finished');
process.exit(0);
