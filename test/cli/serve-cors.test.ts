/**
 * `oncely serve --cors ORIGIN` (repeatable): browser callers on another origin can send an
 * idempotent POST and read the headers a client needs; other origins get no CORS headers.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { paymentBody, serveFailure, spawnServe, tempDir, type Served } from '../reference/serve-process.js';

const temp = tempDir();
let served: Served;
beforeAll(async () => {
  served = await spawnServe(['--port', '0', '--db', `${temp.dir}/cors.db`, '--quiet', '--cors', 'http://shop.test', '--cors', 'https://admin.test:8443']);
});
afterAll(async () => {
  await served?.stop();
  temp.cleanup();
});

const preflight = (origin: string) =>
  fetch(`${served.url}/v1/payments`, {
    method: 'OPTIONS',
    headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'idempotency-key, content-type, authorization' },
  });
const post = (origin: string, key: string) =>
  fetch(`${served.url}/v1/payments`, {
    method: 'POST',
    headers: { origin, authorization: 'Bearer test_acme', 'idempotency-key': key, 'content-type': 'application/json' },
    body: paymentBody(),
  });

describe('oncely serve --cors', () => {
  it('answers a preflight from each listed origin, allowing the headers an idempotent POST sends', async () => {
    for (const origin of ['http://shop.test', 'https://admin.test:8443']) {
      const answer = await preflight(origin);
      expect(answer.status).toBe(204);
      expect(answer.headers.get('access-control-allow-origin')).toBe(origin);
      expect(answer.headers.get('access-control-allow-methods')).toContain('POST');
      expect(answer.headers.get('access-control-allow-headers')?.toLowerCase().split(', ')).toEqual(
        expect.arrayContaining(['idempotency-key', 'content-type', 'authorization']),
      );
    }
  });

  it('exposes Idempotency-Key, Idempotency-Replay, Retry-After and Location to a listed origin, on first answers and replays', async () => {
    const first = await post('http://shop.test', 'cors-1');
    const replay = await post('http://shop.test', 'cors-1');
    expect([first.status, replay.status]).toEqual([201, 201]);
    for (const answer of [first, replay]) {
      expect(answer.headers.get('access-control-allow-origin')).toBe('http://shop.test');
      expect(answer.headers.get('access-control-expose-headers')?.toLowerCase().split(', ')).toEqual([
        'idempotency-key',
        'idempotency-replay',
        'retry-after',
        'location',
      ]);
      expect(answer.headers.get('vary')).toContain('Origin');
    }
    expect(replay.headers.get('idempotency-replay')).toBe('true');
  });

  it('gives an origin not listed no CORS headers', async () => {
    const answer = await preflight('http://evil.test');
    expect(answer.headers.get('access-control-allow-origin')).toBeNull();
    expect((await post('http://evil.test', 'cors-2')).headers.get('access-control-allow-origin')).toBeNull();
  });

  it('refuses a --cors value that is not an origin, exit 2', async () => {
    const failed = await serveFailure(['--port', '0', '--db', `${temp.dir}/bad.db`, '--cors', 'http://shop.test/path']);
    expect(failed.code).toBe(2);
    expect(failed.stderr).toContain('--cors takes an origin');
  });
});
