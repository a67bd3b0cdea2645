/**
 * A request refused before it leaves (`RequestRefusedError`: a header fetch cannot send) is
 * settled failed only when no request under its key can have left any process: the chain that
 * refuses it has held the claim without a break since the record was created (post()) or
 * submitted (send() of a prepared one). Otherwise another holder — a resume() in another process
 * sharing the journal — may have sent it, the server may have applied it, and "failed" would
 * report an unknown outcome as a final one (docs/model: K3).
 *
 * Two clients stand for two processes sharing one journal; the second one's resume() is run at
 * the exact point the race needs, from inside the first one's journal calls.
 */
import 'fake-indexeddb/auto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createClient, type Client } from '../../src/index.js';
import { indexedDbJournal } from '../../src/journal/indexeddb.browser.js';
import { memoryJournal } from '../../src/journal/memory.js';
import { sqliteJournal } from '../../src/journal/sqlite.node.js';
import type { Journal, OperationPatch } from '../../src/journal/types.js';
import type { ResumeOutcome } from '../../src/client/results.js';
import { fakeWebLocks } from '../journal/fake-web-locks.js';

const BASE_URL = 'http://127.0.0.1:9';
const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

let databases = 0;
/** Two handles on one store, as two processes (or tabs) sharing a journal have. */
const backends: Record<string, () => [Journal, Journal]> = {
  memory: () => {
    const journal = memoryJournal();
    return [journal, journal];
  },
  sqlite: () => {
    const dir = mkdtempSync(join(tmpdir(), 'oncely-refused-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    return [sqliteJournal({ path: join(dir, 'j.db') }), sqliteJournal({ path: join(dir, 'j.db') })];
  },
  'indexeddb (lease records)': () => {
    const dbName = `oncely-refused-${(databases += 1)}`;
    return [indexedDbJournal({ dbName, locks: null }), indexedDbJournal({ dbName, locks: null })];
  },
  'indexeddb (Web Locks)': () => {
    const dbName = `oncely-refused-${(databases += 1)}`;
    const locks = fakeWebLocks();
    return [indexedDbJournal({ dbName, locks }), indexedDbJournal({ dbName, locks })];
  },
};

/** The other process: its resume() sends with valid headers and gets no answer (pending). */
function otherProcess(journal: Journal): { client: Client; sent: () => number } {
  let sent = 0;
  const client = createClient({
    baseUrl: BASE_URL,
    journal,
    retry: { limit: 0 },
    fetch: async () => {
      sent += 1;
      throw new TypeError('fetch failed');
    },
  });
  cleanups.push(() => client.close());
  return { client, sent: () => sent };
}

/** This process: its headers pass prepare()'s check, then can no longer be sent: every attempt is refused. */
function refusingProcess(journal: Journal): { client: Client; sent: () => number } {
  let sent = 0;
  let evaluated = 0;
  const client = createClient({
    baseUrl: BASE_URL,
    journal,
    headers: () => ({ authorization: (evaluated += 1) === 1 ? 'Bearer ok' : 'Bearer bad\r\nvalue' }),
    fetch: async () => {
      sent += 1;
      return new Response('{}', { status: 201 });
    },
  });
  cleanups.push(() => client.close());
  return { client, sent: () => sent };
}

/** `mine`, with `meanwhile` run right after one of its calls: the other process's move in the race. */
function racing(mine: Journal, call: 'put' | 'update' | 'claim', meanwhile: (args: readonly unknown[]) => Promise<void>): Journal {
  const original = mine[call] as (...args: unknown[]) => Promise<unknown>;
  const wrapped = async (...args: unknown[]): Promise<unknown> => {
    // A claim races before it is made (another tab claims first); a write, after it has committed.
    if (call === 'claim') await meanwhile(args);
    const result = await original.apply(mine, args);
    if (call !== 'claim') await meanwhile(args);
    return result;
  };
  return { ...mine, kind: mine.kind, [call]: wrapped };
}

const states = async (journal: Journal): Promise<string[]> => (await journal.list()).map((record) => record.state);

describe.each(Object.keys(backends))('a refused request and another process (%s)', (name) => {
  it("post(): a resume() elsewhere between the record's creation and its first attempt finds it claimed and sends nothing", async () => {
    const [mine, theirs] = backends[name]!();
    const other = otherProcess(theirs);
    let resumed: ResumeOutcome[] = [];
    const me = refusingProcess(racing(mine, 'put', async () => void (resumed = await other.client.resume())));
    await expect(me.client.post('v1/pay', { json: { amount: 1 } })).rejects.toMatchObject({ code: 'REQUEST_REFUSED', settled: true });
    expect(resumed.map((outcome) => outcome.state)).toEqual(['skipped']);
    expect(other.sent() + me.sent()).toBe(0);
    expect(await states(mine)).toEqual(['failed']);
  });

  it('send() of a prepared operation: claimed before it is marked submitted, so a resume() elsewhere sends nothing', async () => {
    const [mine, theirs] = backends[name]!();
    const other = otherProcess(theirs);
    let resumed: ResumeOutcome[] = [];
    const afterSubmit = async ([, , patch]: readonly unknown[]): Promise<void> => {
      if ((patch as OperationPatch).submittedAt !== undefined) resumed = await other.client.resume();
    };
    const me = refusingProcess(racing(mine, 'update', afterSubmit));
    const op = await me.client.prepare('POST', 'v1/pay', { json: { amount: 2 } });
    await expect(op.send()).rejects.toMatchObject({ code: 'REQUEST_REFUSED', settled: true });
    expect(resumed.map((outcome) => outcome.state)).toEqual(['skipped']);
    expect(other.sent() + me.sent()).toBe(0);
    expect(await states(mine)).toEqual(['failed']);
  });

  it('send() of a prepared operation another tab submitted and sent since it was read: a refusal leaves it pending, never failed', async () => {
    const [mine, theirs] = backends[name]!();
    const other = otherProcess(theirs);
    let raced = false;
    // The other tab's send() of the same prepared operation runs to its end (sent, no answer)
    // between this tab's read of the record and its claim.
    const beforeClaim = async ([, key]: readonly unknown[]): Promise<void> => {
      if (raced) return;
      raced = true;
      const theirs = await other.client.prepare('POST', 'v1/pay', { key: key as string, json: { amount: 4 } });
      await expect(theirs.send()).rejects.toMatchObject({ code: 'OPERATION_PENDING' });
    };
    const me = refusingProcess(racing(mine, 'claim', beforeClaim));
    const op = await me.client.prepare('POST', 'v1/pay', { json: { amount: 4 } });
    await expect(op.send()).rejects.toMatchObject({ code: 'REQUEST_REFUSED', settled: false });
    expect(other.sent()).toBe(1);
    expect(await states(mine)).toEqual(['pending']);
  });

  it('a journal that does not hold the claim put() asked for: a request sent elsewhere meanwhile leaves the refused one pending, never failed', async () => {
    const [mine, theirs] = backends[name]!();
    const other = otherProcess(theirs);
    let resumed: ResumeOutcome[] = [];
    // A third-party journal that ignores NewOperation.claim, racing as above.
    const legacy: Journal = { ...mine, kind: mine.kind, put: async ({ claim: _ignored, ...operation }) => mine.put(operation) };
    const me = refusingProcess(racing(legacy, 'put', async () => void (resumed = await other.client.resume())));
    await expect(me.client.post('v1/pay', { json: { amount: 3 } })).rejects.toMatchObject({ code: 'REQUEST_REFUSED', settled: false });
    expect(resumed.map((outcome) => outcome.state)).toEqual(['pending']);
    expect(other.sent()).toBe(1);
    expect(await states(mine)).toEqual(['pending']);
  });
});
