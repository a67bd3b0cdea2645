/** The checkout page: the order comes from the query (`?order=ord-1&amount=4900`). */
import { CheckoutLoader } from './checkout-loader';

export default async function Page({ searchParams }: { searchParams: Promise<Record<string, string | undefined>> }) {
  const query = await searchParams;
  return <CheckoutLoader order={{ reference: query['order'] ?? 'ord-1', amount: Number(query['amount'] ?? 4900) }} />;
}
