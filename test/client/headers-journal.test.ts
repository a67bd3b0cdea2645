/**
 * What reaches the disk: only allow-listed headers are journaled, never a credential, a custom
 * secret header or URL userinfo; requests that fetch would refuse fail before anything is
 * journaled or sent; the resuming client supplies the headers again (evaluated per attempt).
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isOncelyError } from '../../src/errors.js';
import { createClient } from '../../src/node.js';
import { sqliteJournal, type SqliteJournal } from '../../src/journal/sqlite.node.js';
import { startEffectServer, type EffectServer } from '../journal/fixtures/effect-server.js';

const SECRETS = {
  authorization: 'Bearer tok_SECRET_bearer_1',
  cookie: 'session=SECRET_cookie_2',
  'x-api-key': 'SECRET_api_key_3',
  'api-key': 'SECRET_api_key_4',
  'x-auth-token': 'SECRET_auth_token_5',
};
const CALL_SECRET = 'SECRET_call_header_6';

let dir: string;
let path: string;
let server: EffectServer;
let journal: SqliteJournal;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'oncely-headers-'));
  path = join(dir, 'journal.db');
  server = await startEffectServer();
  journal = sqliteJournal({ path });
});
afterEach(async () => {
  await journal.close();
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Every secret found in the journal file and its WAL. */
function secretsOnDisk(): string[] {
  const bytes = [path, `${path}-wal`]
    .filter(existsSync)
    .map((file) => readFileSync(file).toString('latin1'))
    .join('');
  return [...Object.values(SECRETS), CALL_SECRET, 'userinfo-pass'].filter(
    (secret) => bytes.includes(secret) || bytes.includes(secret.split(' ').pop() ?? secret),
  );
}

const refusal = async (promise: Promise<unknown>): Promise<string> => {
  try {
    await promise;
  } catch (error) {
    if (isOncelyError(error, 'CONFIG')) return error.message;
    throw error;
  }
  throw new Error('expected a CONFIG error');
};

describe('the journal keeps only allow-listed headers', () => {
  it('sends every header on the first attempt and writes none of the secrets to the file or its WAL', async () => {
    const client = createClient({ baseUrl: server.url, journal, headers: SECRETS, journalHeaders: ['X-Tenant'] });
    await client.post('v1/pay', { json: { amount: 1 }, headers: { 'x-custom-credential': CALL_SECRET, 'x-tenant': 'acme', accept: 'application/json' } });
    await client.prepare('POST', 'v1/pay', { json: { amount: 2 }, headers: { 'x-custom-credential': CALL_SECRET } });
    expect(server.attempts.map((attempt) => attempt.process)).toEqual(['tok_SECRET_bearer_1']);

    const records = await journal.list();
    expect(records.map((record) => record.headers)).toEqual([
      { 'content-type': 'application/json', 'x-tenant': 'acme', accept: 'application/json' },
      { 'content-type': 'application/json' },
    ]);
    expect(secretsOnDisk()).toEqual([]);
    await client.close();
  });

  it('resumes with the resuming client’s headers, evaluated for each attempt, and the journaled allow-listed ones', async () => {
    const first = createClient({ baseUrl: server.url, journal, headers: { authorization: 'Bearer old-token' }, journalHeaders: ['x-tenant'] });
    const op = await first.prepare('POST', 'v1/busy', { json: { amount: 3 }, headers: { 'x-tenant': 'acme' } });
    await journal.update(first.scope, op.key, { submittedAt: Date.now() });
    await first.close();

    let calls = 0;
    const seen: Array<Record<string, string>> = [];
    const second = createClient({
      baseUrl: server.url,
      journal,
      journalHeaders: ['x-tenant'],
      headers: async () => {
        calls += 1;
        return { authorization: `Bearer refreshed-${calls}` };
      },
      retry: { maxRetryAfterMs: 10, backoffMs: 1 },
      fetch: async (request) => {
        seen.push(Object.fromEntries(request.headers));
        return fetch(request);
      },
    });
    const [outcome] = await second.resume();
    expect(outcome?.state).toBe('succeeded');
    // /v1/busy answers 503 first: two attempts, each with the token of its own moment.
    expect(server.attempts.map((attempt) => [attempt.outcome, attempt.process])).toEqual([
      ['busy', 'refreshed-1'],
      ['executed', 'refreshed-2'],
    ]);
    expect(seen.map((headers) => headers['x-tenant'])).toEqual(['acme', 'acme']);
    expect(secretsOnDisk()).toEqual([]);
    await second.close();
  });
});

