/**
 * `oncely/react` in Chromium: React 19 under StrictMode, the IndexedDB journal, and a fake
 * payment server behind the client's `fetch` that executes each key once, as oncely's server
 * does, and counts what it executed.
 */
import { StrictMode, useLayoutEffect, useState } from 'react';
import { createRoot, type Root } from 'react-dom/client';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createClient, indexedDbJournal, type Client } from '../../../src/browser.js';
import type { Journal } from '../../../src/journal.js';
import { OncelyProvider, useOperation, usePendingOperations, type OperationView } from '../../../src/react/index.js';

const BASE = 'http://shop.test/';
const ORDER = { amount: 4900, currency: 'EUR' };

/** A payment server: one execution per key (later requests replay it), every request counted. */
function paymentServer(answer: (request: Request) => Response | Promise<Response> = () => Response.json({ id: 'pay_1' }, { status: 201 })) {
  const executed = new Map<string, Response>();
  const requests: string[] = [];
  let hold: Promise<void> = Promise.resolve();
  return {
    requests,
    executed,
    /** Makes the next executions wait until the returned function is called. */
    holdNext(): () => void {
      let release = (): void => undefined;
      hold = new Promise((resolve) => (release = resolve));
      return () => release();
    },
    async fetch(request: Request): Promise<Response> {
      const key = request.headers.get('idempotency-key') ?? '';
      requests.push(key);
      const stored = executed.get(key);
      if (stored) return stored.clone();
      await hold;
      const response = await answer(request);
      if (response.status !== 401) executed.set(key, response.clone());
      return response;
    },
  };
}

/** Counts the journal's `put` calls: how often an operation was journaled. */
function countingJournal(dbName: string): { journal: Journal; puts: () => number } {
  const journal = indexedDbJournal({ dbName });
  let puts = 0;
  const counted: Journal = Object.assign(Object.create(journal) as Journal, {
    put: (operation: Parameters<Journal['put']>[0]) => {
      puts += 1;
      return journal.put(operation);
    },
  });
  return { journal: counted, puts: () => puts };
}

const roots: Root[] = [];
const clients: Client[] = [];
afterEach(async () => {
  for (const root of roots.splice(0)) root.unmount();
  await Promise.all(clients.splice(0).map((client) => client.close()));
  document.body.replaceChildren();
});

function describeView(view: OperationView): string {
  if (view.state === 'failed') return `failed ${'status' in view.error ? String(view.error.status) : ''}`;
  if (view.state === 'pending')
    return `pending${typeof view.error === 'object' && view.error !== null && 'status' in view.error ? ` ${String(view.error.status)}` : ''}`;
  return view.state;
}

function Checkout({ reference }: { reference: string }) {
  const { state, send, key } = useOperation({ path: 'v1/payments', json: { ...ORDER, reference }, naturalKey: ['checkout', reference] });
  return (
    <section data-key={key ?? ''}>
      <p data-testid="state">{describeView(state)}</p>
      <button type="button" onClick={send}>
        Pay
      </button>
    </section>
  );
}

function InProgress() {
  const pending = usePendingOperations();
  return (
    <ul data-testid="in-progress">
      {pending?.map((op) => (
        <li key={op.key}>{op.key}</li>
      ))}
    </ul>
  );
}

function mount(client: Client, children: React.ReactNode): HTMLElement {
  const container = document.createElement('div');
  document.body.append(container);
  const root = createRoot(container);
  roots.push(root);
  root.render(
    <StrictMode>
      <OncelyProvider client={client}>{children}</OncelyProvider>
    </StrictMode>,
  );
  return container;
}

const stateOf = (container: HTMLElement): string | null | undefined => container.querySelector('[data-testid="state"]')?.textContent;

function newClient(journal: Journal, server: ReturnType<typeof paymentServer>, headers: Record<string, string> = {}): Client {
  const client = createClient({ baseUrl: BASE, journal, fetch: (request) => server.fetch(request), headers, retry: { limit: 1, backoffMs: 5 } });
  clients.push(client);
  return client;
}

