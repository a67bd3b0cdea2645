/**
 * One order route in Express and in Hono, the handler unchanged plus one `idempotent()` with
 * `transaction: true` on a real PostgreSQL pool: the ORM suite drives both through one harness.
 */
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import express from 'express';
import { Hono } from 'hono';
import { idempotent as expressIdempotent } from '../../src/server/middleware/express.js';
import type { GuardContext, GuardOptions } from '../../src/server/middleware/guard.js';
import { idempotent as honoIdempotent } from '../../src/server/middleware/hono.js';

/** What the route does for one request (`hold`: the request carried `x-hold: 1`); throwing answers 500. */
export type Behaviour = (oncely: GuardContext, hold: boolean) => Promise<readonly [number, unknown]>;

export interface App {
  readonly url: string;
  close(): Promise<void>;
}

const listening = async (server: import('node:http').Server | ReturnType<typeof serve>): Promise<App> => {
  if (!server.listening) await new Promise((resolve) => server.once('listening', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, close: () => new Promise((resolve) => server.close(() => resolve())) };
};

export const APPS = {
  async express(options: GuardOptions, behaviour: Behaviour): Promise<App> {
    const app = express();
    app.use(express.json());
    app.post('/orders', expressIdempotent({ ...options, clientId: () => 'acme' }), async (req, res, next) => {
      try {
        const [status, body] = await behaviour(req.oncely!, req.headers['x-hold'] === '1');
        res.status(status).json(body);
      } catch (error) {
        next(error); // Express 4 answers 500
      }
    });
    return listening(app.listen(0, '127.0.0.1'));
  },
  async hono(options: GuardOptions, behaviour: Behaviour): Promise<App> {
    const app = new Hono();
    app.post('/orders', honoIdempotent({ ...options, clientId: () => 'acme' }), async (c) => {
      const [status, body] = await behaviour(c.get('oncely'), c.req.header('x-hold') === '1');
      return c.json(body, status as 201);
    });
    app.onError((_error, c) => c.text('failed', 500)); // Hono's default answers 500 too, and logs the stack
    return listening(serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }));
  },
};

export type Framework = keyof typeof APPS;

/** A promise and its resolver: a point in the handler the test waits for, or lets it past. */
export function gate(): { readonly reached: Promise<void>; open(): void } {
  let open!: () => void;
  const reached = new Promise<void>((resolve) => (open = resolve));
  return { reached, open };
}

/** POSTs the same order body under `key`. */
export const post = (base: string, key: string, headers: Record<string, string> = {}): Promise<Response> =>
  fetch(`${base}/orders`, {
    method: 'POST',
    headers: { 'idempotency-key': key, 'content-type': 'application/json', ...headers },
    body: '{"item":"espresso"}',
  });

/** The status, replay header and JSON body of a response (its body read). */
export const answer = async (response: Response) => ({
  status: response.status,
  replay: response.headers.get('idempotency-replay'),
  body: (await response.json().catch(() => null)) as unknown,
});
