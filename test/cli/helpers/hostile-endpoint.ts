/**
 * Loopback endpoints that answer badly on purpose, for `oncely conform`'s bounds: one that drips
 * its body a byte at a time, one that stops answering, one whose answer is 50 MB. Each keeps a
 * payment-like resource per `Idempotency-Key` (a request without one makes a new resource), so
 * the checks run as against a plain idempotent API until the hostile answer comes.
 */
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** What the endpoint does with its `n`th request (from 1), given the resource its key names. */
export type Behaviour = (res: ServerResponse, request: { readonly n: number; readonly id: string; readonly replay: boolean }) => void;

/** A running endpoint: its URL, how many requests it got, and `close`, which ends every connection. */
export interface HostileEndpoint {
  readonly url: string;
  readonly received: () => number;
  close(): Promise<void>;
}

/** The ordinary answer: `201` naming the resource. */
export function created(res: ServerResponse, id: string): void {
  res.writeHead(201, { 'content-type': 'application/json', location: `/v1/things/${id}` }).end(JSON.stringify({ id }));
}

/** Starts an endpoint at `http://127.0.0.1:PORT/v1/things` that answers as `behaviour` says. */
export async function startHostileEndpoint(behaviour: Behaviour): Promise<HostileEndpoint> {
  const ids = new Map<string, string>();
  let n = 0;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    req.resume();
    req.on('end', () => {
      n += 1;
      const key = req.headers['idempotency-key'];
      const slot = typeof key === 'string' ? key : undefined;
      const replay = slot !== undefined && ids.has(slot);
      const id = (slot === undefined ? undefined : ids.get(slot)) ?? `thing_${n}`;
      if (slot !== undefined) ids.set(slot, id);
      behaviour(res, { n, id, replay });
    });
  });
  server.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1/things`,
    received: () => n,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** `size` bytes of `a`, with `last` as the final one, in 64 KiB chunks. */
function* bigBody(size: number, last: string): Generator<Buffer> {
  const chunk = Buffer.alloc(64 * 1024, 'a');
  for (let left = size; left > 0; left -= chunk.length) {
    const part = left > chunk.length ? chunk : Buffer.concat([chunk.subarray(0, left - 1), Buffer.from(last)]);
    yield part;
  }
}

/** SHA-256 (hex) of the body {@link streamBig} sends. */
export function bigDigest(size: number, last = 'a'): string {
  const hash = createHash('sha256');
  for (const part of bigBody(size, last)) hash.update(part);
  return hash.digest('hex');
}

/** Streams `size` bytes (`a`…, then `last`) with backpressure, never holding them whole. */
export function streamBig(res: ServerResponse, id: string, size: number, last = 'a'): void {
  res.writeHead(201, { 'content-type': 'text/plain', location: `/v1/things/${id}` });
  const parts = bigBody(size, last);
  const pump = (): void => {
    for (let next = parts.next(); !next.done; next = parts.next()) if (!res.write(next.value)) return void res.once('drain', pump);
    res.end();
  };
  res.on('error', () => undefined);
  pump();
}

/** Sends `201` headers, then one byte every `everyMs`, never ending (until the connection closes). */
export function drip(res: ServerResponse, everyMs: number): void {
  res.writeHead(201, { 'content-type': 'application/json' });
  res.write('{');
  const timer = setInterval(() => res.write(' '), everyMs);
  res.on('close', () => clearInterval(timer));
}
