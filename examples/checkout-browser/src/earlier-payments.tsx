/**
 * Payments this browser started for other orders and never saw confirmed (the tab was closed
 * mid-payment, the train entered a tunnel): listed under the form from `usePendingOperations`,
 * each followed — and finished, with its journaled key and bytes — by its own `useOperation`.
 * A row stays once shown, so the customer sees it turn paid.
 *
 * Only operations whose Pay was pressed are listed (and sent); an order that was only viewed is
 * never charged.
 */
import { useEffect, useState } from 'react';
import { type OperationRecord } from 'oncely/journal';
import { useOncelyClient, useOperation, usePendingOperations } from 'oncely/react';
import { formatAmount } from './order.js';
import { describeStatus } from './status.js';

function label(record: OperationRecord): string {
  try {
    const body = JSON.parse(record.body ?? '{}') as { amount?: number; currency?: string; reference?: string };
    if (typeof body.amount === 'number' && typeof body.currency === 'string')
      return `${body.reference ?? record.key} · ${formatAmount(body.amount, body.currency)}`;
  } catch {
    // Not this page's JSON: the key is label enough.
  }
  return record.key;
}

/** One earlier payment: the journaled request prepared again (same key, bytes, headers), which journals nothing new. */
function EarlierPayment({ record }: { readonly record: OperationRecord }) {
  const { state } = useOperation({
    method: record.method,
    path: record.url,
    key: record.key,
    headers: record.headers,
    ...(record.body === null ? {} : { body: record.body }),
  });
  const shown = describeStatus(state, true);
  return (
    <li data-key={record.key} data-status={shown.status}>
      <span>{label(record)}</span>
      <strong>{shown.badge}</strong>
    </li>
  );
}

/**
 * The list, leaving out the order on the page (`except`, its key).
 *
 * @example
 * ```tsx
 * <EarlierPayments except={key} />
 * ```
 */
export function EarlierPayments({ except }: { readonly except: string }) {
  const client = useOncelyClient();
  const pending = usePendingOperations();
  const [records, setRecords] = useState<ReadonlyMap<string, OperationRecord>>(new Map());

  useEffect(() => {
    const fresh = (pending ?? []).filter((op) => op.key !== except && !records.has(op.key));
    if (fresh.length === 0) return;
    let live = true;
    void Promise.all(fresh.map((op) => client.journal.get(client.scope, op.key))).then((read) => {
      if (!live) return;
      setRecords((shown) => new Map([...shown, ...read.flatMap((record) => (record === undefined ? [] : [[record.key, record] as const]))]));
    });
    return () => {
      live = false;
    };
  }, [client, pending, except, records]);

  if (records.size === 0) return null;
  return (
    <section className="others" aria-label="Earlier payments from this browser">
      <h2>Earlier payments from this browser</h2>
      <ul data-field="others">
        {[...records.values()].map((record) => (
          <EarlierPayment key={record.key} record={record} />
        ))}
      </ul>
    </section>
  );
}
