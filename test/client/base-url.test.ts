/**
 * How request paths join the base URL: a relative path keeps the base path (ky's prefixUrl
 * rule), a path with a leading slash starts at the origin, and nothing leaves the origin.
 */
import { describe, expect, it } from 'vitest';
import { createClient, memoryJournal } from '../../src/index.js';

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
