/**
 * A two-node PostgreSQL cluster on loopback, from Debian's PostgreSQL binaries: a primary
 * (`initdb`) and a streaming standby (`pg_basebackup -R`), in temporary directories on free
 * ports (never 5432), run as user `postgres` when we are root (PostgreSQL refuses root).
 *
 * `synchronous: true` names the standby in `synchronous_standby_names` (with
 * `synchronous_commit = on`): the primary acknowledges a COMMIT only once the standby has
 * flushed it. Otherwise the standby streams asynchronously, the default of a fresh cluster.
 * `fsync = off` on both: only server processes die here, never the machine, and the page cache
 * survives them (the same choice as the test harness's throwaway clusters).
 *
 * @module
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, appendFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A running primary + standby pair. */
export interface PgPair {
  readonly primaryPort: number;
  readonly standbyPort: number;
  /** `postgres://postgres@127.0.0.1:P1,127.0.0.1:P2/postgres`: the store follows the primary. */
  readonly url: string;
  readonly primaryUrl: string;
  readonly standbyUrl: string;
  /** `pg_ctl stop -m immediate` on the primary: a crash, connections cut. */
  killPrimary(): void;
  /** `pg_ctl promote -w` on the standby: it becomes a read-write primary. */
  promoteStandby(): void;
  destroy(): void;
}

/** The newest installed PostgreSQL's bin directory with `initdb`, or `undefined`. */
export function findPgBin(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root).sort((a, b) => Number(a) - Number(b));
  return versions
    .map((v) => join(root, v, 'bin'))
    .filter((bin) => existsSync(join(bin, 'initdb')))
    .at(-1);
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** Builds and starts the pair (~3 s). Throws when no PostgreSQL binaries are installed. */
export async function startPair(options: {
  readonly synchronous: boolean;
  /** The port the standby streams from, given the primary's (a link with latency); else the primary's. */
  readonly link?: (primaryPort: number) => Promise<number>;
}): Promise<PgPair> {
  const bin = findPgBin();
  if (!bin) throw new Error('no initdb under /usr/lib/postgresql/*/bin: cannot build a primary and a standby');
  const dir = mkdtempSync(join(tmpdir(), 'oncely-failover-'));
  const [primaryPort, standbyPort] = [await freePort(), await freePort()];
  const asRoot = process.getuid?.() === 0;
  const sh = (command: string): void => {
    execFileSync(asRoot ? 'su' : 'sh', asRoot ? ['postgres', '-c', command] : ['-c', command], { stdio: 'pipe', timeout: 120_000 });
  };
  if (asRoot) execFileSync('chown', ['postgres', dir]);
  const primary = join(dir, 'primary');
  const standby = join(dir, 'standby');
  const settings = (port: number): string => `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off`;
  sh(`${bin}/initdb -D ${primary} -U postgres --auth=trust --no-sync >/dev/null`);
  // `initdb --auth=trust` already lets 127.0.0.1 connect for replication (pg_hba.conf).
  const conf = ['wal_level = replica', 'max_wal_senders = 5', 'hot_standby = on'];
  if (options.synchronous) conf.push("synchronous_standby_names = 'standby1'", 'synchronous_commit = on');
  appendFileSync(join(primary, 'postgresql.conf'), `\n${conf.join('\n')}\n`);
  const start = (data: string, port: number): void => sh(`${bin}/pg_ctl -D ${data} -o "${settings(port)}" -l ${data}.log -w -t 60 start >/dev/null`);
  start(primary, primaryPort);
  sh(`${bin}/pg_basebackup -h 127.0.0.1 -p ${primaryPort} -U postgres -D ${standby} -X stream -R --no-sync`);
  // `-R` wrote standby.signal and a primary_conninfo; this one names the standby for
  // synchronous_standby_names.
  const streamFrom = options.link ? await options.link(primaryPort) : primaryPort;
  appendFileSync(join(standby, 'postgresql.auto.conf'), `primary_conninfo = 'host=127.0.0.1 port=${streamFrom} user=postgres application_name=standby1'\n`);
  start(standby, standbyPort);

  const stop = (data: string): void => {
    try {
      sh(`${bin}/pg_ctl -D ${data} -m immediate -w stop >/dev/null 2>&1`);
    } catch {
      // already stopped
    }
  };
  const destroy = (): void => {
    stop(primary);
    stop(standby);
    rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', destroy);
  const at = (port: number): string => `postgres://postgres@127.0.0.1:${port}/postgres`;
  const pair: PgPair = {
    primaryPort,
    standbyPort,
    url: `postgres://postgres@127.0.0.1:${primaryPort},127.0.0.1:${standbyPort}/postgres`,
    primaryUrl: at(primaryPort),
    standbyUrl: at(standbyPort),
    killPrimary: () => stop(primary),
    promoteStandby: () => sh(`${bin}/pg_ctl -D ${standby} -w -t 60 promote >/dev/null`),
    destroy,
  };
  await waitForStreaming(pair);
  return pair;
}

/** Until the primary sees its standby streaming, and a named one as `sync`. */
async function waitForStreaming(pair: PgPair): Promise<void> {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: pair.primaryUrl });
  await client.connect();
  try {
    for (let tries = 0; tries < 300; tries += 1) {
      const { rows } = await client.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM pg_stat_replication WHERE state = 'streaming' AND (sync_state = 'sync' OR current_setting('synchronous_standby_names') = '')",
      );
      if (rows[0]!.n > 0) return;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error(`the standby on port ${pair.standbyPort} never started streaming from ${pair.primaryPort}`);
  } finally {
    await client.end();
  }
}
