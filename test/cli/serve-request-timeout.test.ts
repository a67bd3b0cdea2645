/**
 * `oncely serve --request-timeout`: a request that has not arrived whole in time (a client that
 * sends its headers, then drips its body) is answered 408 and its connection closed, instead of
 * holding a connection and a handler for Node's default of 300 s; nothing of it is stored.
 */
import { connect } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { getJson, paymentBody, postPayment, serveFailure, spawnServe, tempDir } from '../reference/serve-process.js';

const { dir, cleanup } = tempDir();
afterAll(cleanup);

/**
 * Sends a payment's headers, announcing a body it then drips one byte every 100 ms (never all of
 * it), until the server answers or hangs up. Resolves to the status and body of the answer.
 */
function dripPayment(url: string, key: string): Promise<{ status: number; body: string }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname);
    let reply = '';
    const drip = setInterval(() => socket.writable && socket.write(' '), 100);
    const done = (): void => {
      clearInterval(drip);
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(reply)?.[1] ?? 0);
      resolve({ status, body: reply.slice(reply.indexOf('\r\n\r\n') + 4) });
    };
    socket.on('data', (chunk) => (reply += chunk.toString('latin1')));
    socket.on('error', () => undefined);
    socket.on('close', done);
    socket.write(
      `POST /v1/payments HTTP/1.1\r\nhost: ${hostname}\r\nauthorization: Bearer test_acme\r\nidempotency-key: ${key}\r\n` +
        `content-type: application/json\r\ncontent-length: 60000\r\n\r\n${paymentBody().slice(0, 10)}`,
    );
  });
}

describe('oncely serve bounds how long a request may take to arrive', () => {
  it('answers 408 problem+json to a body dripped past --request-timeout, stores nothing, and the key still executes once', async () => {
    const server = await spawnServe(['--db', `${dir}/drip.db`, '--request-timeout', '1s']);
    try {
      const dripped = await dripPayment(server.url, 'drip-1');
      expect(dripped.status).toBe(408);
      expect(JSON.parse(dripped.body)).toMatchObject({ status: 408, type: 'https://oncely.dev/problems/invalid-request' });
      expect((await getJson<{ count: number }>(server.url, '/v1/ledger')).body.count).toBe(0);
      // The key was never consumed: sent whole, it executes.
      expect((await postPayment(server.url, 'drip-1'))?.status).toBe(201);
      expect((await getJson<{ count: number }>(server.url, '/v1/ledger')).body.count).toBe(1);
    } finally {
      await server.stop();
    }
  });

  it('refuses a --request-timeout of 0 (no bound) or without a unit, and exits 2', async () => {
    for (const [value, problem] of [
      ['0s', /--request-timeout must be longer than 0/],
      ['30', /--request-timeout must be a duration/],
    ] as const) {
      const failed = await serveFailure(['--db', `${dir}/refused.db`, '--request-timeout', value]);
      expect(failed.code).toBe(2);
      expect(failed.stderr).toMatch(problem);
      expect(failed.stdout).not.toMatch(/listening/);
    }
  });
});
