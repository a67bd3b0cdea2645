/**
 * `postgresKeyStore(...).watch` on a real server: LISTEN/NOTIFY across two stores (two instances)
 * on one schema. The NOTIFY rides in the transaction that ends the lease (finish, release, park,
 * forget) of a watched key, is not sent by one that rolls back nor for a key nobody watches,
 * carries a hash rather than the key, and a listening connection that dies is reported and
 * replaced.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createInFlight } from '../../../src/server/in-flight.js';
import { endChannel, endPayload } from '../../../src/server/store/postgres-listen.node.js';
import { postgresKeyStore } from '../../../src/server/store/postgres.node.js';
import { WatchEvent, type KeyStore, type Lease } from '../../../src/server/store/types.js';
import { canRunServerTests, requireServerUrl } from '../../support/pg.js';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const RESPONSE = { status: 201, headers: { 'content-type': 'application/json' }, body: '{"id":"pay_1"}' };
const schema = `oncely_t_listen_${process.pid}`;
const appName = `oncely_t_listen_${process.pid}`;
let url: string;
let admin: pg.Client;
let a: KeyStore;
let b: KeyStore;
let loadsOnB = 0;

const admit = async (key: string): Promise<Lease> => {
  const admitted = await a.admit({ clientId: 'acme', key, requestHash: 'h', endpoint: 'POST /v1/payments', requestBody: '{}', leaseMs: 10_000, ttlMs: 60_000 });
  if (!admitted.owned) throw new Error(`${key} is not new`);
  return admitted.lease;
};

/** The next event `store` reports for the key, or `'none'` after `ms`. */
async function nextEvent(store: KeyStore, key: string, ms: number, during: () => Promise<unknown>): Promise<WatchEvent | 'none'> {
  let heard: (event: WatchEvent) => void = () => undefined;
  const event = new Promise<WatchEvent>((resolve) => (heard = resolve));
  const stop = await store.watch!('acme', key, (e) => heard(e));
  try {
    await during();
    return await Promise.race([event, sleep(ms).then(() => 'none' as const)]);
  } finally {
    stop();
  }
}

