/**
 * The HTTP listener of `oncely serve`: `@hono/node-server` on Node's `http` server, with a bound
 * on how long a request may take to arrive, and problem+json for what Node's parser refuses.
 *
 * Why a bound: Node gives a request 300 s (`requestTimeout`) to arrive whole, so a client that
 * sends its headers and then drips its body a byte at a time holds a connection, and a request
 * handler waiting for that body, for five minutes; a few hundred such clients hold the server.
 * With `requestTimeout` set, one that has not arrived whole (headers and body) in time is
 * answered `408` and its connection closed; nothing was stored, since the body is read before
 * the key is claimed. Only the arrival is bounded: a request being processed (a slow rail call)
 * is not.
 *
 * @module
 */
import type { serve as listen } from '@hono/node-server';
import { answerClientError } from '../reference/client-error.node.js';

/** What {@link listenHttp} needs. */
export interface ListenOptions {
  readonly fetch: (request: Request) => Promise<Response>;
  readonly port: number;
  readonly host: string;
  /** How long a request may take to arrive whole, headers and body (`--request-timeout`). */
  readonly requestTimeoutMs: number;
}

/**
 * Node checks its request deadlines only every `connectionsCheckingInterval` (30 s by default),
 * so a 5 s bound could let a request linger 35 s: checked at least every second instead (a walk
 * over the open connections).
 */
const checkEveryMs = (timeoutMs: number): number => Math.max(50, Math.min(1_000, Math.floor(timeoutMs / 2)));

/**
 * Starts listening and prints the listening line (the first line on stdout); resolves with the
 * server, or `undefined` once the reason it cannot listen is on stderr.
 *
 * @example
 * ```ts
 * const server = await listenHttp(hono.serve, { fetch: app.fetch, port: 8787, host: '127.0.0.1', requestTimeoutMs: 30_000 });
 * ```
 */
export function listenHttp(start: typeof listen, options: ListenOptions): Promise<ReturnType<typeof listen> | undefined> {
  const serverOptions = {
    requestTimeout: options.requestTimeoutMs,
    // Node's own: the headers get the smaller of 60 s and the whole request's bound.
    headersTimeout: Math.min(60_000, options.requestTimeoutMs),
    connectionsCheckingInterval: checkEveryMs(options.requestTimeoutMs),
  };
  return new Promise<ReturnType<typeof listen>>((resolve, reject) => {
    const started = start({ fetch: options.fetch, port: options.port, hostname: options.host, serverOptions }, (info) => {
      const host = info.family === 'IPv6' ? `[${info.address}]` : info.address;
      process.stdout.write(`oncely listening on http://${host}:${info.port}\n`);
      resolve(started);
    });
    started.once('error', reject);
    // A request Node's parser refuses (a CR or NUL in a header), or one that did not arrive in
    // time, gets problem+json, not a bare 400 or 408.
    started.on('clientError', answerClientError);
  }).catch((error: unknown) => {
    console.error(`oncely serve: cannot listen: ${error instanceof Error ? error.message : String(error)}`);
    return undefined;
  });
}
