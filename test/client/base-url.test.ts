/**
 * How request paths join the base URL: a relative path keeps the base path (ky's prefixUrl
 * rule), a path with a leading slash starts at the origin, and nothing leaves the origin; and
 * when a relative base URL is resolved.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createClient as createBrowserClient } from '../../src/browser.js';
import { ErrorCode, createClient, isOncelyError, memoryJournal } from '../../src/index.js';

const sentTo = async (baseUrl: string, path: string): Promise<string> => {
  const urls: string[] = [];
  const client = createClient({
    baseUrl,
    journal: memoryJournal(),
    fetch: async (request) => {
      urls.push(request.url);
      return new Response('{}', { status: 201, headers: { 'content-type': 'application/json' } });
    },
  });
  await client.post(path, { json: { amount: 1 } });
  await client.close();
  return urls[0] as string;
};

describe('baseUrl and request paths', () => {
  it.each([
    ['http://api.test/api', 'v1/payments', 'http://api.test/api/v1/payments'],
    ['http://api.test/api/', 'v1/payments', 'http://api.test/api/v1/payments'],
    ['http://api.test', 'v1/payments', 'http://api.test/v1/payments'],
    ['http://api.test/api', '/v1/payments', 'http://api.test/v1/payments'],
    ['http://api.test/api', 'v1/payments?page=2', 'http://api.test/api/v1/payments?page=2'],
    ['http://api.test/api?x=1#frag', 'v1/payments', 'http://api.test/api/v1/payments'],
  ])('sends %s + %s to %s', async (baseUrl, path, expected) => {
    expect(await sentTo(baseUrl, path)).toBe(expected);
  });

  it('keeps the scope of a base URL with a path to its origin', () => {
    const client = createClient({ baseUrl: 'http://api.test/api/v2', journal: memoryJournal() });
    expect(client.scope).toBe('http://api.test');
  });
});

/**
 * A module that creates a client at its top level with a relative base (`'/api'`) is evaluated
 * where there is no page too: Next.js renders client components on the server. Node has no
 * `location`, as a server render has none.
 */
describe('a relative baseUrl where there is no page (a server-side render)', () => {
  afterEach(() => vi.unstubAllGlobals());

  const recording = (): { fetch: (request: Request) => Promise<Response>; urls: string[] } => {
    const urls: string[] = [];
    return {
      urls,
      fetch: async (request) => {
        urls.push(request.url);
        return new Response('{"id":"pay_1"}', { status: 201, headers: { 'content-type': 'application/json' } });
      },
    };
  };

  it('creates the client without throwing, with the browser entry and its IndexedDB default journal too', async () => {
    expect(globalThis.location).toBeUndefined();
    expect(() => createBrowserClient({ baseUrl: '/api', scope: 'checkout' })).not.toThrow();
    const client = createClient({ baseUrl: '/api', journal: memoryJournal() });
    await client.close();
  });

  it('refuses a request made there with a config error naming the call and the base, before journaling or sending anything', async () => {
    const journal = memoryJournal();
    const { fetch, urls } = recording();
    const client = createClient({ baseUrl: '/api', journal, fetch });
    const error: unknown = await client.post('payments', { json: { amount: 1 } }).catch((caught: unknown) => caught);
    expect(isOncelyError(error, ErrorCode.Config)).toBe(true);
    expect((error as Error).message).toMatch(/^POST "payments": baseUrl "\/api" is relative, and there is no page here/);
    await expect(client.prepare('PUT', 'orders/1', { json: {} })).rejects.toThrow(/^PUT "orders\/1": baseUrl "\/api" is relative/);
    expect(urls).toEqual([]);
    expect(await journal.list({})).toEqual([]);
  });

  it('refuses pending(), resume() and reading client.scope there the same way: each needs the origin', async () => {
    const client = createClient({ baseUrl: '/api', journal: memoryJournal() });
    await expect(client.pending()).rejects.toThrow(/^pending\(\): baseUrl "\/api" is relative/);
    await expect(client.resume()).rejects.toThrow(/^resume\(\): baseUrl "\/api" is relative/);
    expect(() => client.scope).toThrow(/^client\.scope: baseUrl "\/api" is relative/);
  });

  it('resolves the base against the location there is at the first call, once', async () => {
    const { fetch, urls } = recording();
    const client = createClient({ baseUrl: '/api', scope: 'checkout', journal: memoryJournal(), fetch });
    vi.stubGlobal('location', new URL('https://shop.test/orders/42?step=pay'));
    const result = await client.post('payments', { json: { amount: 1 } });
    expect(result.status).toBe(201);
    vi.stubGlobal('location', new URL('https://elsewhere.test/'));
    expect(client.scope).toBe('https://shop.test#checkout');
    await client.post('payments', { json: { amount: 2 } });
    expect(urls).toEqual(['https://shop.test/api/payments', 'https://shop.test/api/payments']);
    await client.close();
  });

  it.each([
    ['http://[::1', /baseUrl "http:\/\/\[::1" is not an absolute URL/],
    ['ftp://files.test/', /baseUrl "ftp:\/\/files.test\/" is not an http\(s\) URL/],
    ['http://ada:secret@api.test/', /baseUrl holds a user name or password/],
  ])('still refuses %s when the client is created, page or none', (baseUrl, message) => {
    expect(() => createClient({ baseUrl, journal: memoryJournal() })).toThrow(message);
  });
});
