import { describe, expect, it } from 'vitest';
import { createClient, memoryJournal } from '../../src/node.js';
import { fingerprint } from '../../src/journal.js';

describe('the Node entry', () => {
  it('journals the same fingerprint with node:crypto as WebCrypto computes, for JSON and text bodies', async () => {
    const journal = memoryJournal();
    const client = createClient({ baseUrl: 'http://127.0.0.1:9/', journal });
    const json = await client.prepare('POST', 'v1/payments?x=1', { json: { reference: 'r', amount: 5 }, key: 'k-json' });
    const text = await client.prepare('PUT', 'v1/notes', { body: 'héllo', key: 'k-text' });
    const byKey = new Map((await journal.list()).map((record) => [record.key, record.fingerprint]));
    expect(byKey.get(json.key)).toBe(await fingerprint('POST', '/v1/payments?x=1', '{"amount":5,"reference":"r"}', { contentType: 'application/json' }));
    expect(byKey.get(text.key)).toBe(await fingerprint('PUT', '/v1/notes', 'héllo', { contentType: 'text/plain;charset=UTF-8' }));
    await client.close();
  });
});
