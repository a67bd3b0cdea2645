/**
 * What a benchmark's load costs the PostgreSQL server it runs on, read from the server itself:
 * the CPU time of the processes serving the benchmark's database (its backends, and the WAL
 * writer, checkpointer and background writer; the server must run on this machine), the WAL
 * written, and — where `pg_stat_statements` is loaded — the statements run, with their calls and
 * time per request. Other databases' backends on a shared server (another test run) are not
 * counted; with `clientPid`, only the backends serving that process's own connections are (not
 * another test run's on the same database, nor the shared WAL writer and checkpointer). The WAL is
 * the whole server's, so read that column on a server nothing else writes to.
 *
 * @module
 */
import { readFileSync, readdirSync, readlinkSync } from 'node:fs';
import pg from 'pg';

/** One statement's share of a run (`pg_stat_statements`), per request of the load. */
export interface StatementCost {
  readonly query: string;
  readonly callsPerRequest: number;
  /** Execution time on the server per request, µs (planning included when tracked). */
  readonly usPerRequest: number;
  readonly walBytesPerRequest: number;
}

/** A reading taken before the load; {@link PgObserver.since} gives the difference. */
export interface PgReading {
  readonly cpuMs: number;
  readonly lsn: string;
}

/**
 * CPU time (ms) of a single-threaded process (a PostgreSQL backend): its scheduler's run time in
 * nanoseconds (`/proc/<pid>/schedstat`), else `/proc/<pid>/stat`'s 10-ms ticks; 0 when it has exited.
 */
function cpuOf(pid: number): number {
  try {
    return Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[0]) / 1e6;
  } catch {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      return (Number(fields[11]) + Number(fields[12])) * 10;
    } catch {
      return 0;
    }
  }
}

/**
 * The local TCP ports of process `pid`'s sockets (`/proc/<pid>/fd` → socket inodes, matched in
 * `/proc/<pid>/net/tcp` and `tcp6`): the `client_port`s its PostgreSQL backends see.
 */
export function localPortsOf(pid: number): number[] {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const match = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (match) inodes.add(match[1]!);
    } catch {
      // closed between the listing and the read
    }
  }
  const ports: number[] = [];
  for (const table of ['tcp', 'tcp6']) {
    for (const line of readFileSync(`/proc/${pid}/net/${table}`, 'utf8').split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      if (fields.length > 9 && inodes.has(fields[9]!)) ports.push(Number.parseInt(fields[1]!.split(':')[1]!, 16));
    }
  }
  return ports;
}

/** Which backends an observer counts. */
export interface ObserveOptions {
  /** Count only the backends serving this process's connections (a server under load). */
  readonly clientPid?: number;
}

/** The observer over the server at `url`; `close()` when done. */
export interface PgObserver {
  read(): Promise<PgReading>;
  /** CPU (ms) and WAL (bytes) since `before`. */
  since(before: PgReading): Promise<{ cpuMs: number; walBytes: number }>;
  /** Clears `pg_stat_statements` (when loaded). */
  resetStatements(): Promise<void>;
  /** The statements run since the reset, most expensive first, divided by `requests`; `[]` without `pg_stat_statements`. */
  statements(requests: number, top?: number): Promise<StatementCost[]>;
  close(): Promise<void>;
}

/**
 * Opens an observer on the benchmark's database at `url`.
 *
 * @example
 * ```ts
 * const observer = await observePg('postgres://postgres@127.0.0.1:5432/test', { clientPid: server.child.pid });
 * const before = await observer.read();
 * // … the load …
 * const { cpuMs, walBytes } = await observer.since(before);
 * ```
 */
export async function observePg(url: string, options: ObserveOptions = {}): Promise<PgObserver> {
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  const statementsLoaded = (await admin.query(`SELECT 1 FROM pg_extension WHERE extname = 'pg_stat_statements'`)).rowCount === 1;
  // Backends that exit during the run take their CPU with them: the pools under test stay open.
  const serving = async (): Promise<number[]> => {
    if (options.clientPid !== undefined) {
      const ports = localPortsOf(options.clientPid);
      const { rows } = await admin.query<{ pid: number }>(
        `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND client_port = ANY($1::int[])`,
        [ports],
      );
      return rows.map((row) => row.pid);
    }
    const { rows } = await admin.query<{ pid: number }>(
      `SELECT pid FROM pg_stat_activity WHERE (datname = current_database() AND pid <> pg_backend_pid())
          OR backend_type IN ('walwriter', 'checkpointer', 'background writer')`,
    );
    return rows.map((row) => row.pid);
  };
  const lsn = async (): Promise<string> => (await admin.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn')).rows[0]!.lsn;
  let pids: number[] = [];
  const cpu0 = new Map<number, number>();
  return {
    async read() {
      pids = await serving();
      cpu0.clear();
      for (const pid of pids) cpu0.set(pid, cpuOf(pid));
      return { cpuMs: 0, lsn: await lsn() };
    },
    async since(before) {
      // The backends of the pools opened during the run count from their start.
      const now = await serving();
      let cpuMs = 0;
      for (const pid of now) cpuMs += cpuOf(pid) - (cpu0.get(pid) ?? 0);
      const to = await lsn();
      const walBytes = Number((await admin.query<{ n: string }>('SELECT pg_wal_lsn_diff($1, $2)::text AS n', [to, before.lsn])).rows[0]!.n);
      return { cpuMs, walBytes };
    },
    async resetStatements() {
      if (statementsLoaded) await admin.query('SELECT pg_stat_statements_reset()');
    },
    async statements(requests, top = 12) {
      if (!statementsLoaded) return [];
      const { rows } = await admin.query<{ query: string; calls: string; ms: number; wal: string }>(
        `SELECT query, calls::text, (total_exec_time + total_plan_time) AS ms, wal_bytes::text AS wal
           FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
          ORDER BY total_exec_time + total_plan_time DESC LIMIT $1`,
        [top],
      );
      return rows.map((row) => ({
        query: row.query.replace(/\s+/g, ' ').slice(0, 140),
        callsPerRequest: Number(row.calls) / requests,
        usPerRequest: (1000 * row.ms) / requests,
        walBytesPerRequest: Number(row.wal) / requests,
      }));
    },
    close: () => admin.end(),
  };
}
