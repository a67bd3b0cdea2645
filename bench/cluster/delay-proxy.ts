/**
 * A TCP relay on the host's loopback to one node's PostgreSQL, adding a latency that can be
 * switched on and off while connections are open. This kernel has no `netem` qdisc (`tc qdisc
 * add … netem` → "Specified qdisc kind is unknown"), so the latency of the `lossy` fault is added
 * here, in user space; its packet loss is real (iptables in the node's namespace).
 *
 * Each chunk is forwarded `lagMs` after it arrived, and never before the chunk ahead of it: when
 * the latency drops, bytes already waiting are not overtaken.
 *
 * @module
 */
import { connect, createServer, type Socket } from 'node:net';

/** A running relay. */
export interface DelayProxy {
  /** Where clients connect: `127.0.0.1:port`. */
  readonly address: string;
  /** The latency added to each direction, from now on. */
  lagMs: number;
  close(): Promise<void>;
}

/**
 * Starts a relay to `host:port`.
 *
 * @example
 * ```ts
 * const proxy = await startDelayProxy('10.213.0.11', 5432);
 * proxy.lagMs = 50;
 * ```
 */
export async function startDelayProxy(host: string, port: number): Promise<DelayProxy> {
  const sockets = new Set<Socket>();
  const proxy = { lagMs: 0 } as { lagMs: number };
  const pipeLate = (from: Socket, to: Socket): void => {
    let lastDue = 0;
    const later = (action: () => void): void => {
      const due = Math.max(performance.now() + proxy.lagMs, lastDue);
      lastDue = due;
      setTimeout(action, due - performance.now());
    };
    from.on('data', (chunk: Buffer) => later(() => !to.destroyed && to.write(chunk)));
    from.on('end', () => later(() => to.end()));
    from.on('error', () => later(() => to.destroy()));
    from.on('close', () => later(() => to.destroy()));
  };
  const server = createServer((client) => {
    const upstream = connect(port, host);
    sockets.add(client).add(upstream);
    client.once('close', () => sockets.delete(client));
    upstream.once('close', () => sockets.delete(upstream));
    pipeLate(client, upstream);
    pipeLate(upstream, client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port: own } = server.address() as { port: number };
  return Object.assign(proxy, {
    address: `127.0.0.1:${own}`,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  });
}
