/** Shared set-up of the client tests: a client against the msw fake with fast retries. */
import { createClient, type Client } from '../../src/client/create-client.js';
import type { ClientOptions } from '../../src/client/options.js';
import { memoryJournal } from '../../src/journal/memory.js';
import { scopeOf, type Journal } from '../../src/journal/types.js';
import { BASE_URL } from '../support/protocol-server.js';

/** The scope of {@link testClient}: the origin of the fake server. */
export const SCOPE = scopeOf(BASE_URL);
export const TOKEN = 'Bearer test_acme';
export const PAYMENT = { amount: 1250, currency: 'EUR', reference: 'inv-7' } as const;

/**
 * A client with a memory journal, a credential header and retries of about a millisecond
 * (Retry-After capped at 20 ms), so retry paths run fast with real timers; at most 5 of them,
 * so an operation the fake never answers ends pending at once rather than after the default
 * time budget.
 */
export function testClient(overrides: Partial<ClientOptions> = {}): Client & { readonly journal: Journal } {
  return createClient({
    baseUrl: BASE_URL,
    headers: { authorization: TOKEN, 'x-tenant': 'acme' },
    journal: memoryJournal(),
    ...overrides,
    retry: { limit: 5, backoffMs: 1, jitter: false, maxRetryAfterMs: 20, ...overrides.retry },
  });
}
