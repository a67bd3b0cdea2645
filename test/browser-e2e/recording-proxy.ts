/**
 * A recording proxy in front of a checkout server: the browser talks to it, it forwards every
 * request as it is, and it records each `POST /v1/payments` that reached it — who sent it, its
 * key, when it started and ended, its status. The Service Worker tests take what was sent from
 * here: Playwright's request events for a worker's requests were missed under CI load (a request
 * seen without its end, a `503` not seen at all), while this record is the server's side of the
 * wire, written in the test's own process as the bytes pass.
 */
import { Agent, createServer, request as forward, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One `POST /v1/payments` that reached the server. */
export interface ServedPayment {
  /** `worker` when its `Referer` is the Service Worker's script, `page` otherwise. */
  readonly sender: 'page' | 'worker';
  /** Its `Idempotency-Key`. */
  readonly key: string | undefined;
  readonly startedAt: number;
  /** `Infinity` until its response was written to the browser or the browser went away. */
  endedAt: number;
  /** The server's status, `undefined` when it never answered. */
  status: number | undefined;
}

export interface RecordingProxy {
  /** The origin the browser is sent to. */
  readonly origin: string;
  /** Every payment request that reached it, in arrival order. */
  readonly payments: ServedPayment[];
  close(): Promise<void>;
}

/** Headers that belong to one hop, not to the request or response. */
const HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'upgrade']);
const endToEnd = (headers: IncomingHttpHeaders): IncomingHttpHeaders => Object.fromEntries(Object.entries(headers).filter(([name]) => !HOP.has(name)));

/** Starts a proxy to `upstream` (an origin) on 127.0.0.1; `workerScript` is the worker's path. */
export async function recordingProxy(upstream: string, workerScript = '/sw.js'): Promise<RecordingProxy> {
  const target = new URL(upstream);
  const agent = new Agent({ keepAlive: true });
  const payments: ServedPayment[] = [];
  const server = createServer((incoming, outgoing) => {
    const payment =
      incoming.method === 'POST' && new URL(incoming.url ?? '/', upstream).pathname === '/v1/payments'
        ? ({
            sender: incoming.headers.referer !== undefined && new URL(incoming.headers.referer).pathname === workerScript ? 'worker' : 'page',
            key: incoming.headers['idempotency-key'] as string | undefined,
            startedAt: Date.now(),
            endedAt: Number.POSITIVE_INFINITY,
            status: undefined,
          } satisfies ServedPayment as ServedPayment)
        : undefined;
    if (payment) payments.push(payment);
    const upstreamRequest = forward(
      { agent, host: target.hostname, port: target.port, method: incoming.method, path: incoming.url, headers: endToEnd(incoming.headers) },
      (answer) => {
        if (payment) payment.status = answer.statusCode;
        outgoing.writeHead(answer.statusCode ?? 502, endToEnd(answer.headers));
        answer.pipe(outgoing);
      },
    );
    upstreamRequest.on('error', () => outgoing.destroy());
    incoming.pipe(upstreamRequest);
    // The browser went away (a closed tab, an aborted fetch): so does the request to the server.
    outgoing.on('close', () => {
      if (payment) payment.endedAt = Date.now();
      if (!outgoing.writableFinished) upstreamRequest.destroy();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    payments,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        agent.destroy();
        server.close(() => resolve());
      }),
  };
}
