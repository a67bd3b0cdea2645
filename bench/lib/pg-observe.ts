/**
 * What a benchmark's load costs the PostgreSQL server it runs on, read from the server itself:
 * the CPU time of the processes serving the benchmark's database (its backends, and the WAL
 * writer, checkpointer and background writer; the server must run on this machine), the WAL
 * written, and — where `pg_stat_statements` is loaded — the statements run, with their calls and
 * time per request. Other databases' backends on a shared server (another test run) are not
 * counted; the WAL is the whole server's, so read that column on a server nothing else writes to.
 *
 * @module
 */
import { readFileSync } from 'node:fs';
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

/** CPU time (ms) of a process, from `/proc/<pid>/stat`; 0 when it has exited. */
function cpuOf(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return 0;
  }
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
 * const observer = await observePg('postgres://postgres@127.0.0.1:5432/test');
 * const before = await observer.read();
 * // … the load …
 * const { cpuMs, walBytes } = await observer.since(before);
 * ```
 */
export async function observePg(url: string): Promise<PgObserver> {
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  const statementsLoaded = (await admin.query(`SELECT 1 FROM pg_extension WHERE extname = 'pg_stat_statements'`)).rowCount === 1;
  // Backends that exit during the run take their CPU with them: the pools under test stay open.
  const serving = async (): Promise<number[]> =>
    (
      await admin.query<{ pid: number }>(
        `SELECT pid FROM pg_stat_activity WHERE (datname = current_database() AND pid <> pg_backend_pid())
            OR backend_type IN ('walwriter', 'checkpointer', 'background writer')`,
      )
    ).rows.map((row) => row.pid);
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
