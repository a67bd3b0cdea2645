import { writeFileSync, mkdirSync } from 'node:fs';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MALFORMED_KEYS } from '../reference/malformed-keys.js';
import { dbCount, eventually, getJson, paymentBody, postPayment, rawRequest, spawnServe, stepCount, tempDir, type Served } from '../reference/serve-process.js';

const { dir, cleanup } = tempDir();
const CLIENTS = { test_acme: 'acme', test_globex: 'globex', test_bad: 'bad' };
const METRICS_TOKEN = 'scrape-5f1c2a9e7d3b';
let a: Served; // the response matrix, with a slow rail so "in flight" is observable
let b: Served; // upstream faults: unavailable, then a lost reply, then a lost request
let c1: Served; // c1 and c2 share one SQLite file
let c2: Served;

beforeAll(async () => {
  writeFileSync(`${dir}/clients.json`, JSON.stringify(CLIENTS));
  mkdirSync(`${dir}/www`);
  writeFileSync(`${dir}/www/index.html`, '<h1>checkout</h1>');
  writeFileSync(`${dir}/secret.txt`, 'outside the static root');
  [a, b, c1, c2] = await Promise.all([
    spawnServe(['--db', `${dir}/a.db`, '--lease', '4900ms', '--faults', 'slow:ext2:800', '--clients', `${dir}/clients.json`, '--static', `${dir}/www`], {
      ONCELY_METRICS_TOKEN: METRICS_TOKEN,
    }),
    spawnServe(['--db', `${dir}/b.db`, '--lease', '300ms', '--recovery-interval', '0', '--quiet'], {
      ONCELY_FAULTS: 'unavailable:ext1:1:1,timeout:ext2:1:1,lost:ext2:1:1',
    }),
    spawnServe(['--db', `${dir}/c.db`, '--lease', '2s', '--faults', 'slow:ext2:200', '--quiet']),
    spawnServe(['--db', `${dir}/c.db`, '--lease', '2s', '--faults', 'slow:ext2:200', '--quiet']),
  ]);
});
afterAll(async () => {
  await Promise.all([a, b, c1, c2].filter(Boolean).map((server) => server.stop()));
  cleanup();
});

const problemType = async (response: Response | undefined): Promise<string | undefined> => ((await response?.json()) as { type?: string } | undefined)?.type;

