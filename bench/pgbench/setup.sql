-- The key table as oncely's store creates it (src/server/store/postgres-schema.node.ts) and the
-- benchmark's charge table (bench/peers/payment.ts), in a schema of their own.
DROP SCHEMA IF EXISTS oncely_pgbench CASCADE;
CREATE SCHEMA oncely_pgbench;
CREATE TABLE oncely_pgbench.bench_executions (
  id TEXT PRIMARY KEY, reference TEXT NOT NULL, amount INTEGER NOT NULL, created_at TEXT NOT NULL);
CREATE TABLE oncely_pgbench.oncely_keys (
  client_id text NOT NULL, key text NOT NULL, request_hash text NOT NULL, endpoint text NOT NULL,
  request_body text NOT NULL, state text NOT NULL, recovery_point text, data jsonb NOT NULL DEFAULT '{}',
  response_status int, response_headers json, response_body text, lease_token text, lease_until timestamptz,
  watched boolean NOT NULL DEFAULT false, next_attempt_at timestamptz NOT NULL DEFAULT '-infinity',
  attempts int NOT NULL DEFAULT 0, created_at timestamptz NOT NULL, expires_at timestamptz NOT NULL,
  PRIMARY KEY (client_id, key));
CREATE INDEX ON oncely_pgbench.oncely_keys (next_attempt_at, created_at) WHERE state = 'started';
CREATE INDEX ON oncely_pgbench.oncely_keys USING brin (expires_at);
