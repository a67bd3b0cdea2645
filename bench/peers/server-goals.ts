/**
 * The goals of the server suite (`suites/server.ts`), each a per-round ratio of two arms run
 * back to back: oncely's steps API against the article's recipe by hand and, on PostgreSQL,
 * against the same payment work unguarded; its replays against a trivial handler; and, shown
 * beside them, its cost against the unguarded app and the SQL's own pgbench rates.
 *
 * @module
 */
import { costs } from '../lib/arms.js';
import { figure, type Figure } from '../lib/figures.js';
import type { LoadResult } from '../lib/load.js';
import { ratios } from '../lib/stats.js';

type Loads = Readonly<Record<string, readonly LoadResult[] | undefined>>;

/**
 * Every figure with a goal of the suite, and the ratios shown beside them.
 *
 * @example
 * ```ts
 * figures.push(...serverGoals(loads, { withPg: true, withPgbench: true }));
 * ```
 */
export function serverGoals(loads: Loads, options: { readonly withPg: boolean; readonly withPgbench: boolean }): Figure[] {
  const rps = (name: string): number[] => (loads[name] ?? []).map((r) => r.rps);
  const out: Figure[] = [];
  for (const store of options.withPg ? ['sqlite', 'postgres'] : ['sqlite']) {
    const nice = store === 'sqlite' ? 'SQLite' : 'PostgreSQL';
    out.push(
      figure(
        `server.${store}.first_vs_recipe`,
        `oncely on ${nice} first execution ÷ the article's recipe by hand on ${nice}`,
        '×',
        ratios(rps(`${store}.first`), rps(`recipe-${store}`)),
        { op: '>=', value: 1.5 },
      ),
      figure(`server.${store}.replay_vs_trivial`, `oncely on ${nice} replay ÷ trivial handler`, '×', ratios(rps(`${store}.replay`), rps('trivial')), {
        op: '>=',
        value: 0.5,
      }),
    );
  }
  // Reported, not a goal on SQLite: the unguarded app gives no guarantee (it commits once; oncely more).
  out.push(
    figure(
      'server.sqlite.first_vs_unguarded',
      'oncely on SQLite first execution ÷ the same app on SQLite unguarded',
      '×',
      ratios(rps('sqlite.first'), rps('unguarded')),
    ),
  );
  if (options.withPg) out.push(...postgresGoals(loads, rps));
  if (options.withPgbench) out.push(...sqlBound(rps));
  return out;
}

/** The steps API on PostgreSQL against the same payment work unguarded on PostgreSQL (issue 47), by rate, CPU and WAL. */
function postgresGoals(loads: Loads, rps: (name: string) => number[]): Figure[] {
  const cost = (kind: 'totalCpu' | 'wal'): number[] => ratios(costs(loads['postgres.first'], kind), costs(loads['unguarded-postgres'], kind));
  return [
    figure(
      'server.postgres.first_vs_unguarded',
      'oncely on PostgreSQL first execution (the steps API, one external call) ÷ the same payment work on PostgreSQL unguarded',
      '×',
      ratios(rps('postgres.first'), rps('unguarded-postgres')),
      { op: '>=', value: 0.5 },
    ),
    figure(
      'server.postgres.first_vs_unguarded.cpu',
      'oncely on PostgreSQL: server + PostgreSQL CPU per first execution ÷ the unguarded payment work’s',
      '×',
      cost('totalCpu'),
    ),
    figure('server.postgres.first_vs_unguarded.wal', 'oncely on PostgreSQL: WAL bytes per first execution ÷ the unguarded payment work’s', '×', cost('wal')),
    // Shown, not judged: what moving the key store to a database server costs against the embedded app.
    figure(
      'server.postgres.first_vs_unguarded_sqlite',
      'oncely on PostgreSQL first execution ÷ the unguarded app on SQLite',
      '×',
      ratios(rps('postgres.first'), rps('unguarded')),
    ),
  ];
}

/**
 * Issue 36's goal: the Node side costs at most a tenth beyond what the SQL itself sets, per round.
 * The bound is the store's own statements (its admission, its fenced functions), pipelined as it sends them.
 */
function sqlBound(rps: (name: string) => number[]): Figure[] {
  const bound = ratios(rps('sql.store'), rps('sql.insert'));
  const reached = ratios(rps('postgres.first'), rps('unguarded-postgres'));
  return [
    figure(
      'server.sql.store_vs_insert',
      'the first execution’s SQL (pgbench: the store’s statements, pipelined as it sends them) ÷ the single INSERT’s',
      '×',
      bound,
    ),
    figure(
      'server.sql.plain_vs_insert',
      'the same round trips with plain UPDATEs for the store’s fenced functions (pgbench) ÷ the single INSERT’s',
      '×',
      ratios(rps('sql.first'), rps('sql.insert')),
    ),
    figure(
      'server.postgres.first_vs_sql_bound',
      'oncely on PostgreSQL first execution ÷ unguarded on PostgreSQL, ÷ its SQL’s own bound (the first pgbench line above)',
      '×',
      ratios(reached, bound),
      { op: '>=', value: 0.9 },
    ),
    // Shown, not judged: the same statements from Node with no layer, against the same bound —
    // what no code in front of `pg` can win back.
    figure(
      'server.statements.vs_sql_bound',
      'the store’s statements from Node (no layer) ÷ unguarded on PostgreSQL, ÷ the same SQL bound',
      '×',
      ratios(ratios(rps('statements-postgres'), rps('unguarded-postgres')), bound),
    ),
    figure(
      'server.postgres.first_vs_statements',
      'oncely on PostgreSQL first execution ÷ the store’s statements from Node with no layer',
      '×',
      ratios(rps('postgres.first'), rps('statements-postgres')),
    ),
  ];
}
