-- The middleware's `transaction: true` as the store sent it before the one-commit change: the
-- admission committed on its own, then BEGIN with the lease's row lock and the app's INSERT, then
-- the final response with COMMIT (3 round trips, two commits).
\set r random(1, 1000000000)
INSERT INTO oncely_pgbench.oncely_keys (client_id, key, request_hash, endpoint, request_body, state, lease_token, lease_until, created_at, expires_at)
  VALUES ('bench', 'k' || :client_id || '_' || :r, 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa', 'POST /pay',
          '', 'started', 'tok', now() + interval '30 s', now(), now() + interval '1 day')
  ON CONFLICT DO NOTHING RETURNING lease_token;
\startpipeline
BEGIN ISOLATION LEVEL READ COMMITTED;
SELECT 1 FROM oncely_pgbench.oncely_keys WHERE client_id = 'bench' AND key = 'k' || :client_id || '_' || :r AND lease_token = 'tok' FOR UPDATE;
INSERT INTO oncely_pgbench.bench_executions (id, reference, amount, created_at)
  VALUES ('pay_' || :client_id || '_' || :r || '_' || random(), 'ref', 1250, now()::text);
\endpipeline
\startpipeline
UPDATE oncely_pgbench.oncely_keys SET state = 'finished', response_status = 201,
       response_headers = '{"content-type":"application/json"}'::json, response_body = '{"id":"pay_1","reference":"ref","amount":1250}', lease_token = NULL, lease_until = NULL
 WHERE client_id = 'bench' AND key = 'k' || :client_id || '_' || :r AND state = 'started' AND lease_token = 'tok';
COMMIT;
\endpipeline
