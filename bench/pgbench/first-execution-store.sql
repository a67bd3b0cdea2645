-- oncely's first execution with the store's own statements, as its PostgreSQL store sends them for
-- the benchmark's payment (4 round trips, 2 commits): BEGIN with the transaction's settings and the
-- admission (src/server/store/postgres-sql.node.ts `admit`), the charge, `oncely_point` (EXT1_SENT)
-- with COMMIT, `oncely_finish_after` (EXT1_DONE and the response). The lease token is a constant
-- (the store draws gen_random_uuid(): pgbench cannot pass a pipelined answer to the next statement).
-- Needs the store's functions: setUpPgbench() (bench/lib/pgbench.ts) migrates the schema.
-- Keys are drawn from 10^18 per client: a repeated key would find its admission not owned, and oncely_point raise.
\set r random(1, 1000000000000000000)
\startpipeline
BEGIN ISOLATION LEVEL READ COMMITTED;
SET LOCAL search_path = oncely_pgbench, public;
SET LOCAL statement_timeout = 15000;
SET LOCAL idle_in_transaction_session_timeout = 10000;
WITH ins AS (
  INSERT INTO oncely_pgbench.oncely_keys AS k (client_id, key, request_hash, endpoint, request_body, state, lease_token, lease_until, created_at, expires_at)
  VALUES ('bench', 'k' || :client_id || '_' || :r, 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa', 'POST /pay', '{"amount":1250,"currency":"EUR","reference":"x"}',
          'started', 'tok', now() + 10000 * interval '1 millisecond', now(), now() + 86400000 * interval '1 millisecond')
  ON CONFLICT (client_id, key) DO NOTHING
  RETURNING k.lease_token, k.expires_at)
SELECT true AS owned, ins.lease_token AS lease, NULL::json AS row_json, floor(extract(epoch FROM now()) * 1000)::float8 AS created_ms,
       floor(extract(epoch FROM ins.expires_at) * 1000)::float8 AS expires_ms, 10000::float8 AS lease_ms,
       floor(extract(epoch FROM now()) * 1000)::float8 AS now_ms FROM ins
UNION ALL
SELECT false, NULL, row_to_json(k), NULL, NULL, NULL, floor(extract(epoch FROM now()) * 1000)::float8
  FROM oncely_pgbench.oncely_keys k WHERE k.client_id = 'bench' AND k.key = 'k' || :client_id || '_' || :r AND NOT EXISTS (SELECT 1 FROM ins);
\endpipeline
INSERT INTO oncely_pgbench.bench_executions (id, reference, amount, created_at)
  VALUES ('pay_' || :client_id || '_' || :r || '_' || random(), 'ref', 1250, now()::text);
\startpipeline
SELECT oncely_pgbench.oncely_point('bench', 'k' || :client_id || '_' || :r, 'tok', 'EXT1_SENT',
       '{"payment":{"id":"pay_1","status":"succeeded","amount":1250,"currency":"EUR","reference":"x","created_at":"2026-12-05T08:00:00.000Z"}}', 10000, false, true);
COMMIT;
\endpipeline
SELECT oncely_pgbench.oncely_finish_after('bench', 'k' || :client_id || '_' || :r, 'tok', 'EXT1_DONE', '{}', 201, '{"content-type":"application/json"}',
       '{"id":"pay_1","status":"succeeded","amount":1250,"currency":"EUR","reference":"x","created_at":"2026-12-05T08:00:00.000Z"}');
