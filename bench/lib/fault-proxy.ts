/**
 * A fault-injecting HTTP proxy on loopback: every request reaches the upstream server, and a
 * fraction of the responses is dropped on the way back (the client's socket is destroyed after
 * the server has acted). This is the failure that makes a retry dangerous: the effect happened,
 * the client cannot know it.
 *
 * @module
 */
import { Agent, createServer, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Options of {@link startFaultProxy}. */
export interface FaultProxyOptions {
  /** e.g. `http://127.0.0.1:8787` */
  readonly upstream: string;
  /** Probability that a response is dropped, 0–1. */
  readonly dropRate: number;
  /** Seed of the drop decisions. */
  readonly seed?: number;
}

/** A running proxy. */
export interface FaultProxy {
  readonly url: string;
  /** Responses dropped so far. */
  dropped(): number;
  /** Requests forwarded so far. */
  forwarded(): number;
  close(): Promise<void>;
}

/** mulberry32: a tiny seeded PRNG, so a run's drop pattern is reproducible. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Starts the proxy on 127.0.0.1, port 0.
 *
 * @example
 * ```ts
 * const proxy = await startFaultProxy({ upstream: server.url, dropRate: 0.1 });
 * // send requests to proxy.url …
 * await proxy.close();
 * ```
 */
export async function startFaultProxy(options: FaultProxyOptions): Promise<FaultProxy> {
  const upstream = new URL(options.upstream);
  const random = prng(options.seed ?? 1);
  const agent = new Agent({ keepAlive: true, maxSockets: 64 });
  let dropped = 0;
  let forwarded = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const headers: IncomingHttpHeaders = { ...req.headers, host: upstream.host };
      const out = httpRequest({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers, agent }, (upstreamRes) => {
        const body: Buffer[] = [];
        upstreamRes.on('data', (c: Buffer) => body.push(c));
        upstreamRes.on('end', () => {
          forwarded += 1;
          // Decide only once the server has answered: the effect is certainly done.
          if (random() < options.dropRate) {
            dropped += 1;
            req.socket.destroy();
            return;
          }
          res.writeHead(upstreamRes.statusCode ?? 502, upstreamRes.headers);
          res.end(Buffer.concat(body));
        });
      });
      out.on('error', () => req.socket.destroy());
      out.end(Buffer.concat(chunks));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    dropped: () => dropped,
    forwarded: () => forwarded,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
        agent.destroy();
      }),
  };
}
