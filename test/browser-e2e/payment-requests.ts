/** Records the `POST /v1/payments` requests a tab makes, with when each started and ended. */
import type { Page } from 'playwright';

/** One payment request as the browser saw it. */
export interface PaymentRequest {
  readonly tab: string;
  /** The `Idempotency-Key` header it carried. */
  readonly key: string | undefined;
  readonly startedAt: number;
  /** `Infinity` while in flight. */
  endedAt: number;
  /** The response status, `undefined` when no response arrived (offline, reload). */
  status: number | undefined;
}

/** Starts recording `page`'s payment requests into `into` (returned). */
export function recordPayments(page: Page, tab: string, into: PaymentRequest[] = []): PaymentRequest[] {
  const open = new Map<object, PaymentRequest>();
  const isPayment = (method: string, url: string): boolean => method === 'POST' && new URL(url).pathname === '/v1/payments';
  page.on('request', (request) => {
    if (!isPayment(request.method(), request.url())) return;
    const entry: PaymentRequest = {
      tab,
      key: request.headers()['idempotency-key'],
      startedAt: Date.now(),
      endedAt: Number.POSITIVE_INFINITY,
      status: undefined,
    };
    open.set(request, entry);
    into.push(entry);
  });
  page.on('response', (response) => {
    const entry = open.get(response.request());
    if (entry) entry.status = response.status();
  });
  const finish = (request: object): void => {
    const entry = open.get(request);
    if (!entry) return;
    entry.endedAt = Date.now();
    open.delete(request);
  };
  page.on('requestfinished', finish);
  page.on('requestfailed', finish);
  return into;
}
