/**
 * A small in-memory idempotent endpoint on 127.0.0.1 whose behaviour can be broken one flaw at a
 * time, so that each `oncely conform` check is seen to fail against the flaw it exists to catch.
 * With no flaw it follows the draft and the article: keys per caller, canonical-JSON
 * fingerprints, 409 + Retry-After in flight, 422 on another body, 400 on a bad key, transient
 * answers not stored.
 *
 * A body with `"slow": true` takes 300 ms (others `workMs`); a request with an `x-fault` header
 * answers 503.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** The ways to break it. */
export interface Flaws {
  /** Runs every request: no idempotency at all. */
  readonly ignoreKey?: boolean;
  /** One key space for every caller. */
  readonly sharedAcrossCallers?: boolean;
  /** Replays the stored response whatever the body (never 422). */
  readonly noFingerprint?: boolean;
  /** Fingerprints the body's bytes, not its JSON value. */
  readonly rawFingerprint?: boolean;
  /** Takes any key: empty, long, with spaces, the first of two. */
  readonly lenientKeys?: boolean;
  /** Refuses the sf-string form `"key"`. */
  readonly rejectQuoted?: boolean;
  /** Stores a 503 as the key's final answer. */
  readonly storeTransient?: boolean;
  /** Answers 409 without Retry-After. */
  readonly no409RetryAfter?: boolean;
  /** Answers 500 to a request without a key. */
  readonly crashWithoutKey?: boolean;
  /** Refuses a finished key's repeat with 422 instead of replaying it (as Powertools with payload validation did). */
  readonly refuseReplays?: boolean;
  /** Replays a stored body re-serialised (the same JSON value, other bytes). */
  readonly rebuildReplay?: boolean;
  /** Not a flaw (the draft allows it): a request without a key simply runs. */
  readonly optionalKey?: boolean;
  /** Not a flaw: how long every execution takes (default 0), so that a burst meets one in flight. */
  readonly workMs?: number;
}

interface Entry {
  readonly fingerprint: string;
  response?: { readonly status: number; readonly body: string; readonly location?: string };
}

const VALID_KEY = /^[A-Za-z0-9_.:~@/+=-]{1,255}$/;
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((name) => [name, canonical((value as Record<string, unknown>)[name])]),
  );
}

/** Starts the endpoint at `http://127.0.0.1:PORT/v1/things`. */
export async function startFlawedEndpoint(flaws: Flaws = {}): Promise<{ url: string; close(): Promise<void> }> {
  const entries = new Map<string, Entry>();
  let created = 0;

  const send = (res: ServerResponse, status: number, body: string, headers: Record<string, string> = {}): void => {
    res.writeHead(status, { 'content-type': status >= 400 ? 'application/problem+json' : 'application/json', ...headers }).end(body);
  };
  const problem = (res: ServerResponse, status: number, type: string, headers: Record<string, string> = {}): void =>
    send(res, status, JSON.stringify({ type: `https://example.test/${type}`, status }), headers);

  async function execute(
    res: ServerResponse,
    req: IncomingMessage,
    value: Record<string, unknown>,
    entry: Entry | undefined,
    release: () => void,
  ): Promise<void> {
    if (value['slow'] === true) await sleep(300);
    else if (flaws.workMs !== undefined) await sleep(flaws.workMs);
    if (req.headers['x-fault'] !== undefined) {
      const body = JSON.stringify({ type: 'https://example.test/unavailable', status: 503 });
      if (entry && flaws.storeTransient) entry.response = { status: 503, body };
      else release();
      return send(res, 503, body, { 'retry-after': '1' });
    }
    created += 1;
    const id = `thing_${created}`;
    const response = { status: 201, body: JSON.stringify({ id, ...value }), location: `/v1/things/${id}` };
    if (entry) entry.response = response;
    send(res, response.status, response.body, { location: response.location });
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    let value: Record<string, unknown>;
    try {
      value = JSON.parse(text) as Record<string, unknown>;
    } catch {
      return problem(res, 400, 'invalid-body');
    }
    if (flaws.ignoreKey) return execute(res, req, value, undefined, () => undefined);
    const keys = req.headersDistinct['idempotency-key'];
    if (keys === undefined && flaws.optionalKey) return execute(res, req, value, undefined, () => undefined);
    if (keys === undefined) return flaws.crashWithoutKey ? send(res, 500, 'internal error') : problem(res, 400, 'missing-key');
    if (keys.length > 1 && !flaws.lenientKeys) return problem(res, 400, 'invalid-key');
    let key = keys[0] ?? '';
    if (/^".*"$/.test(key)) {
      if (flaws.rejectQuoted) return problem(res, 400, 'invalid-key');
      key = key.slice(1, -1);
    }
    if (!flaws.lenientKeys && !VALID_KEY.test(key)) return problem(res, 400, 'invalid-key');
    const caller = flaws.sharedAcrossCallers ? '' : (req.headers.authorization ?? req.headers['x-user'] ?? '');
    const slot = JSON.stringify([caller, key]);
    const fingerprint = flaws.rawFingerprint ? text : JSON.stringify(canonical(value));
    const existing = entries.get(slot);
    if (existing === undefined) {
      // Claimed before the first await: a concurrent duplicate finds the entry.
      const entry: Entry = { fingerprint };
      entries.set(slot, entry);
      return execute(res, req, value, entry, () => entries.delete(slot));
    }
    if (existing.fingerprint !== fingerprint && !flaws.noFingerprint) return problem(res, 422, 'key-reused');
    if (existing.response === undefined) return problem(res, 409, 'in-flight', flaws.no409RetryAfter ? {} : { 'retry-after': '1' });
    if (flaws.refuseReplays) return problem(res, 422, 'payload-mismatch');
    const { status, body, location } = existing.response;
    const replayed = flaws.rebuildReplay ? JSON.stringify(JSON.parse(body), null, 1) : body;
    send(res, status, replayed, { 'idempotency-replay': 'true', ...(location === undefined ? {} : { location }) });
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => send(res, 500, String(error)));
  });
  server.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1/things`,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
