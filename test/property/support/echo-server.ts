/**
 * An idempotency handler over a real KeyStore whose one operation accepts any JSON body and
 * stores a fixed response: what the fingerprint and key properties need from a server, and
 * nothing that could refuse a body for reasons of its own.
 */
import { createIdempotencyHandler } from '../../../src/server/index.js';
import type { KeyStore } from '../../../src/server/store.js';

export const ECHO_PATH = '/v1/echo';
export const ECHO_TOKEN = 'Bearer test_acme';

/** The handler, and `fetch` over it for a client. */
export interface EchoServer {
  readonly handler: ReturnType<typeof createIdempotencyHandler>;
  fetch(request: Request): Promise<Response>;
}

/** A handler for `POST /v1/echo` on `store` (migrated by the caller), for the client `acme`. */
export function echoServer(store: KeyStore): EchoServer {
  const handler = createIdempotencyHandler({
    store,
    // Every property request is new: a replay from the cache would skip the store it checks.
    replayCache: false,
    operations: [
      {
        method: 'POST',
        path: ECHO_PATH,
        parse: (body) => ({ ok: true, input: body }),
        steps: [],
        final: { kind: 'final', run: async () => ({ status: 201, headers: { 'content-type': 'application/json' }, body: '{"ok":true}' }) },
      },
    ],
    authenticate: (request) => (request.headers.get('authorization') === ECHO_TOKEN ? 'acme' : null),
  });
  return {
    handler,
    fetch: async (request) => (await handler.handle(request)) ?? new Response(null, { status: 404 }),
  };
}