describe('oncely serve over HTTP: the response matrix', () => {
  it('prints the listening URL first, then one JSON log line per request', async () => {
    expect(a.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    await fetch(`${a.url}/healthz`);
    // The log line is written as the response goes out; it may reach our pipe just after the response.
    const logged = () => a.lines.map((line) => JSON.parse(line) as Record<string, unknown>).find((line) => line['path'] === '/healthz');
    await eventually(() => logged() !== undefined);
    const entry = logged();
    expect(entry).toMatchObject({ method: 'GET', path: '/healthz', status: 200 });
    expect(a.lines.some((line) => line.includes('callers loaded from --clients'))).toBe(true);
  });

  it('executes once (201, key echoed) and replays byte-identically with Idempotency-Replay: true', async () => {
    const first = await postPayment(a.url, 'http-1');
    expect(first?.status).toBe(201);
    expect(first?.headers.get('idempotency-key')).toBe('http-1');
    const body = await first?.text();
    const replay = await postPayment(a.url, 'http-1');
    expect(replay?.status).toBe(201);
    expect(replay?.headers.get('idempotency-replay')).toBe('true');
    expect(await replay?.text()).toBe(body);
    expect(stepCount(`${dir}/a.db`, 'H3', 'http-1')).toBe(1);
  });

  it('holds a duplicate while the key is in flight and answers it the original response as a replay', async () => {
    const first = postPayment(a.url, 'http-wait');
    // The owner is inside the 800 ms rail call once EXT2_SENT is committed.
    await eventually(() => dbCount(`${dir}/a.db`, "SELECT COUNT(*) AS n FROM oncely_keys WHERE key = 'http-wait' AND recovery_point = 'EXT2_SENT'") === 1);
    const second = await postPayment(a.url, 'http-wait');
    const original = await first;
    expect([original?.status, second?.status]).toEqual([201, 201]);
    expect(second?.headers.get('idempotency-replay')).toBe('true');
    expect(await second?.text()).toBe(await original?.text());
  });

  it('answers 409 with a short Retry-After while the key is in flight to a client that will not wait (Prefer: wait=0)', async () => {
    const first = postPayment(a.url, 'http-409');
    await eventually(() => dbCount(`${dir}/a.db`, "SELECT COUNT(*) AS n FROM oncely_keys WHERE key = 'http-409' AND recovery_point = 'EXT2_SENT'") === 1);
    const second = await fetch(`${a.url}/v1/payments`, {
      method: 'POST',
      headers: { authorization: 'Bearer test_acme', 'idempotency-key': 'http-409', 'content-type': 'application/json', prefer: 'wait=0' },
      body: paymentBody(),
    });
    expect(second.status).toBe(409);
    expect(second.headers.get('retry-after')).toBe('1');
    expect(await problemType(second)).toBe('https://oncely.dev/problems/key-in-flight');
    expect((await first)?.status).toBe(201);
  });

  it('answers 422 to a reused key with another body, 400 to a missing key or invalid body, 413 to a large body, 401 without a token', async () => {
    await postPayment(a.url, 'http-2', paymentBody(10));
    const reused = await postPayment(a.url, 'http-2', paymentBody(11));
    expect(reused?.status).toBe(422);
    const noKey = await fetch(`${a.url}/v1/payments`, { method: 'POST', headers: { authorization: 'Bearer test_acme' }, body: paymentBody() });
    expect(noKey.status).toBe(400);
    expect((await postPayment(a.url, 'http-3', '{"amount":-1,"currency":"EUR","reference":""}'))?.status).toBe(400);
    expect((await postPayment(a.url, 'http-3', JSON.stringify({ amount: 1, currency: 'EUR', reference: 'x'.repeat(70_000) })))?.status).toBe(413);
    const anonymous = await postPayment(a.url, 'http-4', paymentBody(), 'test_nobody');
    expect(anonymous?.status).toBe(401);
    expect(anonymous?.headers.get('www-authenticate')).toBe('Bearer');
    expect(dbCount(`${dir}/a.db`, "SELECT COUNT(*) AS n FROM oncely_keys WHERE key IN ('http-3', 'http-4')")).toBe(0);
    expect((await postPayment(a.url, 'http-2', paymentBody(10)))?.headers.get('idempotency-replay')).toBe('true');
  });

  it('declines above 1 000 000 with a stored, replayed 402 and no rail charge', async () => {
    const declined = await postPayment(a.url, 'http-big', paymentBody(1_500_000), 'test_globex');
    expect(declined?.status).toBe(402);
    expect(await problemType(declined)).toBe('https://oncely.dev/problems/declined');
    expect((await postPayment(a.url, 'http-big', paymentBody(1_500_000), 'test_globex'))?.headers.get('idempotency-replay')).toBe('true');
    expect((await getJson<{ count: number }>(a.url, '/v1/rail/charges', 'test_globex')).body.count).toBe(0);
  });

  it('answers 503 (upstream unavailable), then 202 for a lost request and for a lost reply, then completes once on retry', async () => {
    const charges = (): number => dbCount(`${dir}/b.db`, "SELECT COUNT(*) AS n FROM rail_charges WHERE client_id = 'acme'");
    const unavailable = await postPayment(b.url, 'fault-1');
    expect(unavailable?.status).toBe(503);
    expect(Number(unavailable?.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    // The first rail call is lost on the way: the rail never got it.
    const requestLost = await postPayment(b.url, 'fault-1');
    expect(requestLost?.status).toBe(202);
    expect(await problemType(requestLost)).toBe('https://oncely.dev/problems/outcome-unknown');
    expect(charges()).toBe(0);
    // The retry probes (absent), calls again with the same K2; the rail applies it and the reply is lost.
    expect((await postPayment(b.url, 'fault-1'))?.status).toBe(202);
    expect(charges()).toBe(1);
    // The next retry's probe finds the charge: no second call, the payment completes.
    expect((await postPayment(b.url, 'fault-1'))?.status).toBe(201);
    expect((await getJson<{ count: number }>(b.url, '/v1/rail/charges')).body.count).toBe(1);
    expect((await getJson<{ count: number }>(b.url, '/v1/ledger')).body.count).toBe(1);
    expect(stepCount(`${dir}/b.db`, 'H1', 'fault-1')).toBe(1);
    expect(stepCount(`${dir}/b.db`, 'H2', 'fault-1')).toBe(1);
  });

  it(`answers 400 to ${MALFORMED_KEYS.length} malformed keys plus raw control, UTF-8 and repeated headers, storing nothing`, async () => {
    for (const [name, key] of MALFORMED_KEYS) {
      const response = await postPayment(a.url, key, paymentBody(), 'test_bad');
      expect({ name, status: response?.status }).toEqual({ name, status: 400 });
    }
    const { port } = new URL(a.url);
    const head = (keyLines: Buffer): Buffer =>
      Buffer.concat([
        Buffer.from(`POST /v1/payments HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\nauthorization: Bearer test_bad\r\ncontent-type: application/json\r\n`),
        keyLines,
      ]);
    const raw = [
      Buffer.from('idempotency-key: key-a\r\nidempotency-key: key-b\r\n'),
      Buffer.from('idempotency-key: \r\n'),
      Buffer.from('idempotency-key: a\x01b\r\n'),
      Buffer.from('idempotency-key: a\x7fb\r\n'),
      Buffer.from('idempotency-key: a\x00b\r\n'),
      Buffer.concat([Buffer.from('idempotency-key: cl'), Buffer.from('é', 'utf8'), Buffer.from('\r\n')]),
      Buffer.concat([Buffer.from('idempotency-key: '), Buffer.from('ключ', 'utf8'), Buffer.from('\r\n')]),
      Buffer.from(`idempotency-key: ${'k'.repeat(256)}\r\n`),
    ];
    for (const lines of raw) expect(await rawRequest(a.url, head(lines), paymentBody())).toBe(400);
    expect(dbCount(`${dir}/a.db`, "SELECT COUNT(*) AS n FROM oncely_keys WHERE client_id = 'bad'")).toBe(0);
    expect((await getJson<{ count: number }>(a.url, '/v1/ledger', 'test_bad')).body.count).toBe(0);
  });

  it('answers a request Node cannot parse (CR or NUL in a header, header overflow) with problem+json, storing nothing', async () => {
    const { hostname, port } = new URL(a.url);
    const exchange = (head: Buffer): Promise<string> =>
      new Promise((resolve) => {
        const socket = connect(Number(port), hostname);
        let reply = '';
        socket.on('data', (chunk) => (reply += chunk.toString('latin1')));
        socket.on('error', () => resolve(reply));
        socket.on('close', () => resolve(reply));
        socket.write(Buffer.concat([head, Buffer.from(`content-length: 2\r\nconnection: close\r\n\r\n{}`)]));
      });
    const start = `POST /v1/payments HTTP/1.1\r\nhost: ${hostname}:${port}\r\nauthorization: Bearer test_bad\r\nidempotency-key: parse-1\r\n`;
    const cases: Array<[string, Buffer, number]> = [
      ['NUL in a header value', Buffer.from(`${start}x-note: a\x00b\r\n`), 400],
      ['a bare CR in a header value', Buffer.from(`${start}x-note: a\rb\r\n`), 400],
      ['headers over 16 KiB', Buffer.from(`${start}x-note: ${'n'.repeat(20_000)}\r\n`), 431],
    ];
    for (const [name, head, status] of cases) {
      const reply = await exchange(head);
      const [headText = '', body = ''] = reply.split('\r\n\r\n');
      expect({ name, status: Number(/^HTTP\/1\.1 (\d{3})/.exec(headText)?.[1]) }).toEqual({ name, status });
      expect(headText.toLowerCase()).toContain('content-type: application/problem+json');
      expect(JSON.parse(body)).toMatchObject({ type: 'https://oncely.dev/problems/invalid-request', status });
    }
    expect(dbCount(`${dir}/a.db`, "SELECT COUNT(*) AS n FROM oncely_keys WHERE key = 'parse-1'")).toBe(0);
  });

  it("keeps callers apart: the same key string is each caller's own operation, and a foreign key lookup is 404", async () => {
    const acme = await postPayment(a.url, 'shared', paymentBody(5));
    expect((await getJson(a.url, '/v1/idempotency-keys/shared', 'test_globex')).status).toBe(404);
    const globex = await postPayment(a.url, 'shared', paymentBody(5), 'test_globex');
    expect([acme?.status, globex?.status, globex?.headers.get('idempotency-replay')]).toEqual([201, 201, null]);
    const id = ((await acme?.json()) as { id: string }).id;
    expect((await getJson(a.url, `/v1/payments/${id}`, 'test_globex')).status).toBe(404);
    expect((await getJson(a.url, `/v1/payments/${id}`)).status).toBe(200);
  });

  it('serves static files from --static on the same origin and nothing outside it', async () => {
    expect(await (await fetch(`${a.url}/`)).text()).toBe('<h1>checkout</h1>');
    expect((await fetch(`${a.url}/%2e%2e/secret.txt`)).status).toBe(404);
    expect((await fetch(`${a.url}/missing.js`)).status).toBe(404);
  });

  it('exposes /healthz, and Prometheus /metrics only with the metrics token ($ONCELY_METRICS_TOKEN), or not at all by default', async () => {
    expect((await getJson(a.url, '/healthz')).body).toEqual({ status: 'ok', store: 'sqlite' });
    expect((await fetch(`${a.url}/metrics`)).status).toBe(401);
    expect((await fetch(`${a.url}/metrics`, { headers: { authorization: 'Bearer test_acme' } })).status).toBe(401);
    expect((await fetch(`${c1.url}/metrics`)).status).toBe(404);
    const metrics = await (await fetch(`${a.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text();
    expect(metrics).toMatch(/oncely_requests_total\{outcome="executed"\} [1-9]/);
    expect(metrics).toMatch(/oncely_requests_total\{outcome="in_flight"\} [1-9]/);
  });
});

describe('oncely serve over HTTP: concurrency', () => {
  it('runs 100 identical concurrent POSTs exactly once; the rest get 409 with Retry-After or the replay', async () => {
    const responses = await Promise.all(Array.from({ length: 100 }, () => postPayment(a.url, 'burst-1', paymentBody(77))));
    const statuses = responses.map((r) => (r?.status === 201 && r.headers.get('idempotency-replay') === 'true' ? 'replay' : r?.status));
    expect(statuses.filter((s) => s === 201)).toHaveLength(1);
    expect(statuses.filter((s) => s === 409 || s === 'replay')).toHaveLength(99);
    for (const r of responses) if (r?.status === 409) expect(Number(r.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(dbCount(`${dir}/a.db`, "SELECT COUNT(*) AS n FROM ledger_entries WHERE idempotency_key = 'burst-1'")).toBe(1);
    expect(dbCount(`${dir}/a.db`, 'SELECT COUNT(*) AS n FROM rail_charges WHERE amount = 77')).toBe(1);
  });

  it('runs 100 identical POSTs split across two serve processes on one SQLite file exactly once', async () => {
    const responses = await Promise.all(Array.from({ length: 100 }, (_, i) => postPayment(i % 2 === 0 ? c1.url : c2.url, 'two-procs')));
    const executed = responses.filter((r) => r?.status === 201 && r.headers.get('idempotency-replay') === null);
    expect(executed).toHaveLength(1);
    expect(responses.every((r) => r?.status === 201 || r?.status === 409)).toBe(true);
    expect((await getJson<{ count: number }>(c1.url, '/v1/ledger')).body.count).toBe(1);
    expect((await getJson<{ count: number }>(c2.url, '/v1/rail/charges')).body.count).toBe(1);
    expect(stepCount(`${dir}/c.db`, 'H1', 'two-procs')).toBe(1);
  });

  it('applies 100 concurrent redeliveries of one event, split across two processes, exactly once', async () => {
    const deliver = (url: string): Promise<string> =>
      fetch(`${url}/v1/events`, {
        method: 'POST',
        headers: { authorization: 'Bearer test_acme', 'content-type': 'application/json' },
        body: JSON.stringify({ id: 'evt-http', type: 'invoice.paid', data: { n: 1 } }),
      }).then(async (r) => ((await r.json()) as { status: string }).status);
    const answers = await Promise.all(Array.from({ length: 100 }, (_, i) => deliver(i % 2 === 0 ? c1.url : c2.url)));
    expect(answers.filter((s) => s === 'processed')).toHaveLength(1);
    expect(answers.filter((s) => s === 'duplicate')).toHaveLength(99);
    expect((await getJson<{ effects: number }>(c2.url, '/v1/events/evt-http')).body.effects).toBe(1);
  });
});
