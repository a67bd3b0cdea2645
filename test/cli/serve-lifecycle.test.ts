import { writeFileSync } from 'node:fs';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { dbCount, eventually, getJson, paymentBody, postPayment, serveFailure, spawnServe, tempDir } from '../reference/serve-process.js';

const { dir, cleanup } = tempDir();
afterAll(cleanup);

/** Whether the payment of `key` is inside its (slow) rail call: EXT2_SENT committed. */
const atRailCall = (db: string, key: string): boolean =>
  dbCount(db, "SELECT COUNT(*) AS n FROM oncely_keys WHERE key = ? AND recovery_point = 'EXT2_SENT'", key) === 1;

describe('oncely serve lifecycle', () => {
  it('on SIGTERM answers new requests 503, lets the in-flight payment finish, and exits 0', async () => {
    const server = await spawnServe(['--db', `${dir}/drain.db`, '--faults', 'slow:ext2:1500']);
    const inFlight = postPayment(server.url, 'drain-1');
    await eventually(() => atRailCall(`${dir}/drain.db`, 'drain-1'));
    server.proc.kill('SIGTERM');
    await new Promise((resolve) => setTimeout(resolve, 100));
    const refused = await postPayment(server.url, 'drain-2');
    expect(refused?.status).toBe(503);
    expect(Number(refused?.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect((await inFlight)?.status).toBe(201);
    expect(await server.exited).toEqual({ code: 0, signal: null });
    const events = server.lines.map((line) => (JSON.parse(line) as { event?: string }).event).filter(Boolean);
    expect(events).toEqual(['started', 'draining', 'stopped']);
  });

  it('drains and exits 0 even when SIGTERM arrives right as the listening line is printed', async () => {
    const server = await spawnServe(['--db', `${dir}/early.db`]);
    server.proc.kill('SIGTERM');
    expect(await server.exited).toEqual({ code: 0, signal: null });
  });

  it('releases the lease of a payment that outlives the grace period, so the next server completes it at once, once', async () => {
    const db = `${dir}/grace.db`;
    // A 30 s lease: were it not released on shutdown, the retry below would get 409 for 30 s.
    const server = await spawnServe(['--db', db, '--lease', '30s', '--grace', '100ms', '--faults', 'slow:ext2:2000']);
    const cut = postPayment(server.url, 'grace-1');
    await eventually(() => atRailCall(db, 'grace-1'));
    server.proc.kill('SIGTERM');
    expect((await server.exited).code).toBe(0);
    await cut;
    const next = await spawnServe(['--db', db, '--lease', '30s', '--recovery-interval', '0']);
    try {
      expect((await postPayment(next.url, 'grace-1'))?.status).toBe(201);
      expect((await getJson<{ count: number }>(next.url, '/v1/ledger')).body.count).toBe(1);
      expect((await getJson<{ count: number }>(next.url, '/v1/rail/charges')).body.count).toBe(1);
    } finally {
      await next.stop();
    }
  });

  it.each([
    ['an invalid --faults spec', ['--faults', 'crash-after:NOWHERE:1'], {}, 1, /invalid fault "crash-after:NOWHERE:1"/],
    ['an invalid ONCELY_FAULTS', [], { ONCELY_FAULTS: 'timeout:ext9:1' }, 1, /invalid fault "timeout:ext9:1"/],
    ['a lease without a unit', ['--lease', '10'], {}, 2, /--lease must be a duration/],
    ['an unknown option', ['--colour'], {}, 2, /colour/],
    ['a port that is not a number', ['--port', 'http'], {}, 2, /--port must be an integer from 0 to 65535/],
  ])('refuses to start with %s, with a clear message and no listening line', async (_name, args, env, code, message) => {
    const result = await serveFailure(['--db', `${dir}/never.db`, ...args], env);
    expect(result.code).toBe(code);
    expect(result.stderr).toMatch(message);
    expect(result.stdout).not.toContain('oncely listening');
  });

  it('refuses a clients file whose client id contains a space, and one that is not JSON, naming the file', async () => {
    writeFileSync(`${dir}/bad-clients.json`, JSON.stringify({ tok: 'acme eu' }));
    writeFileSync(`${dir}/broken-clients.json`, '{"tok": ');
    const [spaced, broken] = await Promise.all([
      serveFailure(['--db', `${dir}/never.db`, '--clients', `${dir}/bad-clients.json`]),
      serveFailure(['--db', `${dir}/never.db`, '--clients', `${dir}/broken-clients.json`]),
    ]);
    expect(spaced.code).toBe(1);
    expect(spaced.stderr).toContain('"acme eu"');
    expect(broken.code).toBe(1);
    expect(broken.stderr).toContain(`--clients ${dir}/broken-clients.json`);
  });

  it('serves payments from PostgreSQL with --db postgres://… in its own schema', async () => {
    const url = process.env['ONCELY_PG_URL'] ?? 'postgres://postgres@127.0.0.1:5432/test';
    const schema = `oncely_serve_${process.pid}`;
    const server = await spawnServe(['--db', url, '--pg-schema', schema, '--lease', '2s', '--faults', 'slow:ext2:100']);
    try {
      expect((await getJson(server.url, '/healthz')).body).toEqual({ status: 'ok', store: 'postgres' });
      const responses = await Promise.all(Array.from({ length: 20 }, () => postPayment(server.url, 'pg-1', paymentBody(31))));
      expect(responses.filter((r) => r?.status === 201 && r.headers.get('idempotency-replay') === null)).toHaveLength(1);
      expect(responses.every((r) => r?.status === 201 || r?.status === 409)).toBe(true);
      expect((await postPayment(server.url, 'pg-1', paymentBody(31)))?.headers.get('idempotency-replay')).toBe('true');
      expect((await postPayment(server.url, 'pg-big', paymentBody(2_000_000)))?.status).toBe(402);
      expect((await getJson<{ count: number }>(server.url, '/v1/ledger')).body.count).toBe(1);
      expect((await getJson<{ count: number }>(server.url, '/v1/rail/charges')).body.count).toBe(1);
      expect((await getJson(server.url, '/v1/idempotency-keys/pg-1', 'test_globex')).status).toBe(404);
    } finally {
      await server.stop();
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await client.end();
    }
  });
});
