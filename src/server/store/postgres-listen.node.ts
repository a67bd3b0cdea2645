/**
 * {@link KeyStore.watch} on PostgreSQL: `LISTEN/NOTIFY`, so that a duplicate waiting on one
 * instance hears the moment the original's owner on another lets go of the key, with no poll.
 *
 * - A watch marks its row `watched` (once listening); the statement that then finishes, releases,
 *   parks or forgets that row (`postgres-schema.node.ts`, `postgres.node.ts`) sends `NOTIFY` in
 *   its own transaction: it is delivered when, and only if, that transaction commits. A
 *   row nobody watches sends none (a NOTIFY costs every committing transaction a lock). The
 *   payload is {@link endPayload}, a hash of `(client_id, key)`: no key or client id travels to
 *   other sessions of the database.
 * - One dedicated connection per store listens, opened on the first watch (never from the pool:
 *   a pooled connection would be handed to a request). Watches are entries of a map on it: a
 *   thousand waiting duplicates cost that one connection.
 * - When the connection drops (server restart, network), every watcher is told
 *   {@link WatchEvent.Lost} and polls instead; the next watch opens a new connection (at most one
 *   attempt a second while the server cannot be reached).
 * - Behind a pooler (issue 40): a `LISTEN` sent through PgBouncer in transaction mode is lost (the
 *   server session goes back to the pool), silently. The listening connection is therefore the
 *   store's `listenUrl` when given (taken to be a real session: the server's own address), else its
 *   own URL or pool settings, probed at connect (`throughPooler`): a pooled one is not listened on,
 *   and waits poll instead (the in-flight wait backs off to 500 ms).
 *
 * @module
 */
import { createHash } from 'node:crypto';
import { compositeId } from '../../composite-id.js';
import type pg from 'pg';
import { requirePeer } from '../../optional-peer.node.js';
import { throughPooler } from './postgres-session.node.js';
import { WatchEvent, type KeyStore } from './types.js';

/** A failed connection is not tried again before this: waits meanwhile poll. */
const RETRY_MS = 1000;

/**
 * The channel the store in `schema` notifies on. The database's channels are shared by all its
 * schemas: a hash of the schema keeps them apart (and within the 63 bytes of an identifier).
 *
 * @example
 * ```ts
 * endChannel('oncely'); // 'oncely_ended_…' (16 hex digits)
 * ```
 */
export function endChannel(schema: string): string {
  return `oncely_ended_${createHash('sha256').update(schema).digest('hex').slice(0, 16)}`;
}

/**
 * A notification's payload for a key: md5 of the client id and the key, each prefixed by its UTF-8
 * byte length (`compositeId`), as PostgreSQL computes it (`endPayloadSql`), so no other pair can
 * spell it. A collision of the hash only wakes a waiter that then finds its row still in flight.
 *
 * @example
 * ```ts
 * endPayload('acme', 'inv-7'); // 32 hex digits
 * ```
 */
export function endPayload(clientId: string, key: string): string {
  return createHash('md5').update(compositeId(clientId, key), 'utf8').digest('hex');
}

/** Where the listening connection of a store with these options goes (see the module notes). */
export function listenConfig(options: {
  readonly listenUrl?: string | undefined;
  readonly connectionString?: string | undefined;
  readonly pool?: pg.Pool | undefined;
  readonly connectTimeoutMs?: number | undefined;
}): pg.ClientConfig {
  const connectionTimeoutMillis = options.connectTimeoutMs ?? 5000;
  if (options.listenUrl !== undefined) return { connectionString: options.listenUrl, connectionTimeoutMillis, keepAlive: true };
  if (options.pool) return { ...options.pool.options, keepAlive: true };
  return { connectionString: options.connectionString, connectionTimeoutMillis, keepAlive: true };
}

/** The listening side of one store. */
export interface EndListener {
  readonly watch: NonNullable<KeyStore['watch']>;
  close(): Promise<void>;
}

type Listener = (event: WatchEvent) => void;

/** One listening connection, from its first connect to its drop. */
interface Link {
  readonly client: pg.Client;
  readonly ready: Promise<void>;
}

/**
 * Listens on `channel` over a connection made from `config`, lazily; `mark` flags a key's row as
 * watched (so that its end notifies), called once the watch is listening.
 *
 * @example
 * ```ts
 * const ends = listenForEnds({ connectionString: url }, endChannel('oncely'), markWatched);
 * const stop = await ends.watch('acme', 'inv-7', (event) => console.log(event));
 * ```
 */
export function listenForEnds(
  config: pg.ClientConfig,
  channel: string,
  mark: (clientId: string, key: string) => Promise<void>,
  { session = false }: { readonly session?: boolean } = {},
): EndListener {
  const watchers = new Map<string, Set<Listener>>();
  let link: Link | undefined;
  let failedAt = Number.NEGATIVE_INFINITY;
  let closed = false;
  // Set once the connection was found to go through a pooler: never listened on again.
  let pooled = false;

  const open = (): Promise<Link> => {
    if (link !== undefined) return link.ready.then(() => link!);
    if (closed) return Promise.reject(new Error('postgresKeyStore.watch: the store is closed'));
    if (pooled) {
      return Promise.reject(
        new Error(
          'postgresKeyStore.watch: not listening: the store reaches PostgreSQL through a pooler; give the store a listenUrl (oncely serve --pg-listen-url)',
        ),
      );
    }
    if (Date.now() - failedAt < RETRY_MS) return Promise.reject(new Error('postgresKeyStore.watch: not listening (the last connection failed)'));
    const client = new (requirePeer<typeof pg>('pg').Client)(config);
    const mine: Link = {
      client,
      ready: (async () => {
        await client.connect();
        if (!session && (await throughPooler(client as unknown as pg.PoolClient))) {
          pooled = true;
          throw new Error('postgresKeyStore.watch: not listening through a pooler (its LISTEN may be lost)');
        }
        await client.query(`LISTEN ${channel}`);
      })(),
    };
    link = mine;
    const drop = (): void => {
      if (link !== mine) return;
      link = undefined;
      client.end().catch(() => undefined);
      const all = [...watchers.values()].flatMap((set) => [...set]);
      watchers.clear();
      for (const listener of all) listener(WatchEvent.Lost);
    };
    // Unheard, an `error` of an idle client (the server went away) would crash the process.
    client.on('error', drop);
    client.on('end', drop);
    client.on('notification', ({ payload }) => {
      for (const listener of [...(watchers.get(payload ?? '') ?? [])]) listener(WatchEvent.Ended);
    });
    mine.ready.catch(() => {
      failedAt = Date.now();
      drop();
    });
    return mine.ready.then(() => mine);
  };

  return {
    async watch(clientId, key, listener) {
      const listening = await open();
      // Dropped (or replaced) before this continuation ran: what it would have heard is lost.
      if (link !== listening) throw new Error('postgresKeyStore.watch: the listening connection dropped');
      const payload = endPayload(clientId, key);
      let set = watchers.get(payload);
      if (set === undefined) watchers.set(payload, (set = new Set()));
      set.add(listener);
      const stop = (): void => {
        const current = watchers.get(payload);
        current?.delete(listener);
        if (current?.size === 0) watchers.delete(payload);
      };
      // Listening first, then the flag: an end committed after the flag is heard.
      await mark(clientId, key).catch((error: unknown) => {
        stop();
        throw error;
      });
      return stop;
    },
    async close() {
      closed = true;
      const current = link;
      link = undefined;
      watchers.clear();
      if (current) await current.client.end().catch(() => undefined);
    },
  };
}
