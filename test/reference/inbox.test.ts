import { afterEach, describe, expect, it } from 'vitest';
import { BASE, createInProcess, type InProcess } from './in-process.js';

let t: InProcess;
afterEach(async () => {
  await t.app.close(0);
});

const deliver = (body: unknown, token = 'test_acme'): Promise<Response> =>
  t.app.fetch(
    new Request(`${BASE}/v1/events`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    }),
  );

const event = { id: 'evt_1', type: 'invoice.paid', data: { invoice: 'inv-7' } };

describe('reference app: the consumer inbox', () => {
  it('processes a first delivery and answers duplicate to a redelivery, with one effect', async () => {
    t = await createInProcess();
    expect(await (await deliver(event)).json()).toEqual({ status: 'processed' });
    expect(await (await deliver(event)).json()).toEqual({ status: 'duplicate' });
    expect(await t.getJson('/v1/events/evt_1')).toEqual({ id: 'evt_1', type: 'invoice.paid', effects: 1 });
    expect(await t.count('inbox_effects')).toBe(1);
  });

  it('applies 100 concurrent redeliveries of one event exactly once', async () => {
    t = await createInProcess();
    const answers = await Promise.all(Array.from({ length: 100 }, async () => ((await (await deliver(event)).json()) as { status: string }).status));
    expect(answers.filter((status) => status === 'processed')).toHaveLength(1);
    expect(answers.filter((status) => status === 'duplicate')).toHaveLength(99);
    expect((await t.getJson<{ effects: number }>('/v1/events/evt_1')).effects).toBe(1);
    expect(await t.count('inbox_effects')).toBe(1);
  });

  it('scopes event ids per caller: the same id from another caller is its own event, and invisible across callers', async () => {
    t = await createInProcess();
    await deliver(event);
    expect((await t.get('/v1/events/evt_1', 'test_globex')).status).toBe(404);
    expect(await (await deliver(event, 'test_globex')).json()).toEqual({ status: 'processed' });
    expect(await t.count('inbox_effects')).toBe(2);
  });

  it.each([
    ['no id', { type: 'x', data: {} }],
    ['an empty id', { id: '', type: 'x', data: {} }],
    ['data that is not an object', { id: 'e', type: 'x', data: 3 }],
    ['a body that is not JSON', '{"id":'],
  ])('answers 400 to an event with %s and records nothing', async (_name, body) => {
    t = await createInProcess();
    const response = await deliver(body);
    expect(response.status).toBe(400);
    expect(await t.count('inbox_events')).toBe(0);
  });

  it('answers 413 to an event over the body cap and 401 without a token', async () => {
    t = await createInProcess();
    expect((await deliver({ ...event, data: { blob: 'x'.repeat(70_000) } })).status).toBe(413);
    const anonymous = await t.app.fetch(new Request(`${BASE}/v1/events`, { method: 'POST', body: JSON.stringify(event) }));
    expect(anonymous.status).toBe(401);
    expect(await t.count('inbox_events')).toBe(0);
  });

  it('answers 404 for an event never delivered', async () => {
    t = await createInProcess();
    expect((await t.get('/v1/events/evt_missing')).status).toBe(404);
  });
});
