/**
 * A Node request's parts as the guard wants them (`oncely/express`, and `oncely/nestjs` on
 * `platform-express`): a header's value, and the body as a body parser left it or read here.
 *
 * @module
 * @internal
 */
import type { IncomingMessage } from 'node:http';
import type { GuardedBody } from './types.js';

/** A Node request that a body parser may have given a `body` (Express's `req`). */
export type BodiedRequest = IncomingMessage & { body?: unknown };

/** A request header's value; a repeated one joined with `, `. */
export const header = (req: IncomingMessage, name: string): string | null => {
  const value = req.headers[name];
  return value === undefined ? null : Array.isArray(value) ? value.join(', ') : value;
};

const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i;

/**
 * The body as a parser left it, or read here (capped), leaving `req.body` as a parser would.
 *
 * @example
 * ```ts
 * const body = bodyOf(req, guard.maxBodyBytes); // { parsed } after express.json(), else a reader
 * ```
 */
export function bodyOf(req: BodiedRequest, maxBytes: number): GuardedBody | (() => Promise<GuardedBody | 'too-large'>) {
  const parsed = (req as { _body?: boolean })._body === true || req.readableEnded;
  if (parsed) return req.body === undefined ? { none: true } : { parsed: req.body };
  return async () => {
    const length = Number(req.headers['content-length'] ?? 0);
    if (length > maxBytes) return 'too-large';
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of req as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > maxBytes) return 'too-large';
      chunks.push(chunk);
    }
    const bytes = Buffer.concat(chunks);
    // Later body parsers skip a request whose body was read (body-parser's own flag).
    (req as { _body?: boolean })._body = true;
    if (size === 0) return { none: true };
    const contentType = req.headers['content-type'] ?? '';
    req.body = bytes;
    if (JSON_TYPE.test(contentType)) {
      try {
        req.body = JSON.parse(bytes.toString('utf8'));
      } catch {
        // Left as bytes: the handler sees what was sent.
      }
    }
    return { raw: bytes };
  };
}
