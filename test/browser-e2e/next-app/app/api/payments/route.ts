/**
 * `POST /api/payments`: the payment, made idempotent by wrapping the route handler. Its INSERT
 * goes through the guard's transaction (`transaction: true`): the payment row and the stored
 * response commit together. `GET /api/payments?reference=…` counts the payments of an order (the
 * test's ledger).
 */
import { withIdempotency } from 'oncely/web';
import { store } from '../../../lib/store';

interface Payment {
  readonly amount: number;
  readonly currency: string;
  readonly reference: string;
}

/** An order whose reference starts with `slow-` takes this long: long enough to reload mid-payment. */
const SLOW_MS = 3000;

export const POST = withIdempotency(
  async (request, oncely) => {
    const payment = (await request.json()) as Payment;
    await oncely!.tx!.run('INSERT INTO payments (key, reference, amount) VALUES ($1, $2, $3)', [oncely!.key, payment.reference, payment.amount]);
    if (payment.reference.startsWith('slow-')) await new Promise((resolve) => setTimeout(resolve, SLOW_MS));
    return Response.json({ id: `pay_${oncely!.key}`, status: 'succeeded', ...payment }, { status: 201 });
  },
  { store, transaction: true, route: '/api/payments', clientId: (request) => request.headers.get('x-account-id') },
);

export async function GET(request: Request): Promise<Response> {
  const reference = new URL(request.url).searchParams.get('reference') ?? '';
  const rows = await store.transaction((tx) => tx.all<{ key: string }>('SELECT key FROM payments WHERE reference = $1 ORDER BY id', [reference]));
  return Response.json({ count: rows.length, keys: rows.map((row) => row.key) });
}
