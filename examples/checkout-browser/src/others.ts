/**
 * Payments this browser started for other orders and never saw confirmed (the tab was closed
 * mid-payment, the train entered a tunnel): on load they are finished with their journaled
 * key and bytes and listed under the form.
 *
 * Only records whose Pay was pressed (`submittedAt` set by `send()`) are resumed; an order that
 * was only rendered stays prepared. `client.resume()` picks the same records, but it would take
 * this page's own order too, skip one another tab is sending, report only once all are done and
 * give up after its retry budget; each is sent through `confirmPayment` instead, so the list
 * shows its progress and an offline spell is waited out as for the order on the page.
 */
import { OperationState, type Client, type OperationRecord } from '../../../src/browser.js';
import { formatAmount } from './order.js';
import { confirmPayment } from './payment.js';
import { CheckoutStatus, type OtherPayment } from './view.js';

function label(record: OperationRecord): string {
  try {
    const body = JSON.parse(record.body ?? '{}') as { amount?: number; currency?: string; reference?: string };
    if (typeof body.amount === 'number' && typeof body.currency === 'string') {
      return `${body.reference ?? record.key} · ${formatAmount(body.amount, body.currency)}`;
    }
  } catch {
    // A body this page did not write: the key is label enough.
  }
  return record.key;
}

/**
 * Resumes the other submitted payments, calling `show` with the list each time one changes.
 *
 * @example
 * ```ts
 * await resumeOtherPayments(client, operation.key, view.showOthers);
 * ```
 */
export async function resumeOtherPayments(client: Client, currentKey: string, show: (others: readonly OtherPayment[]) => void): Promise<void> {
  const records = (await client.journal.list({ scope: client.scope, state: OperationState.Pending })).filter(
    (record) => record.key !== currentKey && record.submittedAt !== null,
  );
  const list = new Map<string, OtherPayment>();
  const update = (record: OperationRecord, status: CheckoutStatus): void => {
    list.set(record.key, { key: record.key, label: label(record), status });
    show([...list.values()]);
  };
  await Promise.all(
    records.map(async (record) => {
      update(record, CheckoutStatus.Confirming);
      // Preparing the journaled request again (same key, bytes and headers) returns a handle
      // to the existing operation; nothing new is journaled.
      const operation = await client.prepare(record.method, record.url, {
        key: record.key,
        headers: record.headers,
        ...(record.body === null ? {} : { body: record.body }),
      });
      await confirmPayment(operation, (status) => update(record, status));
    }),
  );
}
