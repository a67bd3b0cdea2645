/**
 * TanStack Query mutations through oncely (`oncelyMutationFn`), with TanStack's own
 * `MutationObserver` — what `useMutation` runs — and its `dehydrate`/`hydrate`, the mechanism
 * its persisters use to resume paused mutations after a reload.
 */
import { MutationObserver, QueryClient, dehydrate, hydrate, onlineManager } from '@tanstack/react-query';
import { afterEach, describe, expect, it } from 'vitest';
import { oncelyMutationFn } from '../../src/react/mutation.js';
import { OperationPendingError } from '../../src/errors.js';
import { memoryJournal } from '../../src/journal/memory.js';
import type { Journal } from '../../src/journal/types.js';
import { dedupe, json, useProtocolServer } from '../support/protocol-server.js';
import { SCOPE, testClient } from '../client/helpers.js';

const server = useProtocolServer();

interface Order {
  readonly reference: string;
  readonly amount: number;
}

const payOrder = (journal: Journal, retry = {}) =>
  oncelyMutationFn<Order, { id: string }>(testClient({ journal, retry }), (order) => ({
    path: 'v1/payments',
    json: { amount: order.amount, currency: 'EUR', reference: order.reference },
    naturalKey: ['checkout', order.reference],
  }));

afterEach(() => onlineManager.setOnline(true));

describe('oncelyMutationFn with TanStack Query', () => {
  it('executes a payment once when the mutation is fired twice (a double click) and TanStack retries it', async () => {
    const payments = dedupe(() => json(201, { id: 'pay_1' }));
    server.reply(payments);
    const observer = new MutationObserver(new QueryClient(), { mutationFn: payOrder(memoryJournal()), retry: 2, networkMode: 'always' });
    const order = { reference: 'ord-1', amount: 4900 };

    const [first, second] = await Promise.all([observer.mutate(order), observer.mutate(order)]);

    expect(payments.effects()).toBe(1);
    expect(second.key).toBe(first.key);
    expect(new Set(server.seen.map((seen) => seen.key))).toEqual(new Set([first.key]));
  });

  it('journals the payment before its first attempt, so a reload without TanStack persistence still finishes it once with resume()', async () => {
    const journal = memoryJournal();
    const journaledAtFirstAttempt: boolean[] = [];
    server.reply(async (seen) => {
      const record = await journal.get(SCOPE, seen.key ?? '');
      journaledAtFirstAttempt.push(record?.submittedAt !== null && record !== undefined);
      return 'network-error' as const;
    });
    const observer = new MutationObserver(new QueryClient(), { mutationFn: payOrder(journal, { limit: 0 }), retry: false, networkMode: 'always' });

    await expect(observer.mutate({ reference: 'ord-2', amount: 4900 })).rejects.toBeInstanceOf(OperationPendingError);
    expect(journaledAtFirstAttempt).toEqual([true]);
    const key = server.seen[0]?.key;

    const payments = dedupe(() => json(201, { id: 'pay_2' }));
    server.reply(payments);
    const outcomes = await testClient({ journal }).resume();

    expect(outcomes).toMatchObject([{ key, state: 'succeeded' }]);
    expect(payments.effects()).toBe(1);
  });

  it('resumes a mutation paused offline after a reload (dehydrated, hydrated into a new QueryClient) with the same key, once even if two tabs resume it', async () => {
    const journal = memoryJournal();
    onlineManager.setOnline(false);
    const before = new QueryClient();
    before.setMutationDefaults(['pay'], { mutationFn: payOrder(journal), networkMode: 'online', retry: false });
    void new MutationObserver<unknown, Error, Order>(before, { mutationKey: ['pay'] }).mutate({ reference: 'ord-3', amount: 4900 }).catch(() => undefined);
    await expect.poll(() => before.getMutationCache().getAll()[0]?.state.isPaused).toBe(true);
    // What a persister writes to storage before the tab goes away.
    const stored = JSON.stringify(dehydrate(before));
    expect(server.seen).toHaveLength(0);

    const payments = dedupe(() => json(201, { id: 'pay_3' }));
    server.reply(payments);
    const tabs = [new QueryClient(), new QueryClient()];
    for (const tab of tabs) {
      tab.setMutationDefaults(['pay'], { mutationFn: payOrder(journal), networkMode: 'online', retry: false });
      hydrate(tab, JSON.parse(stored));
    }
    onlineManager.setOnline(true);
    await Promise.all(tabs.map((tab) => tab.resumePausedMutations()));

    expect(payments.effects()).toBe(1);
    expect(new Set(server.seen.map((seen) => seen.key)).size).toBe(1);
    expect(tabs.map((tab) => tab.getMutationCache().getAll()[0]?.state.status)).toEqual(['success', 'success']);
  });
});