describe('useOperation under StrictMode', () => {
  it('journals the operation once despite the double effects and a remount, under one key', async () => {
    const { journal, puts } = countingJournal(`react-once-${crypto.randomUUID()}`);
    const client = newClient(journal, paymentServer());
    const first = mount(client, <Checkout reference="ord-1" />);
    await vi.waitFor(() => expect(stateOf(first)).toBe('prepared'));
    const key = first.querySelector('section')?.dataset.key;
    roots.pop()?.unmount();

    const again = mount(client, <Checkout reference="ord-1" />);
    await vi.waitFor(() => expect(stateOf(again)).toBe('prepared'));

    expect(again.querySelector('section')?.dataset.key).toBe(key);
    expect(puts()).toBe(1);
    expect(await journal.list({ scope: client.scope })).toHaveLength(1);
  });

  it('sends once on a double click, shows sending then succeeded, and the server executes one payment', async () => {
    const server = paymentServer();
    const client = newClient(indexedDbJournal({ dbName: `react-click-${crypto.randomUUID()}` }), server);
    const release = server.holdNext();
    const container = mount(client, <Checkout reference="ord-2" />);
    await vi.waitFor(() => expect(stateOf(container)).toBe('prepared'));

    const pay = container.querySelector('button')!;
    pay.click();
    pay.click();
    await vi.waitFor(() => expect(stateOf(container)).toBe('sending'));
    release();

    await vi.waitFor(() => expect(stateOf(container)).toBe('succeeded'));
    expect(server.requests).toHaveLength(1);
    expect(server.executed.size).toBe(1);
  });

  it('after a reload mid-payment (a new client on the same journal), sends the same key again by itself and shows the outcome', async () => {
    const dbName = `react-reload-${crypto.randomUUID()}`;
    const server = paymentServer();
    const before = newClient(indexedDbJournal({ dbName }), server);
    // The page before the reload: Pay pressed, and the tab went away before the answer.
    const op = await before.prepare('POST', 'v1/payments', { json: { ...ORDER, reference: 'ord-3' }, naturalKey: ['checkout', 'ord-3'] });
    await before.journal.update(before.scope, op.key, { submittedAt: Date.now() });
    await before.close();

    const after = newClient(indexedDbJournal({ dbName }), server);
    const container = mount(after, <Checkout reference="ord-3" />);

    await vi.waitFor(() => expect(stateOf(container)).toBe('succeeded'));
    expect(server.requests).toEqual([op.key]);
  });

  it('shows an operation settled before the reload from the journal, sending nothing', async () => {
    const dbName = `react-settled-${crypto.randomUUID()}`;
    const server = paymentServer(() => Response.json({ type: 'https://oncely.dev/problems/declined', title: 'declined' }, { status: 402 }));
    const before = newClient(indexedDbJournal({ dbName }), server);
    await before.post('v1/payments', { json: { ...ORDER, reference: 'ord-4' }, naturalKey: ['checkout', 'ord-4'] }).catch(() => undefined);

    const container = mount(newClient(indexedDbJournal({ dbName }), server), <Checkout reference="ord-4" />);

    await vi.waitFor(() => expect(stateOf(container)).toBe('failed 402'));
    expect(server.requests).toHaveLength(1);
  });

  it('shows a 401 as pending with its status and leaves the payment for the next click', async () => {
    const server = paymentServer((request) =>
      request.headers.get('authorization') === 'Bearer ok' ? Response.json({ id: 'pay_5' }, { status: 201 }) : new Response(null, { status: 401 }),
    );
    const dbName = `react-401-${crypto.randomUUID()}`;
    const container = mount(newClient(indexedDbJournal({ dbName }), server), <Checkout reference="ord-5" />);
    await vi.waitFor(() => expect(stateOf(container)).toBe('prepared'));
    container.querySelector('button')!.click();

    await vi.waitFor(() => expect(stateOf(container)).toBe('pending 401'));
    expect(server.executed.size).toBe(0);
  });
});

