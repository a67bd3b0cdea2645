/**
 * A Node response held until the guard has stored it (`oncely/express`, and `oncely/nestjs` on
 * either platform, whose responses end in a Node `ServerResponse`): what the handler writes is
 * kept, handed to the guard, and then sent as it ended, or the guard's answer is sent instead.
 *
 * @module
 * @internal
 */
import type { ServerResponse } from 'node:http';
import type { WireResponse } from '../answers.js';
import type { Execution } from './types.js';
import { handlerHeaders, type HeaderValues } from './wire.js';

/** Makes `headers` the response's headers, and `status` its status. */
function reset(res: ServerResponse, status: number, headers: HeaderValues): void {
  for (const name of res.getHeaderNames()) res.removeHeader(name);
  res.statusCode = status;
  for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
}

/**
 * Puts back the status and headers the handler ended with (`held`, a copy from `getHeaders()`),
 * touching only what changed since (an error handler after a throw): one pass, and usually no
 * `setHeader` at all, where {@link reset} removes and sets every header again.
 */
function restore(res: ServerResponse, status: number, held: HeaderValues): void {
  res.statusCode = status;
  const now = res.getHeaders() as HeaderValues;
  for (const name in now) if (!(name in held)) res.removeHeader(name);
  for (const name in held) if (now[name] !== held[name]) res.setHeader(name, held[name]!);
}

/** Sends a guard's answer over the headers earlier middleware set (`before`). */
export function send(res: ServerResponse, wire: WireResponse, before: HeaderValues): void {
  reset(res, wire.status, { ...before, ...wire.headers });
  const body = wire.status === 204 || wire.status === 304 ? '' : (wire.body ?? '');
  if (wire.status !== 204 && wire.status !== 304) res.setHeader('content-length', typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength);
  res.end(body);
}

/**
 * Readies `target` (Express's `req` or `res`) for the properties the guard adds to it by deleting
 * and setting back `name`, one of its own data properties: its value and attributes stay, only
 * its place in the key order changes. Why: Express gives every `req` and `res` a prototype of
 * their own (`setPrototypeOf` in its init), after which V8 builds a new hidden class for each
 * property added to the object (a few µs each), and every property access in Node's HTTP code and
 * Express afterwards misses V8's inline caches for that new class. A delete turns the object into
 * a dictionary-mode one, once (about 1 µs): its added properties are hash inserts, and its shape is
 * one that the caches already know. Measured with `bench/express-middleware-cpu.ts`: the guard's
 * CPU per request over the unguarded route went from about 37 µs to about 7 µs.
 */
export function readyForOwnProperties<T extends object>(target: T, name: keyof T & string): void {
  const value = target[name];
  delete target[name];
  target[name] = value;
}

type Chunk = string | Uint8Array;
type Callback = (error?: Error | null) => void;

/** A written chunk as bytes, without copying one that already is (as Node's own `write` keeps it). */
const bytesOf = (chunk: Chunk, encoding: BufferEncoding | undefined): Buffer =>
  typeof chunk === 'string'
    ? Buffer.from(chunk, encoding ?? 'utf8')
    : Buffer.isBuffer(chunk)
      ? chunk
      : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);

/**
 * Holds back what the handler writes; when it ends the response, hands it to the guard and sends
 * what the guard answers: exactly what the handler ended with once stored, or the guard's answer
 * instead. Whatever touches the response after its first `end` (a second `end`, an error handler
 * after a throw) changes nothing: the stored answer is the one sent.
 */
export function capture(res: ServerResponse, execution: Execution, before: HeaderValues, onFailure: (error: unknown) => void): void {
  const { writeHead, write, end } = res;
  readyForOwnProperties(res, 'sendDate');
  const chunks: Buffer[] = [];
  let ended = false;
  const keep = (chunk: Chunk | undefined, encoding?: BufferEncoding): void => {
    if (ended || chunk === undefined || chunk === null) return;
    chunks.push(bytesOf(chunk, encoding));
  };
  const later = (callback: Callback | undefined): void => {
    if (callback) queueMicrotask(() => callback());
  };
  res.writeHead = function (this: ServerResponse, status: number, ...rest: unknown[]) {
    if (ended) return res;
    res.statusCode = status;
    const headers = rest.find((item) => typeof item === 'object' && item !== null) as Record<string, string | string[]> | string[] | undefined;
    if (Array.isArray(headers)) for (let at = 0; at + 1 < headers.length; at += 2) res.setHeader(headers[at]!, headers[at + 1]!);
    else if (headers) for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
    return res;
  } as ServerResponse['writeHead'];
  res.write = function (chunk: Chunk, encoding?: BufferEncoding | Callback, callback?: Callback) {
    keep(chunk, typeof encoding === 'string' ? encoding : undefined);
    later(typeof encoding === 'function' ? encoding : callback);
    return true;
  } as ServerResponse['write'];
  res.end = function (chunk?: Chunk | Callback, encoding?: BufferEncoding | Callback, callback?: Callback) {
    const done = typeof chunk === 'function' ? chunk : typeof encoding === 'function' ? encoding : callback;
    if (ended) {
      later(done);
      return res;
    }
    if (typeof chunk !== 'function') keep(chunk, typeof encoding === 'string' ? encoding : undefined);
    ended = true;
    // `res.json`/`res.send` end with one Buffer and no write before: that Buffer is the body.
    const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
    const status = res.statusCode;
    const headers = res.getHeaders() as HeaderValues;
    const handled: WireResponse = { status, headers: handlerHeaders(headers, before), body };
    execution
      .complete(handled)
      .then((answer) => {
        if (res.headersSent) return; // the socket went away meanwhile: nothing left to send to
        if (answer.status === status && answer.body === body) {
          // Sent as the handler ended it. `write` and `end` stay held (a later call changes
          // nothing); Node's `end` sends the head through `writeHead`, so that one goes back.
          restore(res, status, headers);
          res.setHeader('idempotency-key', execution.context.key);
          res.writeHead = writeHead;
          (end as (this: ServerResponse, chunk: Buffer, callback?: Callback) => ServerResponse).call(res, body, done);
        } else {
          Object.assign(res, { writeHead, write, end });
          send(res, answer, before);
        }
      })
      .catch(onFailure);
    return res;
  } as ServerResponse['end'];
}

/**
 * Sends `answer` in place of whatever the framework sends next on `res`: for a framework that
 * always sends something after the point where the guard answered (Nest sends its route's
 * result), so that the guard's answer (a replay, `409`, `422`, …) goes out exactly as decided,
 * over the headers earlier middleware set (`before`).
 *
 * @example
 * ```ts
 * answerInstead(res, decision.response, before); // then let the framework reply as it does
 * ```
 */
export function answerInstead(res: ServerResponse, answer: WireResponse, before: HeaderValues): void {
  const { writeHead, write, end } = res;
  const later = (callback: unknown): void => {
    if (typeof callback === 'function') queueMicrotask(() => (callback as Callback)());
  };
  res.writeHead = function () {
    return res;
  } as ServerResponse['writeHead'];
  res.write = function (_chunk: Chunk, encoding?: BufferEncoding | Callback, callback?: Callback) {
    later(typeof encoding === 'function' ? encoding : callback);
    return true;
  } as ServerResponse['write'];
  res.end = function (chunk?: Chunk | Callback, encoding?: BufferEncoding | Callback, callback?: Callback) {
    Object.assign(res, { writeHead, write, end });
    send(res, answer, before);
    later(typeof chunk === 'function' ? chunk : typeof encoding === 'function' ? encoding : callback);
    return res;
  } as ServerResponse['end'];
}