describe('the journal keeps only allow-listed response headers', () => {
  it('keeps a result’s type, location and request id, and drops whatever else the server answered, echoed tokens above all', async () => {
    const echoing = async (request: Request): Promise<Response> => {
      const response = await fetch(request);
      const headers = new Headers(response.headers);
      headers.set('authorization', 'Bearer SECRET_echo_authorization');
      headers.set('x-auth-token', 'SECRET_echo_auth_token');
      headers.set('set-cookie', 'session=SECRET_echo_cookie');
      headers.set('x-custom', 'SECRET_echo_custom');
      headers.set('x-request-id', 'req-42');
      headers.set('location', '/v1/pay/pay_1');
      return new Response(await response.text(), { status: response.status, headers });
    };
    const client = createClient({ baseUrl: server.url, journal, fetch: echoing });
    const live = await client.post('v1/pay', { json: { amount: 1 } });
    // The caller of this process sees every header; the journal keeps the allow-listed ones.
    expect(live.headers['x-custom']).toBe('SECRET_echo_custom');
    const [record] = await journal.list();
    expect(record?.result?.headers).toEqual({
      'content-type': 'application/json',
      date: expect.any(String),
      'x-request-id': 'req-42',
      location: '/v1/pay/pay_1',
    });
    const bytes = [path, `${path}-wal`]
      .filter(existsSync)
      .map((file) => readFileSync(file).toString('latin1'))
      .join('');
    expect(bytes).not.toContain('SECRET_echo');
    await client.close();
  });

  it('drops a location whose query holds a credential (a signed URL)', async () => {
    const signed = async (request: Request): Promise<Response> => {
      const response = await fetch(request);
      const headers = new Headers(response.headers);
      headers.set('location', 'https://files.example/r/1?X-Amz-Signature=SECRET_signed_url');
      return new Response(await response.text(), { status: response.status, headers });
    };
    const client = createClient({ baseUrl: server.url, journal, fetch: signed });
    await client.post('v1/pay', { json: { amount: 1 } });
    expect((await journal.list())[0]?.result?.headers).toEqual({ 'content-type': 'application/json', date: expect.any(String) });
    await client.close();
  });
  it('drops a location that carries an authorization code (an OAuth redirect)', async () => {
    const redirecting = async (request: Request): Promise<Response> => {
      const response = await fetch(request);
      const headers = new Headers(response.headers);
      headers.set('location', 'https://shop.example/callback?code=SECRET_oauth_code&state=xyz');
      return new Response(await response.text(), { status: response.status, headers });
    };
    const client = createClient({ baseUrl: server.url, journal, fetch: redirecting });
    await client.post('v1/pay', { json: { amount: 1 } });
    expect((await journal.list())[0]?.result?.headers).toEqual({ 'content-type': 'application/json', date: expect.any(String) });
    await client.close();
  });
});

