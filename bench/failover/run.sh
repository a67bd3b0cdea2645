#!/bin/sh
# Payments across a PostgreSQL primary failover, synchronous then asynchronous replication:
# builds a primary + streaming standby from /usr/lib/postgresql/*/bin on free loopback ports,
# runs two `oncely serve` instances on the host list and a retrying client load, kills the
# primary (-m immediate) mid-load, promotes the standby, and counts lost keys and duplicate
# effects. Prints a table; writes bench/results/failover.json. Options go to load.ts, e.g.
#   bench/failover/run.sh --trials 3 --lag-ms 10
set -eu
cd "$(dirname "$0")/../.."
exec npx tsx bench/failover/load.ts "$@"
