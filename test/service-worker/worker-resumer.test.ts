/**
 * The Service Worker resumer outside a browser: a fake worker scope (an EventTarget), the memory
 * journal and the msw fake server, to pin what each trigger does. Real Chromium runs it in
 * test/browser-e2e/service-worker.e2e.ts.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { fingerprint } from '../../src/fingerprint.js';
import { memoryJournal } from '../../src/journal/memory.js';
import { scopeOf, type Journal } from '../../src/journal/types.js';
import {
  createServiceWorkerResumer,
  type ServiceWorkerResumer,
  type ServiceWorkerResumerOptions,
  type ServiceWorkerSettled,
} from '../../src/service-worker/index.js';
import { BASE_URL, json, useProtocolServer } from '../support/protocol-server.js';

const server = useProtocolServer();
const SCOPE = scopeOf(BASE_URL);
const resumers: ServiceWorkerResumer[] = [];

afterEach(async () => {
  await Promise.all(resumers.splice(0).map((resumer) => resumer.close()));
});

/** A payment the page journaled and submitted, then lost its tab. */
async function submitted(journal: Journal, key: string): Promise<void> {
  const fp = await fingerprint('POST', '/v1/payments', '{"amount":1}', { contentType: 'application/json' });
  await journal.put({
    scope: SCOPE,
    key,
    method: 'POST',
    url: `${BASE_URL}/v1/payments`,
    headers: { 'content-type': 'application/json' },
    body: '{"amount":1}',
    fingerprint: fp,
    submitted: true,
  });
}

function start(journal: Journal, options: Partial<ServiceWorkerResumerOptions> = {}): { resumer: ServiceWorkerResumer; worker: EventTarget } {
  const worker = new EventTarget();
  const resumer = createServiceWorkerResumer({
    baseUrl: BASE_URL,
    journal,
    worker,
    channel: null,
    retry: { backoffMs: 1, jitter: false, limit: 0 },
    ...options,
  });
  resumers.push(resumer);
  return { resumer, worker };
}

/** Fires a Background Sync event at `worker`; resolves to what its waitUntil() promise did. */
function fireSync(worker: EventTarget, tag = 'oncely', lastChance = false): Promise<PromiseSettledResult<unknown>> {
  const waited: Promise<unknown>[] = [];
  worker.dispatchEvent(Object.assign(new Event('sync'), { tag, lastChance, waitUntil: (promise: Promise<unknown>) => waited.push(promise) }));
  return Promise.allSettled(waited).then((results) => results[0] ?? { status: 'fulfilled', value: 'no waitUntil' });
}

describe('createServiceWorkerResumer', () => {
  it('sends the submitted operations of its scope when the worker starts, and leaves those only prepared alone', async () => {
    const journal = memoryJournal();
    await submitted(journal, 'pay-1');
    await journal.put({ scope: SCOPE, key: 'viewed-1', method: 'POST', url: `${BASE_URL}/v1/payments`, headers: {}, body: '{}', fingerprint: 'f' });
    const { resumer } = start(journal);
    await expect.poll(async () => (await journal.get(SCOPE, 'pay-1'))?.state).toBe('succeeded');
    expect(server.seen.map((seen) => seen.key)).toEqual(['pay-1']);
    expect((await resumer.resume('online')).pending).toEqual([]);
    expect((await journal.get(SCOPE, 'viewed-1'))?.state).toBe('pending');
  });

  it('fails the sync event while an operation is still pending, so the browser fires it again; on the last chance it lets go', async () => {
    server.reply(() => 'network-error');
    const journal = memoryJournal();
    await submitted(journal, 'pay-2');
    const { worker } = start(journal);

    const again = await fireSync(worker);
    expect(again.status).toBe('rejected');
    expect(String((again as PromiseRejectedResult).reason)).toContain('pay-2');
    expect(await fireSync(worker, 'oncely', true)).toEqual({ status: 'fulfilled', value: undefined });
    expect(await fireSync(worker, 'someone-else')).toEqual({ status: 'fulfilled', value: 'no waitUntil' });
    expect((await journal.get(SCOPE, 'pay-2'))?.state).toBe('pending');
  });

  it('waits for an operation another holder has in flight, and sends it once that holder lets go (a tab closed mid-request)', async () => {
    const journal = memoryJournal();
    const refused: string[] = [];
    const claim = journal.claim.bind(journal);
    journal.claim = async (scope, key, owner, ttlMs) => {
      const taken = await claim(scope, key, owner, ttlMs);
      if (!taken) refused.push(key);
      return taken;
    };
    await submitted(journal, 'pay-3');
    expect(await journal.claim(SCOPE, 'pay-3', 'the-page', 60_000)).toBe(true);
    const { resumer } = start(journal);
    const run = resumer.resume('sync');
    // The start run and the sync run were refused, and the sync run looked again at least once.
    await expect.poll(() => refused.length).toBeGreaterThanOrEqual(3);
    expect(server.seen).toEqual([]);

    await journal.release(SCOPE, 'pay-3', 'the-page');

    expect((await run).pending).toEqual([]);
    expect(server.seen.map((seen) => seen.key)).toEqual(['pay-3']);
  });

  it('tells open pages and the app hook what it settled, with the trigger, before the event is done', async () => {
    server.reply(() => json(201, { id: 'pay_1' }));
    const journal = memoryJournal();
    const heard: ServiceWorkerSettled[] = [];
    const page = new BroadcastChannel('oncely-test');
    page.onmessage = (event: MessageEvent<ServiceWorkerSettled>) => heard.push(event.data);
    const hooked: string[] = [];
    const { resumer, worker } = start(journal, {
      channel: 'oncely-test',
      onSettled: async (message) => {
        await new Promise((resolve) => setTimeout(resolve, 50));
        hooked.push(`${message.key} ${message.state} ${message.trigger}`);
      },
    });
    await resumer.resume('start');
    await submitted(journal, 'pay-4');

    expect((await fireSync(worker)).status).toBe('fulfilled');
    expect(hooked).toEqual(['pay-4 succeeded sync']);
    await expect.poll(() => heard.length).toBe(1);
    expect(heard[0]).toMatchObject({ type: 'settled', by: 'service-worker', scope: SCOPE, key: 'pay-4', state: 'succeeded', status: 201, trigger: 'sync' });
    page.close();
  });

  it('sends with the credentials mode it was given and the headers of its own function, never from the journal', async () => {
    const journal = memoryJournal();
    await submitted(journal, 'pay-5');
    const modes: RequestCredentials[] = [];
    const { resumer } = start(journal, {
      credentials: 'include',
      headers: async () => ({ authorization: 'Bearer from-the-app-store' }),
      fetch: (request) => {
        modes.push(request.credentials);
        return fetch(request);
      },
    });
    await resumer.resume('online');
    expect(modes).toEqual(['include']);
    expect(server.seen[0]?.headers.authorization).toBe('Bearer from-the-app-store');
    expect((await journal.get(SCOPE, 'pay-5'))?.headers).toEqual({ 'content-type': 'application/json' });
  });
});