describe.skipIf(!(await canRunServerTests()))('postgresKeyStore.watch: LISTEN/NOTIFY between instances', () => {
  beforeAll(async () => {
    url = await requireServerUrl('listen');
    admin = new pg.Client({ connectionString: url });
    await admin.connect();
    a = postgresKeyStore({ connectionString: url, schema });
    const inner = postgresKeyStore({ connectionString: `${url}${url.includes('?') ? '&' : '?'}application_name=${appName}`, schema });
    b = { ...inner, dialect: inner.dialect, load: (clientId, key) => ((loadsOnB += 1), inner.load(clientId, key)) };
    await a.migrate?.();
  });
  afterAll(async () => {
    await Promise.all([a?.close?.(), b?.close?.()]);
    await admin?.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin?.end();
  });

  it('tells a watcher on another store when the owner finishes, releases, parks or forgets the key', async () => {
    const ends: Array<WatchEvent | 'none'> = [];
    for (const [key, end] of [
      ['finish-1', (lease: Lease) => a.write(lease, { kind: 'finish', response: RESPONSE })],
      ['release-1', (lease: Lease) => a.write(lease, { kind: 'release', forget: false })],
      ['park-1', (lease: Lease) => a.write(lease, { kind: 'park', retryAfterMs: 1000 })],
      ['forget-1', (lease: Lease) => a.write(lease, { kind: 'release', forget: true })],
    ] as const) {
      const lease = await admit(key);
      ends.push(await nextEvent(b, key, 5000, () => end(lease)));
    }
    expect(ends).toEqual([WatchEvent.Ended, WatchEvent.Ended, WatchEvent.Ended, WatchEvent.Ended]);
  });

  it('says nothing while the owner commits phases, nor for a finish that rolls back', async () => {
    const lease = await admit('quiet-1');
    const phase = nextEvent(b, 'quiet-1', 500, () => a.write(lease, { kind: 'phase', recoveryPoint: 'H1_DONE', leaseMs: 10_000 }));
    expect(await phase).toBe('none');
    const failing = nextEvent(b, 'quiet-1', 500, () =>
      a
        .write(lease, { kind: 'finish', response: RESPONSE }, async (tx) => {
          await tx.run('SELECT 1 / 0');
        })
        .catch(() => undefined),
    );
    expect(await failing).toBe('none');
    expect((await b.load('acme', 'quiet-1'))?.state).toBe('started');
  });

  it('notifies with a hash of (client_id, key), never the key itself, and only for a key someone watches', async () => {
    const listener = new pg.Client({ connectionString: url });
    await listener.connect();
    const payloads: string[] = [];
    listener.on('notification', (message) => payloads.push(message.payload ?? ''));
    await listener.query(`LISTEN ${endChannel(schema)}`);
    try {
      // Nobody waits for this one: its finish sends no NOTIFY (each costs every commit a lock).
      await a.write(await admit('unwatched-1'), { kind: 'finish', response: RESPONSE });
      const watched = await admit('secret-key-1');
      const stop = await b.watch!('acme', 'secret-key-1', () => undefined);
      await a.write(watched, { kind: 'finish', response: RESPONSE });
      stop();
      for (let i = 0; i < 100 && payloads.length === 0; i += 1) await sleep(20);
      await sleep(200);
      expect(payloads).toEqual([endPayload('acme', 'secret-key-1')]);
      expect(payloads[0]).not.toContain('secret');
    } finally {
      await listener.end();
    }
  });

  it('computes the payload as Node does for client ids and keys holding separators and non-ASCII, on finish and on release', async () => {
    const listener = new pg.Client({ connectionString: url });
    await listener.connect();
    const payloads: string[] = [];
    listener.on('notification', (message) => payloads.push(message.payload ?? ''));
    await listener.query(`LISTEN ${endChannel(schema)}`);
    // The last two joined with a newline (as version 1 of the schema did) spell one payload.
    const pairs = [
      ['org:ä', 'acme:inv-1'],
      ['org:ä:acme', 'inv-1'],
      ['line\nbreak', 'k'],
      ['line', 'break\nk'],
    ] as const;
    try {
      for (const [i, [clientId, key]] of pairs.entries()) {
        const admitted = await a.admit({ clientId, key, requestHash: 'h', endpoint: 'POST /v1/payments', requestBody: '{}', leaseMs: 10_000, ttlMs: 60_000 });
        if (!admitted.owned) throw new Error(`${key} is not new`);
        const stop = await b.watch!(clientId, key, () => undefined);
        // The finish function (schema) and the release statement (store) each compute it.
        await (i % 2 === 0 ? a.write(admitted.lease, { kind: 'finish', response: RESPONSE }) : a.write(admitted.lease, { kind: 'release', forget: false }));
        stop();
      }
      for (let i = 0; i < 100 && payloads.length < pairs.length; i += 1) await sleep(20);
      expect(payloads).toEqual(pairs.map(([clientId, key]) => endPayload(clientId, key)));
      expect(new Set(payloads).size).toBe(pairs.length);
    } finally {
      await listener.end();
    }
  });

  it('wakes a duplicate waiting on another instance when the original finishes, without polling the row', async () => {
    const lease = await admit('wait-1');
    const inFlight = createInFlight(b, 10_000);
    loadsOnB = 0;
    let woken = false;
    const waited = inFlight.wait('acme', 'wait-1', 8000).then(() => void (woken = true));
    // A poll would have loaded the row five times by now (50, 150, 350, 750, 1250 ms).
    await sleep(1500);
    expect(woken).toBe(false);
    expect(loadsOnB).toBe(1);
    await a.write(lease, { kind: 'finish', response: RESPONSE });
    await waited;
    expect(loadsOnB).toBe(2);
  });

  it('reports a dropped listening connection to its watchers, who then poll, and listens again on the next watch', async () => {
    const lease = await admit('drop-1');
    const events: WatchEvent[] = [];
    await b.watch!('acme', 'drop-1', (event) => events.push(event));
    const waited = createInFlight(b, 10_000).wait('acme', 'drop-1', 8000);
    const killed = await admin.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1 AND query LIKE 'LISTEN%'`, [appName]);
    expect(killed.rowCount).toBe(1);
    for (let i = 0; i < 100 && events.length === 0; i += 1) await sleep(20);
    expect(events).toEqual([WatchEvent.Lost]);
    // The waiter polls now: it still sees the end.
    await a.write(lease, { kind: 'finish', response: RESPONSE });
    await waited;
    const again = await admit('drop-2');
    expect(await nextEvent(b, 'drop-2', 5000, () => a.write(again, { kind: 'finish', response: RESPONSE }))).toBe(WatchEvent.Ended);
  });
});
