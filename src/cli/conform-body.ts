/**
 * How `oncely conform` reads an answer's body: its first {@link BODY_CAP_BYTES} bytes are kept
 * (the checks read an `id`, a problem `type` or a leaked value there, and the report quotes
 * it), and every byte passes through SHA-256 as it streams by, so two bodies of any size are
 * compared by length and digest without either being held whole. An endpoint that answers
 * 50 MB costs 1 MiB of memory per request in flight, not 50 MB (and its UTF-16 copy).
 *
 * @module
 */
import { createHash } from 'node:crypto';

/** Bytes of one body held in memory (1 MiB); past it, only its length and digest are kept. */
export const BODY_CAP_BYTES = 1024 * 1024;

/** A body as read: the held part, and the whole body's length and digest. */
export interface BodyReading {
  /** The first `cap` bytes as UTF-8 text: the whole body unless `truncated`. */
  readonly text: string;
  /** The whole body's length in bytes. */
  readonly bytes: number;
  /** SHA-256 of the whole body, hex. */
  readonly digest: string;
  /** More than `cap` bytes arrived: `text` is their start. */
  readonly truncated: boolean;
}

/** Takes a body chunk by chunk; {@link BodyReader.finish} once it has ended. */
export interface BodyReader {
  take(chunk: Buffer): void;
  /** Bytes taken so far. */
  readonly bytes: number;
  finish(): BodyReading;
}

/**
 * A reader that holds at most `cap` bytes of the body it is given, and hashes all of it.
 *
 * @example
 * ```ts
 * const reader = createBodyReader(BODY_CAP_BYTES);
 * response.on('data', (chunk: Buffer) => reader.take(chunk));
 * response.on('end', () => resolve(reader.finish()));
 * ```
 */
export function createBodyReader(cap: number): BodyReader {
  const hash = createHash('sha256');
  const held: Buffer[] = [];
  let heldBytes = 0;
  let bytes = 0;
  return {
    get bytes() {
      return bytes;
    },
    take(chunk) {
      hash.update(chunk);
      bytes += chunk.length;
      if (heldBytes >= cap) return;
      const part = chunk.length <= cap - heldBytes ? chunk : chunk.subarray(0, cap - heldBytes);
      held.push(part);
      heldBytes += part.length;
    },
    finish: () => ({ text: Buffer.concat(held).toString('utf8'), bytes, digest: hash.digest('hex'), truncated: bytes > heldBytes }),
  };
}