describe('useOperation when the checkout changes', () => {
  it("never shows the previous order's operation for the new one", async () => {
    const client = newClient(indexedDbJournal({ dbName: `react-switch-${crypto.randomUUID()}` }), paymentServer());
    const renders: Array<[string, string | undefined, string]> = [];
    function Tracked({ reference }: { reference: string }) {
      const { state, key } = useOperation({ path: 'v1/payments', json: { ...ORDER, reference }, naturalKey: ['checkout', reference] });
      renders.push([reference, key, state.state]);
      return <p data-testid="state">{state.state}</p>;
    }
    const container = document.createElement('div');
    document.body.append(container);
    const root = createRoot(container);
    roots.push(root);
    const render = (reference: string): void =>
      root.render(
        <OncelyProvider client={client}>
          <Tracked reference={reference} />
        </OncelyProvider>,
      );
    render('ord-7a');
    await vi.waitFor(() => expect(stateOf(container)).toBe('prepared'));
    const first = renders.at(-1)?.[1];

    render('ord-7b');
    await vi.waitFor(() => expect(renders.at(-1)?.[1]).toMatch(/./));
    await vi.waitFor(() => expect(renders.at(-1)?.[1]).not.toBe(first));

    expect(renders.filter(([reference, key]) => reference === 'ord-7b' && key === first)).toEqual([]);
  });
});

describe('usePendingOperations', () => {
  it('lists a payment in progress and drops it once it succeeded; an order only viewed is never listed', async () => {
    const server = paymentServer();
    const client = newClient(indexedDbJournal({ dbName: `react-pending-${crypto.randomUUID()}` }), server);
    const release = server.holdNext();
    function Page() {
      const [show] = useState(true);
      return (
        <>
          {show && <Checkout reference="ord-6" />}
          <InProgress />
        </>
      );
    }
    const container = mount(client, <Page />);
    await vi.waitFor(() => expect(stateOf(container)).toBe('prepared'));
    const list = (): string[] => [...container.querySelectorAll('[data-testid="in-progress"] li')].map((li) => li.textContent ?? '');
    expect(list()).toEqual([]);

    container.querySelector('button')!.click();
    const key = container.querySelector('section')?.dataset.key ?? '';
    await vi.waitFor(() => expect(list()).toEqual([key]), { timeout: 10_000 });
    release();

    await vi.waitFor(() => expect(stateOf(container)).toBe('succeeded'));
    await vi.waitFor(() => expect(list()).toEqual([]), { timeout: 10_000 });
  });

  it('shows the first attempt as sending, and never a paid payment as in progress, in any committed render', async () => {
    const server = paymentServer();
    const client = newClient(indexedDbJournal({ dbName: `react-pending-paid-${crypto.randomUUID()}` }), server);
    const release = server.holdNext();
    /** What each committed render showed: the payment's state, and the list's lines. */
    const frames: Array<{ state: string; listed: string[] }> = [];
    function Page() {
      const { state, send, key } = useOperation({ path: 'v1/payments', json: { ...ORDER, reference: 'ord-8' }, naturalKey: ['checkout', 'ord-8'] });
      const pending = usePendingOperations();
      const listed = (pending ?? []).map((op) => `${op.key}: ${op.sending ? `sending, attempt ${op.attempts + 1}` : `in progress, ${op.attempts} attempt(s)`}`);
      useLayoutEffect(() => void frames.push({ state: state.state, listed }));
      return (
        <section data-key={key ?? ''}>
          <p data-testid="state">{state.state}</p>
          <ul data-testid="in-progress">
            {listed.map((line) => (
              <li key={line}>{line}</li>
            ))}
          </ul>
          <button type="button" onClick={send}>
            Pay
          </button>
        </section>
      );
    }
    const container = mount(client, <Page />);
    await vi.waitFor(() => expect(stateOf(container)).toBe('prepared'));
    const key = container.querySelector('section')?.dataset.key ?? '';
    const list = (): string[] => [...container.querySelectorAll('[data-testid="in-progress"] li')].map((li) => li.textContent ?? '');

    container.querySelector('button')!.click();
    // The first attempt is held by the server: on the wire, answered by nobody yet.
    await vi.waitFor(() => expect(list()).toEqual([`${key}: sending, attempt 1`]), { timeout: 10_000 });
    release();
    await vi.waitFor(() => expect(stateOf(container)).toBe('succeeded'));

    expect(frames.filter((frame) => frame.state === 'succeeded' && frame.listed.length > 0)).toEqual([]);
    expect(frames.filter((frame) => frame.state === 'sending' && frame.listed.some((line) => line.includes('0 attempt(s)')))).toEqual([]);
    expect(server.executed.size).toBe(1);
  });
});
