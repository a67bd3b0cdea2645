/**
 * A TCP link with latency between a standby and its primary: every byte the primary sends (its
 * WAL) reaches the standby `lagMs` later, as over a link between two zones. `cut()` drops the link
 * and whatever is still on it — the WAL in flight when the primary's machine dies, which an
 * asynchronous standby never receives. (On bare loopback the standby is microseconds behind and
 * an immediate stop loses nothing: that hides what a real network loses.)
 *
 * @module
 */
import { createServer, connect, type Socket } from 'node:net';

/** A running link. */
export interface LagProxy {
  readonly port: number;
  /** Drops every connection and the bytes still in flight. */
  cut(): void;
  close(): Promise<void>;
}

/** Starts a link on 127.0.0.1 to `targetPort`, delaying both directions by `lagMs`. */
export async function startLagProxy(targetPort: number, lagMs: number): Promise<LagProxy> {
  const sockets = new Set<Socket>();
  let cut = false;
  /** Forwards `from` to `to`, each chunk `lagMs` after it arrived (timers of one delay keep order). */
  const pipeLate = (from: Socket, to: Socket): void => {
    from.on('data', (chunk: Buffer) => {
      setTimeout(() => {
        if (!cut && !to.destroyed) to.write(chunk);
      }, lagMs);
    });
    from.on('close', () => setTimeout(() => to.destroy(), lagMs));
    from.on('error', () => to.destroy());
  };
  const server = createServer((client) => {
    if (cut) return client.destroy();
    const upstream = connect(targetPort, '127.0.0.1');
    sockets.add(client).add(upstream);
    pipeLate(client, upstream);
    pipeLate(upstream, client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    port,
    cut() {
      cut = true;
      for (const socket of sockets) socket.destroy();
      sockets.clear();
    },
    close: () =>
      new Promise((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
