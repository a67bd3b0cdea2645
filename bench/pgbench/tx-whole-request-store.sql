-- The middleware's `transaction: true` on PostgreSQL through the app's own plain `pg.Pool` (not
-- pipelined, as an app makes one: one round trip per message), with the store's own statements as
-- src/server/store/postgres-runner.node.ts and postgres-sql.node.ts send them: BEGIN's message
-- (its settings, the session's lock timeout kept aside, the admission's lock wait and the idle
-- bound: one simple-query message; here one pipeline, pgbench prepares no compound statement), the admission, the lock timeout put back, the app's INSERT through
-- `tx`, `oncely_finish` with the response, COMMIT: 6 round trips, one commit. The lease token is a
-- constant (pgbench cannot pass an answer to the next statement). Needs the store's functions:
-- setUpPgbench() (bench/lib/pgbench.ts) migrates the schema. Keys are drawn from 10^18 per client.
\set r random(1, 1000000000000000000)
\startpipeline
BEGIN ISOLATION LEVEL READ COMMITTED;
SET LOCAL search_path = oncely_pgbench, public;
SELECT set_config('oncely.kept_lock_timeout', current_setting('lock_timeout'), true);
SET LOCAL lock_timeout = 5000;
SET LOCAL idle_in_transaction_session_timeout = 10000;
\endpipeline
WITH ins AS (
  INSERT INTO oncely_pgbench.oncely_keys AS k (client_id, key, request_hash, endpoint, request_body, state, lease_token, lease_until, created_at, expires_at)
  VALUES ('bench', 'k' || :client_id || '_' || :r, 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa', 'POST /pay', '',
          'started', 'tok', now() + 10000 * interval '1 millisecond', now(), now() + 86400000 * interval '1 millisecond')
  ON CONFLICT (client_id, key) DO NOTHING
  RETURNING k.lease_token, k.expires_at)
SELECT true AS owned, ins.lease_token AS lease, NULL::json AS row_json, floor(extract(epoch FROM now()) * 1000)::float8 AS created_ms,
       floor(extract(epoch FROM ins.expires_at) * 1000)::float8 AS expires_ms, 10000::float8 AS lease_ms,
       floor(extract(epoch FROM now()) * 1000)::float8 AS now_ms FROM ins
UNION ALL
SELECT false, NULL, row_to_json(k), NULL, NULL, NULL, floor(extract(epoch FROM now()) * 1000)::float8
  FROM oncely_pgbench.oncely_keys k WHERE k.client_id = 'bench' AND k.key = 'k' || :client_id || '_' || :r AND NOT EXISTS (SELECT 1 FROM ins);
SELECT set_config('lock_timeout', current_setting('oncely.kept_lock_timeout'), true);
INSERT INTO oncely_pgbench.bench_executions (id, reference, amount, created_at)
  VALUES ('pay_' || :client_id || '_' || :r || '_' || random(), 'ref', 1250, now()::text);
SELECT oncely_pgbench.oncely_finish('bench', 'k' || :client_id || '_' || :r, 'tok', 201,
       '{"content-type":"application/json; charset=utf-8","etag":"W/\"8b-jmoABwUoFwJ+FUJbeQcLOwJppSU\""}',
       '{"id":"pay_1","status":"succeeded","amount":1250,"currency":"EUR","reference":"x","created_at":"2026-12-05T08:00:00.000Z"}');
COMMIT;
