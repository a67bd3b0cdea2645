/**
 * Errors that say what happened, against a real local HTTP server (no fetch interception): the
 * server's problem+json in the message and on the error, and the network error behind an
 * unknown outcome.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { HttpError, KeyReusedError, createClient, memoryJournal, type Client } from '../../src/index.js';
import { InvalidKeyError, OperationPendingError } from '../../src/errors.js';

type Handler = (request: IncomingMessage, response: ServerResponse) => void;

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

/** Starts a server on 127.0.0.1, port 0; it is closed after the test. Returns its base URL. */
async function serve(handler: Handler): Promise<string> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** A port that was just listened on and closed again: connecting to it is refused. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

const answer =
  (status: number, body: string, contentType = 'application/problem+json'): Handler =>
  (request, response) => {
    request.resume();
    request.on('end', () => response.writeHead(status, { 'content-type': contentType }).end(body));
  };

const problem = (fields: Record<string, unknown>): string => JSON.stringify(fields);

function client(baseUrl: string, options: { readonly timeoutMs?: number } = {}): Client {
  return createClient({ baseUrl, journal: memoryJournal(), retry: { limit: 1, backoffMs: 1, budgetMs: 2000 }, ...options });
}

async function failure(sending: Promise<unknown>): Promise<unknown> {
  try {
    await sending;
  } catch (error) {
    return error;
  }
  throw new Error('expected the request to fail');
}

