/**
 * What `oncely conform` puts on the wire: one POST at a time or many at once, each on its own
 * connection when they overlap, with raw `Idempotency-Key` header lines (fetch would join two
 * headers of one name into `a, b`, and refuses the bytes the hostile-key checks need to send).
 *
 * @module
 */
import { Agent as HttpAgent, request as httpRequest, type IncomingHttpHeaders, type OutgoingHttpHeaders } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { BODY_CAP_BYTES, createBodyReader } from './conform-body.js';

/** The answer to one request; of its body, the first {@link BODY_CAP_BYTES} bytes, and the whole one's length and digest. */
export interface Answer {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  /** The body's first {@link BODY_CAP_BYTES} bytes as UTF-8 text: all of it unless `truncated`. */
  readonly body: string;
  /** The whole body's length in bytes, and its SHA-256 (hex): what two bodies are compared by. */
  readonly bytes: number;
  readonly digest: string;
  readonly truncated: boolean;
  /** When the request's last byte was handed to the socket, and when the answer ended (ms, monotonic). */
  readonly sentAt: number;
  readonly doneAt: number;
}

/** One request: the key header's value(s) as sent (absent: no header), the body, the caller. */
export interface Outgoing {
  /** One value per header line; a string is sent as its bytes' Latin-1 reading, so raw UTF-8 can be sent. */
  readonly key?: string | readonly string[];
  readonly body: string;
  /** Whose credentials: caller A (`--token`, `--header`) or caller B (`--token-b`, `--header-b`). */
  readonly caller?: 'a' | 'b';
  /** Added after the caller's headers (the `--fault-header`). */
  readonly extra?: Readonly<Record<string, string>>;
}

/** Sends the requests of every check, and counts them. */
export interface Sender {
  send(outgoing: Outgoing): Promise<Answer>;
  /** Requests sent so far. */
  readonly sent: number;
  close(): void;
}

/** What {@link createSender} needs. */
export interface SenderOptions {
  readonly url: URL;
  /** Headers of caller A and of caller B (lower-case names), each with its content type. */
  readonly headersA: Readonly<Record<string, string>>;
  readonly headersB: Readonly<Record<string, string>> | undefined;
  /** The whole time one request may take, from its first byte sent to its answer's last byte received. */
  readonly timeoutMs: number;
  /** Ends every request in flight, and refuses new ones, once aborted (the run's deadline); its reason is the error. */
  readonly signal?: AbortSignal;
  /** Bytes of a body held; the rest is only hashed. */
  readonly bodyCapBytes?: number;
}

/** What has arrived of an answer so far, for the message of a request given up on. */
function progress(status: number | undefined, bytes: number): string {
  return status === undefined ? 'no status line had arrived' : `status ${status} and ${bytes} bytes of the body had arrived`;
}

/**
 * A sender whose agent opens as many connections as there are requests in flight, so a burst of
 * N is N requests on the wire at once, not a queue.
 *
 * Each request has one deadline, `timeoutMs`, for all of it: a socket `timeout` would restart at
 * every byte, and an endpoint dripping a byte a second would never be given up on.
 *
 * @example
 * ```ts
 * const sender = createSender({ url: new URL('http://127.0.0.1:8787/v1/payments'), headersA: { authorization: 'Bearer test_acme' }, headersB: undefined, timeoutMs: 30_000 });
 * const answer = await sender.send({ key: 'k-1', body: '{"amount":1}' });
 * sender.close();
 * ```
 */
