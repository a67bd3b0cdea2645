/**
 * Following a primary across a failover with the pure-JS `pg` driver, which has no multi-host
 * support of its own (libpq's `host=a,b target_session_attrs=read-write` is not implemented): a
 * libpq multi-host URL (`postgres://u@db1:5432,db2:5432/payments`) makes the store's pool try its
 * hosts in order, and keep a connection only from a server that says it is the primary.
 *
 * - Every new connection goes to the host the list currently points at, and asks
 *   `pg_is_in_recovery()` before it is used (the pool's `onConnect` hook: one round trip per new
 *   connection, none per query). A standby's answer, or a failure to connect, moves the list to the
 *   next host, and the checkout tries again there — up to once per host, so a checkout waits at
 *   most hosts × `connectTimeoutMs` before it fails closed (the handler answers `503`).
 * - Pooled connections to a primary that dies are errors and leave the pool; their requests fail
 *   (`503`, retried by the client). Nothing is moved until the old primary stops answering: a
 *   demoted primary that still accepts writes (split brain) is the orchestrator's to fence.
 * - Timeline:
 *
 *   | moment                          | list points at | a new connection                  |
 *   |---------------------------------|----------------|-----------------------------------|
 *   | db1 primary, db2 standby        | db1            | db1, `in_recovery = false`: kept  |
 *   | db1 killed, db2 not yet promoted| db1 → db2 → db1| refused / standby: `503`          |
 *   | db2 promoted                    | db2            | db2, `in_recovery = false`: kept  |
 *
 * One list per URL per process, so the store's pool and its LISTEN connection
 * (`postgres-listen.node.ts`, handed {@link listenConfig}) move together.
 *
 * @module
 */
import type pg from 'pg';
import { hostsFromUrl, urlForHost, type PgHost } from './postgres-url.node.js';

/** The hosts of one URL and the one new connections go to. */
export interface HostList {
  readonly hosts: readonly PgHost[];
  /** The host new connections go to. */
  current(): PgHost;
  /** `host` failed (refused, timed out, or a standby): new connections go to the next one. */
  failed(host: PgHost): void;
}

/** A connection that reached a server in recovery: a standby, not the primary the store needs. */
export class NotPrimaryError extends Error {
  override readonly name = 'NotPrimaryError';
  constructor(readonly host: PgHost) {
    super(`postgresKeyStore: ${host.host}:${host.port} is a standby (pg_is_in_recovery() = true); trying the next host of the connection string`);
  }
}

/** The pool's own "no free connection in time": the pool is busy, no host is at fault. */
const POOL_WAIT = 'timeout exceeded when trying to connect';

const lists = new Map<string, HostList>();

/**
 * The shared host list of a multi-host URL, or `undefined` for a URL with one host (or none).
 *
 * @example
 * ```ts
 * hostList('postgres://u@db1,db2/payments')?.current(); // { host: 'db1', port: 5432 }
 * ```
 */
export function hostList(connectionString: string | undefined): HostList | undefined {
  const hosts = hostsFromUrl(connectionString);
  if (connectionString === undefined || hosts.length < 2) return undefined;
  const key = hosts.map(({ host, port }) => `${host}:${port}`).join(',');
  let list = lists.get(key);
  if (list === undefined) {
    let index = 0;
    list = {
      hosts,
      current: () => hosts[index]!,
      failed(host) {
        // Many connections fail together after a failover: only the first moves the list on.
        const now = hosts[index]!;
        if (now.host === host.host && now.port === host.port) index = (index + 1) % hosts.length;
      },
    };
    lists.set(key, list);
  }
  return list;
}

/**
 * A `pg` pool over `config`: a plain one for a one-host URL; for a multi-host URL, one whose new
 * connections go to the current primary of the list (see the module notes).
 *
 * @example
 * ```ts
 * const pool = createPool(requirePeer('pg'), { connectionString: 'postgres://u@db1,db2/payments', max: 10 });
 * ```
 */
export function createPool(driver: typeof pg, config: pg.PoolConfig): pg.Pool {
  const list = hostList(config.connectionString);
  if (list === undefined) return new driver.Pool(config);
  const url = config.connectionString!;

  /** A client aimed, when made, at the list's current host. */
  class ListClient extends driver.Client {
    readonly target: PgHost;
    constructor(clientConfig?: pg.ClientConfig) {
      const target = list!.current();
      super({ ...clientConfig, connectionString: urlForHost(url, target) });
      this.target = target;
    }
  }

  /** A pool whose checkouts move down the list when a host fails. */
  class ListPool extends driver.Pool {
    override connect(): Promise<pg.PoolClient>;
    override connect(callback: (err: Error | undefined, client: pg.PoolClient | undefined, done: (release?: unknown) => void) => void): void;
    override connect(
      callback?: (err: Error | undefined, client: pg.PoolClient | undefined, done: (release?: unknown) => void) => void,
    ): Promise<pg.PoolClient> | void {
      const attempt = async (): Promise<pg.PoolClient> => {
        for (let tries = 1; ; tries += 1) {
          const target = list!.current();
          try {
            return await super.connect();
          } catch (error) {
            if ((error as Error).message === POOL_WAIT) throw error;
            list!.failed(error instanceof NotPrimaryError ? error.host : target);
            if (tries >= list!.hosts.length) throw error;
          }
        }
      };
      if (callback === undefined) return attempt();
      attempt().then(
        (client) => callback(undefined, client, (release) => client.release(release as Error | boolean | undefined)),
        (error: Error) => callback(error, undefined, () => undefined),
      );
    }
  }

  return new ListPool({
    ...config,
    Client: ListClient,
    // Checked before the pool hands the connection out; a throw ends it and fails this connect.
    onConnect: async (client: pg.PoolClient) => {
      const { target } = client as unknown as ListClient;
      const { rows } = await client.query<{ standby: boolean }>('SELECT pg_is_in_recovery() AS standby');
      if (rows[0]?.standby !== false) throw new NotPrimaryError(target);
    },
  } as pg.PoolConfig);
}

/**
 * The settings of a connection of its own (the store's LISTEN) for `connectionString`: a
 * multi-host URL's `connectionString` is read when the connection is made, so a reconnect after a
 * failover goes where the pool found the primary (a standby refuses LISTEN; the waiters poll
 * meanwhile).
 *
 * @example
 * ```ts
 * const driver = requirePeer<typeof pg>('pg');
 * const listener = new driver.Client(listenConfig({ connectionString: 'postgres://u@db1,db2/payments' }));
 * ```
 */
export function listenConfig(config: pg.ClientConfig): pg.ClientConfig {
  const list = typeof config.connectionString === 'string' ? hostList(config.connectionString) : undefined;
  if (list === undefined) return config;
  const url = config.connectionString!;
  const live = { ...config };
  // `pg` copies its config (`Object.assign`) per client: the getter runs once per connection.
  Object.defineProperty(live, 'connectionString', { enumerable: true, get: () => urlForHost(url, list.current()) });
  return live;
}
