/**
 * A scriptable fake of the oncely server for client tests, behind msw: every request is
 * recorded (method, path, key, exact body bytes, headers) and answered by a script, so a test
 * can say "503 twice, then 201" and then assert on what the client actually sent.
 *
 * `dedupe()` adds the server's idempotency semantics (PROTOCOL.md): the first request per key
 * runs the effect once, later ones replay with `Idempotency-Replay: true`, and a different body
 * under the same key gets `422`. Tests count effects through it.
 */
import { http, HttpResponse } from 'msw';
import { setupServer } from 'msw/node';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { fingerprint } from '../../src/fingerprint.js';

/** One request as the fake server received it. */
export interface SeenRequest {
  readonly method: string;
  readonly path: string;
  /** The raw `Idempotency-Key` header, or `null`. */
  readonly key: string | null;
  /** The exact body text. */
  readonly body: string;
  /** Lower-case header names. */
  readonly headers: Readonly<Record<string, string>>;
}

/** A reply: a Response, or `'network-error'` to cut the connection. */
export type Reply = Response | 'network-error';

/** Decides the reply to a request; `index` counts requests from 0 since the last `reset()`. */
export type Script = (request: SeenRequest, index: number) => Reply | Promise<Reply>;

export const BASE_URL = 'http://oncely.test';

/** A problem+json response as the oncely server sends it. */
export function problem(status: number, type: string, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify({ type: `https://oncely.dev/problems/${type}`, title: type, status, detail: type }), {
    status,
    headers: { 'content-type': 'application/problem+json', ...headers },
  });
}

/** A JSON response. */
export function json(status: number, data: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(data), { status, headers: { 'content-type': 'application/json', ...headers } });
}

/** Replies in order; the last one repeats. */
export function sequence(...replies: Array<() => Reply>): Script {
  return (_request, index) => {
    const make = replies[Math.min(index, replies.length - 1)];
    if (!make) throw new Error('sequence() needs at least one reply');
    return make();
  };
}

/**
 * Wraps `execute` with the server's dedupe: one effect per key, replays marked
 * `Idempotency-Replay: true` with the stored status and body, `422` for another fingerprint.
 */
export function dedupe(execute: Script): Script & { readonly effects: () => number } {
  const stored = new Map<string, { fingerprint: string; status: number; body: string; headers: Record<string, string> }>();
  let effects = 0;
  const script: Script = async (request, index) => {
    if (request.key === null) return problem(400, 'invalid-key');
    const fp = await fingerprint(request.method, request.path, request.body, { contentType: request.headers['content-type'] ?? null });
    const hit = stored.get(request.key);
    if (hit) {
      if (hit.fingerprint !== fp) return problem(422, 'key-reused');
      return new Response(hit.body, { status: hit.status, headers: { ...hit.headers, 'idempotency-replay': 'true' } });
    }
    const reply = await execute(request, index);
    if (reply === 'network-error') return reply;
    effects += 1;
    const body = await reply.clone().text();
    const headers: Record<string, string> = {};
    reply.headers.forEach((value, name) => (headers[name] = value));
    stored.set(request.key, { fingerprint: fp, status: reply.status, body, headers });
    return reply;
  };
  return Object.assign(script, { effects: () => effects });
}

/** The fake server a test file talks to. */
export interface ProtocolServer {
  readonly baseUrl: string;
  /** Requests received since the last `reset()`. */
  readonly seen: SeenRequest[];
  /** Replaces the script (and clears `seen`). */
  reply(script: Script): void;
  /** Resolves once `count` requests have arrived since the last `reply()`: "the attempt is in flight". */
  arrival(count: number): Promise<void>;
}

/**
 * Starts the fake server for the calling test file (msw `setupServer`, unhandled requests are
 * errors) and resets it after each test. Call at the top level of a test file.
 */
export function useProtocolServer(): ProtocolServer {
  const seen: SeenRequest[] = [];
  let waiting: Array<{ readonly count: number; readonly resolve: () => void }> = [];
  let script: Script = () => json(201, { ok: true });
  const server = setupServer(
    http.all(`${BASE_URL}/*`, async ({ request }) => {
      const headers: Record<string, string> = {};
      request.headers.forEach((value, name) => (headers[name.toLowerCase()] = value));
      const url = new URL(request.url);
      const entry: SeenRequest = {
        method: request.method,
        path: url.pathname + url.search,
        key: request.headers.get('idempotency-key'),
        body: await request.text(),
        headers,
      };
      seen.push(entry);
      waiting = waiting.filter((w) => (seen.length >= w.count ? (w.resolve(), false) : true));
      const reply = await script(entry, seen.length - 1);
      return reply === 'network-error' ? HttpResponse.error() : reply;
    }),
  );
  beforeAll(() => server.listen({ onUnhandledRequest: 'error' }));
  afterEach(() => {
    seen.length = 0;
    waiting = [];
    script = () => json(201, { ok: true });
  });
  afterAll(() => server.close());
  return {
    baseUrl: BASE_URL,
    seen,
    reply(next) {
      seen.length = 0;
      script = next;
    },
    arrival(count) {
      if (seen.length >= count) return Promise.resolve();
      return new Promise((resolve) => waiting.push({ count, resolve }));
    },
  };
}
