/**
 * The clients: one oncely Node client per app instance, each with its own SQLite journal, each
 * recording every HTTP attempt it makes (key, instance, status, a digest of the body's bytes,
 * time) through the `fetch` it is given.
 *
 * An operation's key is minted and journaled by `prepare()` before its first attempt; `send()`
 * retries it through its instance. Every third operation is also sent, with the same key and
 * body, through the other instance of the same app 30 ms later (the duplicate a load balancer
 * makes when a client retries elsewhere). Operations still pending when the load ends (the retry
 * budget ran out inside a fault) are finished by `resume()`, as a restarted client would; then
 * every acknowledged one is sent once more by a client that never heard its answer (`lateRetry`).
 *
 * @module
 */
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { createClient, memoryJournal, sqliteJournal } from '../../src/node.js';
import type { App } from './apps.js';
import type { Attempt, JournalEntry, Operation } from './history-check.js';

/** A digest of a body's bytes: what the checker compares. */
export const digestOf = (text: string): string => createHash('sha256').update(text).digest('hex').slice(0, 16);

/** One app instance's client. */
interface Driver {
  readonly app: App;
  readonly client: ReturnType<typeof createClient>;
  readonly journal: ReturnType<typeof sqliteJournal>;
}

/** The clients and what they recorded. */
export interface Workload {
  readonly operations: Operation[];
  readonly attempts: Attempt[];
  /** Runs the load until `until()` says stop. */
  run(until: () => boolean): Promise<void>;
  /** `resume()` on every client: finishes the operations still pending. */
  resumeAll(): Promise<void>;
  /**
   * Sends every acknowledged operation once more, same key and body, through the instance its
   * first client did not use, from a client without its journal: the retry of a caller that never
   * heard its answer. Where the key was lost it runs again, and the checker sees two bodies.
   */
  lateRetry(): Promise<void>;
  /** Every journal's rows, settled or not. */
  journals(): Promise<JournalEntry[]>;
  close(): Promise<void>;
}

/** A `fetch` that records each attempt into `attempts`. */
function recordingFetch(target: string, attempts: Attempt[], late = false): (request: Request) => Promise<Response> {
  return async (request) => {
    const key = request.headers.get('idempotency-key') ?? '';
    const startedAt = performance.now();
    try {
      const response = await fetch(request);
      const text = await response.clone().text();
      attempts.push({ key, target, startedAt, endedAt: performance.now(), status: response.status, digest: digestOf(text), ...(late ? { late } : {}) });
      return response;
    } catch (error) {
      attempts.push({ key, target, startedAt, endedAt: performance.now(), error: (error as Error).message, ...(late ? { late } : {}) });
      throw error;
    }
  };
}

/**
 * Builds the clients over `apps` with journals in `dir`.
 *
 * @example
 * ```ts
 * const workload = createWorkload(apps, dir, { concurrency: 8 });
 * await workload.run(() => performance.now() > stopAt);
 * ```
 */
export function createWorkload(apps: readonly App[], dir: string, options: { readonly concurrency: number; readonly budgetMs: number }): Workload {
  const operations: Operation[] = [];
  const attempts: Attempt[] = [];
  const drivers: Driver[] = apps.map((app) => {
    const journal = sqliteJournal({ path: join(dir, `journal-${app.name}.db`) });
    const client = createClient({
      baseUrl: app.url,
      scope: 'cluster',
      journal,
      headers: { authorization: 'Bearer test_acme' },
      retry: { backoffMs: 100, maxBackoffMs: 1000, maxRetryAfterMs: 2000, budgetMs: options.budgetMs },
      timeoutMs: 10_000,
      fetch: recordingFetch(app.name, attempts),
    });
    return { app, client, journal };
  });
  const of = (kind: App['app']): Driver[] => drivers.filter((d) => d.app.app === kind);
  /** Each operation's body and the instance its first client did not use. */
  const sent = new Map<string, { readonly json: object; readonly other: App }>();
  let n = 0;
  const one = async (): Promise<void> => {
    const i = (n += 1);
    const kind = i % 2 === 0 ? 'serve' : 'express';
    const pair = of(kind);
    const main = pair[Math.floor(i / 2) % 2]!;
    const other = pair.find((d) => d !== main)!;
    const json = { amount: 100 + (i % 900), currency: 'EUR', reference: `inv-${i}` };
    const op = await main.client.prepare('POST', 'v1/payments', { json });
    operations.push({ key: op.key, app: kind });
    sent.set(op.key, { json, other: other.app });
    const sends: Promise<unknown>[] = [op.send()];
    if (i % 3 === 0) {
      sends.push(new Promise((resolve) => setTimeout(resolve, 30)).then(() => other.client.post('v1/payments', { key: op.key, json })));
    }
    // An error here is an answer the history already holds (or a pending operation resume() finishes).
    await Promise.allSettled(sends);
  };
  return {
    operations,
    attempts,
    async run(until) {
      await Promise.all(
        Array.from({ length: options.concurrency }, async () => {
          while (!until()) await one();
        }),
      );
    },
    async resumeAll() {
      await Promise.all(drivers.map((d) => d.client.resume().catch(() => undefined)));
    },
    async lateRetry() {
      const acked = new Set(attempts.filter((a) => a.status !== undefined && a.status < 300).map((a) => a.key));
      const late = new Map(
        apps.map((app) => [
          app,
          createClient({
            baseUrl: app.url,
            journal: memoryJournal(),
            headers: { authorization: 'Bearer test_acme' },
            retry: { budgetMs: 20_000 },
            fetch: recordingFetch(`${app.name}-late`, attempts, true),
          }),
        ]),
      );
      const keys = [...acked];
      await Promise.all(
        Array.from({ length: options.concurrency }, async () => {
          for (let key = keys.pop(); key !== undefined; key = keys.pop()) {
            const { json, other } = sent.get(key)!;
            await late
              .get(other)!
              .post('v1/payments', { key, json })
              .catch(() => undefined);
          }
        }),
      );
      await Promise.all([...late.values()].map((client) => client.close()));
    },
    async journals() {
      const entries: JournalEntry[] = [];
      for (const d of drivers) {
        for (const row of await d.journal.list()) {
          entries.push({
            key: row.key,
            journal: d.app.name,
            state: row.state,
            ...(row.result ? { status: row.result.status, digest: digestOf(row.result.body) } : {}),
          });
        }
      }
      return entries;
    },
    async close() {
      await Promise.all(drivers.map((d) => d.client.close().catch(() => undefined)));
    },
  };
}
