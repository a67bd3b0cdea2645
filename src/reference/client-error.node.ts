/**
 * The answer to a request Node's HTTP parser refuses before any handler sees it (a CR, LF or NUL
 * inside a header, a malformed request line, headers over Node's 16 KiB): without a
 * `clientError` listener Node writes a bare `400 Bad Request` with no body, the one refusal of
 * `oncely serve` that was not problem+json (PROTOCOL.md: every error body is).
 *
 * @module
 */
import type { Duplex } from 'node:stream';
import { ProblemType, problemBody } from '../server/problems.js';

/** What Node's parser reports, by its error code: the status and what to tell the caller. */
function refusal(code: string | undefined): { status: number; reason: string; detail: string } {
  if (code === 'HPE_HEADER_OVERFLOW')
    return { status: 431, reason: 'Request Header Fields Too Large', detail: 'the request headers are over the server limit (16 KiB)' };
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') return { status: 408, reason: 'Request Timeout', detail: 'the request did not arrive in time' };
  return {
    status: 400,
    reason: 'Bad Request',
    detail: 'the request is not valid HTTP/1.1 (a header holds a CR, LF or NUL, or the request line is malformed); nothing was stored',
  };
}

/**
 * Answers a parser error on `socket` with problem+json and closes it. A socket that can no
 * longer be written (the peer is gone) is only destroyed.
 *
 * @example
 * ```ts
 * server.on('clientError', answerClientError);
 * ```
 */
export function answerClientError(error: Error & { code?: string }, socket: Duplex): void {
  if (!socket.writable || error.code === 'ECONNRESET') {
    socket.destroy();
    return;
  }
  const { status, reason, detail } = refusal(error.code);
  const body = JSON.stringify({ ...problemBody(ProblemType.InvalidRequest, detail), status });
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\ncontent-type: application/problem+json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}
