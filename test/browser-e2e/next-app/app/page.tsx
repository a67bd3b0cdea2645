/**
 * The checkout page: the order comes from the query (`?order=ord-1&amount=4900`). The client
 * component is rendered on the server too (its oncely client is created there, and used only in
 * the browser).
 */
import { Checkout } from './checkout';

export default async function Page({ searchParams }: { searchParams: Promise<Record<string, string | undefined>> }) {
  const query = await searchParams;
  return <Checkout order={{ reference: query['order'] ?? 'ord-1', amount: Number(query['amount'] ?? 4900) }} />;
}
