#!/bin/sh
# The Patroni + etcd cluster matrix (bench/cluster/run.ts): faults done to the leader under a load
# of real oncely parts, every client history checked. Needs root. Whatever happens, the namespaces,
# the bridge, the daemons and the data directories are removed on exit.
set -u
cd "$(dirname "$0")/../.."
trap 'node --import tsx bench/cluster/run.ts --teardown >/dev/null 2>&1' EXIT INT TERM
node --import tsx bench/cluster/run.ts "$@"