describe('error messages from a real server', () => {
  it("puts a 400's problem title and detail in the message and on the HttpError", async () => {
    const body = problem({
      type: 'https://oncely.dev/problems/invalid-request',
      title: 'Invalid request',
      status: 400,
      detail: 'amount must be an integer',
    });
    const baseUrl = await serve(answer(400, body));
    const error = await failure(client(baseUrl).post('v1/payments', { key: 'k', json: { amount: 12.5 } }));
    expect(error).toBeInstanceOf(HttpError);
    const http = error as HttpError;
    expect(http.message).toBe(`POST ${baseUrl}/v1/payments (Idempotency-Key k): the server answered 400 Invalid request: amount must be an integer`);
    expect(http).toMatchObject({
      status: 400,
      title: 'Invalid request',
      detail: 'amount must be an integer',
      problemType: 'https://oncely.dev/problems/invalid-request',
      body,
    });
  });

  it('leaves the problem fields undefined and the message at the status when a final 5xx body is not JSON', async () => {
    // 501 rather than 500: a 500 is retried and ends as OperationPendingError, a 501 is final.
    const baseUrl = await serve(answer(501, '<html><body>Not Implemented</body></html>', 'text/html'));
    const error = await failure(client(baseUrl).post('v1/payments', { key: 'k', json: { amount: 1 } }));
    expect(error).toBeInstanceOf(HttpError);
    const http = error as HttpError;
    expect(http.message).toBe(`POST ${baseUrl}/v1/payments (Idempotency-Key k): the server answered 501`);
    expect([http.title, http.detail, http.problemType]).toEqual([undefined, undefined, undefined]);
    expect(http.body).toBe('<html><body>Not Implemented</body></html>');
  });

  it('caps a 64 KiB detail in the message and keeps it whole on the error', async () => {
    const detail = 'x'.repeat(64 * 1024);
    const baseUrl = await serve(answer(400, problem({ title: 'Invalid request', status: 400, detail })));
    const http = (await failure(client(baseUrl).post('v1/payments', { key: 'k', json: { amount: 1 } }))) as HttpError;
    const prefix = `POST ${baseUrl}/v1/payments (Idempotency-Key k): the server answered 400 `;
    expect(http.message.startsWith(`${prefix}Invalid request: xxx`)).toBe(true);
    expect(http.message.endsWith('…')).toBe(true);
    expect(http.message.length - prefix.length).toBeLessThanOrEqual(301);
    expect(http.detail).toBe(detail);
  });

  it('strips control characters and bidirectional overrides from the server text in the message', async () => {
    const title = 'Invalid\r\nPOST /v1/refunds: the server answered 201\u001b[2K';
    const detail = 'amount\u0000 must\tbe \u202Ereggetni na\u202C\u2028an integer';
    const baseUrl = await serve(answer(400, problem({ title, detail })));
    const http = (await failure(client(baseUrl).post('v1/payments', { key: 'k', json: { amount: 1 } }))) as HttpError;
    expect(http.message).toBe(
      `POST ${baseUrl}/v1/payments (Idempotency-Key k): the server answered 400 ` +
        'Invalid POST /v1/refunds: the server answered 201 [2K: amount must be reggetni na an integer',
    );
    expect(http.message).not.toMatch(/[\p{Cc}\u202A-\u202E\u2028]/u);
    expect([http.title, http.detail]).toEqual([title, detail]);
  });

  it("names the server's detail in a 422 KeyReusedError", async () => {
    const detail = 'the key k was used for POST /v1/payments with another body';
    const body = problem({ type: 'https://oncely.dev/problems/key-reused', title: 'The key was used for a different request', detail });
    const baseUrl = await serve(answer(422, body));
    const error = await failure(client(baseUrl).post('v1/payments', { key: 'k', json: { amount: 1 } }));
    expect(error).toBeInstanceOf(KeyReusedError);
    expect((error as KeyReusedError).message).toBe(
      `POST ${baseUrl}/v1/payments (Idempotency-Key k): the server answered 422: a different request under this key: ${detail}`,
    );
    expect((error as KeyReusedError).detail).toBe(detail);
  });

  it("names the server's detail in a 400 invalid-key InvalidKeyError", async () => {
    const detail = 'the Idempotency-Key header is longer than 255 characters';
    const body = problem({ type: 'https://oncely.dev/problems/invalid-key', title: 'Missing or invalid Idempotency-Key', detail });
    const baseUrl = await serve(answer(400, body));
    const error = await failure(client(baseUrl).post('v1/payments', { key: 'k', json: { amount: 1 } }));
    expect(error).toBeInstanceOf(InvalidKeyError);
    expect((error as InvalidKeyError).message).toBe(`POST ${baseUrl}/v1/payments: the Idempotency-Key "k" was refused by the server (400): ${detail}`);
    expect((error as InvalidKeyError).detail).toBe(detail);
  });

  it('names ECONNREFUSED in the OperationPendingError and passes the network error as its cause when the server is down', async () => {
    const port = await closedPort();
    const error = await failure(client(`http://127.0.0.1:${port}`).post('v1/payments', { key: 'k', json: { amount: 1 } }));
    expect(error).toBeInstanceOf(OperationPendingError);
    const pending = error as OperationPendingError;
    expect(pending.message).toContain(`no response, last error: connect ECONNREFUSED 127.0.0.1:${port}`);
    expect(pending.message).toContain('retry limit of 1 reached');
    expect(pending.attempts).toBe(2);
    // undici's `TypeError: fetch failed`, with the socket's error as its own cause.
    expect(pending.cause).toBeInstanceOf(TypeError);
    expect((pending.cause as Error).cause).toMatchObject({ code: 'ECONNREFUSED' });
  });

  it('names the timeout in the OperationPendingError and passes ky’s TimeoutError as its cause', async () => {
    // Never answers: every attempt runs into the client's timeout.
    const baseUrl = await serve((request) => request.resume());
    const error = await failure(client(baseUrl, { timeoutMs: 50 }).post('v1/payments', { key: 'k', json: { amount: 1 } }));
    expect(error).toBeInstanceOf(OperationPendingError);
    const pending = error as OperationPendingError;
    expect(pending.message).toContain(`no response, last error: Request timed out: POST ${baseUrl}/v1/payments`);
    expect(pending.cause).toMatchObject({ name: 'TimeoutError' });
  });

  it('gives up on a body dripped a byte at a time within timeoutMs, which covers the whole attempt, body included', async () => {
    // Headers at once, then a byte every 20 ms that never ends: a timeout that stopped at the
    // headers would wait for ever.
    const baseUrl = await serve((request, response) => {
      request.resume();
      response.writeHead(201, { 'content-type': 'application/json' }).write('{');
      const timer = setInterval(() => response.write(' '), 20);
      response.on('close', () => clearInterval(timer));
    });
    const error = await failure(client(baseUrl, { timeoutMs: 200 }).post('v1/payments', { key: 'k', json: { amount: 1 } }));
    expect(error).toBeInstanceOf(OperationPendingError);
    const pending = error as OperationPendingError;
    expect(pending.attempts).toBe(2);
    expect(pending.message).toContain(`no response, last error: Request timed out: POST ${baseUrl}/v1/payments`);
    expect(pending.cause).toMatchObject({ name: 'TimeoutError' });
  }, 10_000);
});