export function createSender(options: SenderOptions): Sender {
  const https = options.url.protocol === 'https:';
  const agent = https ? new HttpsAgent({ keepAlive: true, maxSockets: Infinity }) : new HttpAgent({ keepAlive: true, maxSockets: Infinity });
  const send = https ? httpsRequest : httpRequest;
  const { signal, timeoutMs } = options;
  let sent = 0;
  return {
    get sent() {
      return sent;
    },
    close: () => agent.destroy(),
    send(outgoing) {
      if (signal?.aborted === true) return Promise.reject(signal.reason as Error);
      const caller = outgoing.caller === 'b' ? options.headersB : options.headersA;
      const headers: OutgoingHttpHeaders = { 'content-type': 'application/json', ...caller, ...outgoing.extra };
      if (outgoing.key !== undefined) headers['idempotency-key'] = typeof outgoing.key === 'string' ? outgoing.key : [...outgoing.key];
      const body = Buffer.from(outgoing.body);
      headers['content-length'] = String(body.length);
      sent += 1;
      return new Promise<Answer>((resolve, reject) => {
        let sentAt = performance.now();
        let status: number | undefined;
        const reader = createBodyReader(options.bodyCapBytes ?? BODY_CAP_BYTES);
        const request = send(options.url, { method: 'POST', headers, agent });
        // Settled once: whichever of the answer, an error, the deadline or the run's end comes first.
        let settled = false;
        const settle = (outcome: { answer: Answer } | { error: Error }): void => {
          if (settled) return;
          settled = true;
          clearTimeout(timer);
          signal?.removeEventListener('abort', stop);
          if ('error' in outcome) {
            request.destroy();
            reject(outcome.error);
          } else resolve(outcome.answer);
        };
        const giveUp = (): void => settle({ error: new Error(`no complete answer within ${timeoutMs} ms (--timeout): ${progress(status, reader.bytes)}`) });
        const stop = (): void => settle({ error: signal?.reason as Error });
        const timer = setTimeout(giveUp, timeoutMs);
        signal?.addEventListener('abort', stop, { once: true });
        request.on('response', (response) => {
          status = response.statusCode ?? 0;
          response.on('data', (chunk: Buffer) => reader.take(chunk));
          response.on('error', (error) => settle({ error }));
          response.on('end', () => {
            const { text, bytes, digest, truncated } = reader.finish();
            settle({ answer: { status: status ?? 0, headers: response.headers, body: text, bytes, digest, truncated, sentAt, doneAt: performance.now() } });
          });
        });
        request.on('error', (error) => settle({ error }));
        request.on('finish', () => (sentAt = performance.now()));
        request.end(body);
      });
    },
  };
}

/** The stand-in for a unique value in a `--body` template. */
export const UNIQUE = '{{unique}}';

/**
 * Why `template` cannot be a body template (`undefined` when it can): it must hold
 * {@link UNIQUE} inside a JSON string and be JSON once that is filled in.
 *
 * @example
 * ```ts
 * templateProblem('{"reference":"{{unique}}"}'); // undefined
 * templateProblem('{"amount":1}');               // 'holds no {{unique}} …'
 * ```
 */
export function templateProblem(template: string): string | undefined {
  if (!template.includes(UNIQUE))
    return `holds no ${UNIQUE}: every request needs its own value there (e.g. "reference":"${UNIQUE}"), or two checks would be one request`;
  try {
    JSON.parse(fill(template, 'x'));
    return undefined;
  } catch (error) {
    return `is not JSON once ${UNIQUE} is filled in (put it inside a string): ${error instanceof Error ? error.message : String(error)}`;
  }
}

/**
 * The template with every {@link UNIQUE} replaced by `value`.
 *
 * @example
 * ```ts
 * fill('{"reference":"{{unique}}"}', 'r-1'); // '{"reference":"r-1"}'
 * ```
 */
export function fill(template: string, value: string): string {
  return template.split(UNIQUE).join(value);
}

/** Every object's members in reverse order, recursively: the same JSON value, another text. */
function reversed(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(reversed);
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(
    Object.entries(value)
      .reverse()
      .map(([name, member]) => [name, reversed(member)]),
  );
}

/**
 * The same JSON value as `text` with its object members reversed (compact), or `undefined` when
 * no object in it has two members to swap.
 *
 * @example
 * ```ts
 * reorderedText('{"a":1,"b":2}'); // '{"b":2,"a":1}'
 * ```
 */
export function reorderedText(text: string): string | undefined {
  const value: unknown = JSON.parse(text);
  const reordered = JSON.stringify(reversed(value));
  return reordered === JSON.stringify(value) ? undefined : reordered;
}

/**
 * The same JSON value as `text`, its members in order, with whitespace it did not have (or
 * without the whitespace it had).
 *
 * @example
 * ```ts
 * respacedText('{"a":1}'); // '{\n  "a": 1\n}\n'
 * ```
 */
export function respacedText(text: string): string {
  const value: unknown = JSON.parse(text);
  const pretty = `${JSON.stringify(value, null, 2)}\n`;
  return pretty === text ? JSON.stringify(value) : pretty;
}

/**
 * A header's value, its several lines joined (as a reader would see them).
 *
 * @example
 * ```ts
 * header(answer, 'retry-after'); // '1'
 * ```
 */
export function header(answer: Answer, name: string): string | undefined {
  const value = answer.headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
}
