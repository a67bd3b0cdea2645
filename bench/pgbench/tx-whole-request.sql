-- The middleware's `transaction: true` in three pipelined round trips (a pipelined pool) with plain
-- statements: BEGIN (with the lock wait bound) and the admission, the app's INSERT through `tx`, the
-- final response with COMMIT (one commit). tx-whole-request-store.sql sends the store's own
-- statements as they go on the app's plain pool (six round trips). Compare with insert.sql.
\set r random(1, 1000000000)
\startpipeline
BEGIN ISOLATION LEVEL READ COMMITTED;
SET LOCAL lock_timeout = 5000;
INSERT INTO oncely_pgbench.oncely_keys (client_id, key, request_hash, endpoint, request_body, state, lease_token, lease_until, created_at, expires_at)
  VALUES ('bench', 'k' || :client_id || '_' || :r, 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa', 'POST /pay',
          '', 'started', 'tok', now() + interval '30 s', now(), now() + interval '1 day')
  ON CONFLICT DO NOTHING RETURNING lease_token;
SET LOCAL lock_timeout TO DEFAULT;
\endpipeline
INSERT INTO oncely_pgbench.bench_executions (id, reference, amount, created_at)
  VALUES ('pay_' || :client_id || '_' || :r || '_' || random(), 'ref', 1250, now()::text);
\startpipeline
UPDATE oncely_pgbench.oncely_keys SET state = 'finished', response_status = 201,
       response_headers = '{"content-type":"application/json"}'::json, response_body = '{"id":"pay_1","reference":"ref","amount":1250}', lease_token = NULL, lease_until = NULL
 WHERE client_id = 'bench' AND key = 'k' || :client_id || '_' || :r AND state = 'started' AND lease_token = 'tok';
COMMIT;
\endpipeline
