-- oncely's first execution in the store's round trips (BEGIN with the admission, the charge, EXT1_SENT with COMMIT, the final response: 4),
-- with plain statements in place of the store's own (its admission's CTE, its fenced functions): first-execution-store.sql sends those.
-- The two side by side say what the store's statements cost PostgreSQL beyond the plain ones.
\set r random(1, 1000000000)
\startpipeline
BEGIN;
INSERT INTO oncely_pgbench.oncely_keys (client_id, key, request_hash, endpoint, request_body, state, lease_token, lease_until, created_at, expires_at)
  VALUES ('bench', 'k' || :client_id || '_' || :r, 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa', 'POST /pay',
          '{"amount":1250,"currency":"EUR","reference":"x"}', 'started', 'tok', now() + interval '10 s', now(), now() + interval '1 day')
  ON CONFLICT DO NOTHING RETURNING lease_token;
\endpipeline
INSERT INTO oncely_pgbench.bench_executions (id, reference, amount, created_at)
  VALUES ('pay_' || :client_id || '_' || :r || '_' || random(), 'ref', 1250, now()::text);
\startpipeline
UPDATE oncely_pgbench.oncely_keys SET recovery_point = 'EXT1_SENT',
       data = '{"payment":{"id":"pay_1","status":"succeeded","amount":1250,"currency":"EUR","reference":"x","created_at":"2026-12-05T08:00:00.000Z"}}'::jsonb,
       lease_until = now() + interval '10 s'
 WHERE client_id = 'bench' AND key = 'k' || :client_id || '_' || :r AND state = 'started' AND lease_token = 'tok';
COMMIT;
\endpipeline
UPDATE oncely_pgbench.oncely_keys SET state = 'finished', recovery_point = 'EXT1_DONE', response_status = 201,
       response_headers = '{"content-type":"application/json"}'::json, response_body = '{"id":"pay_1"}', lease_token = NULL, lease_until = NULL
 WHERE client_id = 'bench' AND key = 'k' || :client_id || '_' || :r AND state = 'started' AND lease_token = 'tok';