describe('requests that could never be sent', () => {
  it('refuses a URL with userinfo, in the base URL or a path, before anything is journaled or sent', async () => {
    expect(() => createClient({ baseUrl: `http://user:userinfo-pass@${new URL(server.url).host}`, journal })).toThrow(/user name or password/);
    const client = createClient({ baseUrl: server.url, journal });
    expect(await refusal(client.post(`http://user:userinfo-pass@${new URL(server.url).host}/v1/pay`, { json: {} }))).toMatch(/user name or password/);
    expect(await journal.list()).toEqual([]);
    expect(server.attempts).toEqual([]);
    expect(secretsOnDisk()).toEqual([]);
    await client.close();
  });

  it('refuses a header value fetch would refuse, a body with no JSON form and another origin, before anything is journaled or sent', async () => {
    const client = createClient({ baseUrl: server.url, journal });
    expect(await refusal(client.post('v1/pay', { json: {}, headers: { 'x-note': 'line\nbreak' } }))).toMatch(/header cannot be sent/);
    expect(await refusal(client.post('v1/pay', { json: { amount: 10n } }))).toMatch(/cannot be serialised/);
    expect(await refusal(client.post('v1/pay', { json: () => 1 }))).toMatch(/no JSON form/);
    expect(await refusal(client.post('http://127.0.0.2:9/v1/pay', { json: {} }))).toMatch(/outside this client's origin/);
    const badClient = createClient({ baseUrl: server.url, journal, headers: { authorization: 'Bearer \u0000' } });
    expect(await refusal(badClient.post('v1/pay', { json: {} }))).toMatch(/header cannot be sent/);
    expect(await journal.list()).toEqual([]);
    expect(server.attempts).toEqual([]);
    await client.close();
    await badClient.close();
  });

  it('refuses a query parameter named like a credential unless the caller opts in', async () => {
    const client = createClient({ baseUrl: server.url, journal });
    for (const name of ['access_token', 'token', 'api_key', 'key', 'signature', 'X-Amz-Signature']) {
      expect(await refusal(client.post(`v1/pay?${name}=abc`, { json: {} }))).toContain(JSON.stringify(name));
    }
    expect(await journal.list()).toEqual([]);
    const optedIn = createClient({ baseUrl: server.url, journal, allowCredentialsInQuery: true });
    await optedIn.post('v1/pay?signature=abc', { json: {} });
    expect((await journal.list()).map((record) => new URL(record.url).search)).toEqual(['?signature=abc']);
    await client.close();
    await optedIn.close();
  });

  it('refuses by rule, not by list: any name holding a credential word, and a JWT under any name', async () => {
    const client = createClient({ baseUrl: server.url, journal });
    const jwt = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhY21lIn0.SECRET_jwt_sig';
    const refused = [
      'api_token',
      'private_token',
      'jwt',
      'passphrase',
      'apiKey',
      'client-secret',
      'X-Amz-Credential',
      'PHPSESSID',
      'oauth_nonce_sig',
      'sid',
      'authToken',
      'ticket',
    ];
    for (const name of refused) expect(await refusal(client.post(`v1/pay?${name}=SECRET_q`, { json: {} }))).toContain(JSON.stringify(name));
    expect(await refusal(client.post(`v1/pay?state=${jwt}`, { json: {} }))).toContain('"state"');
    // Names that merely look alike are sent and journaled.
    for (const name of ['author', 'authority', 'design', 'signal', 'page', 'currency']) await client.post(`v1/pay?${name}=1`, { json: {} });
    expect(await journal.list()).toHaveLength(6);
    // One parameter opted in by name; the others stay refused.
    const optedIn = createClient({ baseUrl: server.url, journal, allowCredentialsInQuery: ['Sort_Key'] });
    await optedIn.post('v1/pay?sort_key=amount', { json: {} });
    expect(await refusal(optedIn.post('v1/pay?sort_key=amount&api_token=SECRET_q', { json: {} }))).toContain('"api_token"');
    expect(server.attempts).toHaveLength(7);
    expect(secretsOnDisk()).toEqual([]);
    const bytes = [path, `${path}-wal`]
      .filter(existsSync)
      .map((file) => readFileSync(file).toString('latin1'))
      .join('');
    expect(bytes).not.toContain('SECRET_');
    await client.close();
    await optedIn.close();
  });

  it("refuses OAuth's authorization code and other one-time codes, and sends codes that name a category", async () => {
    const client = createClient({ baseUrl: server.url, journal });
    const refused = ['code', 'Code', 'code_verifier', 'oauth_verifier', 'device_code', 'verificationCode', 'mfa-code', 'reset_code', 'totp', 'cvv'];
    for (const name of refused) expect(await refusal(client.post(`v1/pay?${name}=SECRET_code`, { json: {} }))).toContain(JSON.stringify(name));
    const categories = ['postcode', 'zip_code', 'countryCode', 'currency_code', 'promo_code', 'status_code', 'nonce', 'state'];
    for (const name of categories) await client.post(`v1/pay?${name}=1`, { json: {} });
    expect(await journal.list()).toHaveLength(categories.length);
    expect(server.attempts).toHaveLength(categories.length);
    const bytes = [path, `${path}-wal`]
      .filter(existsSync)
      .map((file) => readFileSync(file).toString('latin1'))
      .join('');
    expect(bytes).not.toContain('SECRET_code');
    await client.close();
  });

  it('never journals a #fragment, which fetch never sends and may hold a token', async () => {
    const client = createClient({ baseUrl: server.url, journal });
    await client.post('v1/pay#access_token=SECRET_fragment_8', { json: { amount: 1 } });
    await client.prepare('POST', 'v1/pay?page=2#SECRET_fragment_9', { json: { amount: 2 } });
    expect((await journal.list()).map((record) => record.url)).toEqual([`${server.url}/v1/pay`, `${server.url}/v1/pay?page=2`]);
    const bytes = [path, `${path}-wal`]
      .filter(existsSync)
      .map((file) => readFileSync(file).toString('latin1'))
      .join('');
    expect(bytes).not.toContain('SECRET_fragment');
    await client.close();
  });

  it('refuses journalHeaders that name a credential by the same rule', () => {
    for (const name of ['Authorization', 'cookie', 'x-api-key', 'X-CSRF-Token', 'x-session-id', 'private-token']) {
      expect(() => createClient({ baseUrl: server.url, journal, journalHeaders: [name] })).toThrow(/credentials are never written/);
    }
    expect(() => createClient({ baseUrl: server.url, journal, journalHeaders: ['x-tenant', 'x-correlation-id'] })).not.toThrow();
  });

  it('settles as failed, without a request, an operation whose headers cannot be sent and that was never sent (posted or prepared in this process)', async () => {
    // Headers that could be sent when the operation was journaled, and no longer can when it is.
    let calls = 0;
    const broken = createClient({
      baseUrl: server.url,
      journal,
      headers: () => ({ authorization: (calls += 1) % 2 === 0 ? 'Bearer bad\r\nvalue' : 'Bearer ok' }),
    });
    await expect(broken.post('v1/pay', { json: { amount: 4 } })).rejects.toMatchObject({ code: 'REQUEST_REFUSED', settled: true });
    const prepared = await broken.prepare('POST', 'v1/pay', { json: { amount: 6 } });
    await expect(prepared.send()).rejects.toMatchObject({ code: 'REQUEST_REFUSED', settled: true });
    expect(calls).toBe(4);
    expect((await journal.list()).map((record) => record.state)).toEqual(['failed', 'failed']);
    expect(server.attempts).toEqual([]);
    await broken.close();
  });

  it('leaves pending, and its key unusable by another request, an operation submitted by a process that died during its first attempt', async () => {
    // What the journal holds after a SIGKILL while the first request was on the wire: submitted,
    // no attempt counted yet (attempts counts answered ones). The server may have executed it.
    const first = createClient({ baseUrl: server.url, journal });
    const op = await first.prepare('POST', 'v1/pay', { json: { amount: 4 } });
    await journal.update(first.scope, op.key, { submittedAt: Date.now() });
    await first.close();

    const broken = createClient({ baseUrl: server.url, journal, headers: () => ({ authorization: 'Bearer bad\r\nvalue' }) });
    const [outcome] = await broken.resume();
    expect(outcome).toMatchObject({ key: op.key, state: 'pending', error: { code: 'REQUEST_REFUSED', settled: false } });
    expect((await journal.get(broken.scope, op.key))?.state).toBe('pending');
    await broken.close();
    // Another request under that key is refused before anything is sent.
    const fixed = createClient({ baseUrl: server.url, journal });
    await expect(fixed.post('v1/pay', { key: op.key, json: { amount: 5 } })).rejects.toMatchObject({ code: 'KEY_REUSED' });
    expect(server.attempts).toEqual([]);

    // With headers that can be sent, it is resumed under its key with its bytes.
    const [resumed] = await fixed.resume();
    expect(resumed).toMatchObject({ key: op.key, state: 'succeeded' });
    expect(server.attempts).toHaveLength(1);
    await fixed.close();
  });

  it('leaves pending an operation whose headers cannot be sent now but that was sent before', async () => {
    const first = createClient({ baseUrl: server.url, journal, retry: { limit: 0, maxRetryAfterMs: 1 } });
    // /v1/busy: the first attempt reaches the server (503): the operation has been sent once.
    await expect(first.post('v1/busy', { json: { amount: 5 } })).rejects.toMatchObject({ code: 'OPERATION_PENDING' });
    await first.close();

    const broken = createClient({ baseUrl: server.url, journal, headers: () => ({ authorization: 'Bearer bad\nvalue' }) });
    const [outcome] = await broken.resume();
    expect(outcome).toMatchObject({ state: 'pending', error: { code: 'REQUEST_REFUSED', settled: false } });
    expect((await journal.list({ state: 'pending' })).map((record) => record.attempts)).toEqual([1]);
    expect(server.attempts).toHaveLength(1);
    await broken.close();
  });
});
