-- The unguarded app: one INSERT, committed on its own.
\set r random(1, 1000000000)
INSERT INTO oncely_pgbench.bench_executions (id, reference, amount, created_at)
  VALUES ('pay_' || :client_id || '_' || :r || '_' || random(), 'ref', 1250, now()::text);
