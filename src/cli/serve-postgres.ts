/**
 * `oncely serve`'s PostgreSQL lines at startup: how the primary replicates (a warning when a
 * failover could lose acknowledged keys) and how a waiting duplicate hears of another instance's
 * answer; and URLs with their password hidden, as every log line shows them.
 *
 * @module
 */
import type { pino as Pino } from 'pino';

/**
 * `url` with its user-info hidden.
 *
 * @example
 * ```ts
 * redacted('postgres://app:secret@db/payments'); // 'postgres://***@db/payments'
 * ```
 */
export const redacted = (url: string): string => url.replace(/\/\/[^@/]*@/, '//***@');

/**
 * Logs how the primary replicates: a warning when a failover could lose acknowledged keys.
 *
 * @example
 * ```ts
 * await logReplication('postgres://app@db1,db2/payments', log);
 * ```
 */
export async function logReplication(db: string, log: Pick<Pino.Logger, 'info' | 'warn'>): Promise<void> {
  const { checkReplication } = await import('../server/store/postgres-replication.node.js');
  const report = await checkReplication({ connectionString: db }).catch((error: unknown) => error as Error);
  if (report instanceof Error) log.warn({ event: 'replication', err: report }, `PostgreSQL: could not check replication (${report.message})`);
  else if (report.warning) log.warn({ event: 'replication', state: report.state }, report.warning);
  else log.info({ event: 'replication', state: report.state }, `PostgreSQL replication: ${report.state}`);
}

/**
 * How a duplicate waiting here hears its original end on another instance (PostgreSQL).
 *
 * @example
 * ```ts
 * describeWakeUps(undefined); // 'wake-ups: LISTEN through --db when it reaches PostgreSQL directly, else polling …'
 * ```
 */
export function describeWakeUps(listenUrl: string | undefined): string {
  if (listenUrl !== undefined) return `wake-ups: LISTEN on a direct connection to ${redacted(listenUrl)}`;
  return 'wake-ups: LISTEN through --db when it reaches PostgreSQL directly, else polling (≤ 500 ms; behind a pooler give --pg-listen-url)';
}
