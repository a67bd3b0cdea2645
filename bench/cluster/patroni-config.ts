/**
 * The configuration files of the cluster's daemons: Patroni's YAML for each node (etcd v3 as
 * its DCS; PostgreSQL 15 from Debian's binaries) and HAProxy's, which routes to whichever node
 * answers `200` on Patroni's REST `/primary`.
 *
 * Timings are Patroni's smallest sane ones so that a failover takes seconds, not a minute:
 * `ttl 12`, `loop_wait 2`, `retry_timeout 4` (Patroni requires `loop_wait + 2 × retry_timeout ≤
 * ttl`). `fsync = off`: only processes die here, never the machine, and the page cache survives
 * them (the same choice as the project's other throwaway clusters).
 *
 * @module
 */
import { ETCD, type Machine } from './netns.js';

/** How the cluster replicates. */
export const Replication = {
  /** `synchronous_mode: true`: a commit waits for the synchronous standby while one is healthy. */
  sync: 'sync',
  /** `synchronous_mode_strict` as well: with no standby, commits wait rather than go asynchronous. */
  strict: 'strict',
  /** Patroni's default: asynchronous streaming. */
  async: 'async',
} as const;
export type Replication = (typeof Replication)[keyof typeof Replication];

/**
 * Patroni's store for the leader key: etcd's v2 API (`etcd`) or its v3 API (`etcd3`). Debian 12's
 * Patroni 3.0.2 overwrites the leader key unconditionally in `etcd3` when its lease has expired
 * (fixed upstream in 3.0.3, patroni/patroni#2689): a leader paused past its TTL takes the key back
 * from the node promoted meanwhile. Its `etcd` (v2) module updates the key with test-and-set.
 */
export const Dcs = { etcd: 'etcd', etcd3: 'etcd3' } as const;
export type Dcs = (typeof Dcs)[keyof typeof Dcs];

export const PG_PORT = 5432;
export const REST_PORT = 8008;
export const PG_BIN = '/usr/lib/postgresql/15/bin';

/** Patroni's YAML for node `name` on `machine`, its files under `dir`. */
export function patroniYaml(name: string, machine: Machine, dir: string, replication: Replication, dcs: Dcs): string {
  return `scope: onc-cluster
name: ${name}
log:
  level: INFO
restapi:
  listen: ${machine.ip}:${REST_PORT}
  connect_address: ${machine.ip}:${REST_PORT}
${dcs}:
  hosts: ${ETCD.ip}:2379
bootstrap:
  dcs:
    ttl: 12
    loop_wait: 2
    retry_timeout: 4
    maximum_lag_on_failover: 1048576
    synchronous_mode: ${replication !== 'async'}
    synchronous_mode_strict: ${replication === 'strict'}
    postgresql:
      use_pg_rewind: true
      use_slots: true
      parameters:
        wal_level: replica
        hot_standby: 'on'
        wal_log_hints: 'on'
        max_wal_senders: 10
        max_replication_slots: 10
        max_connections: 200
        fsync: 'off'
        log_line_prefix: '%m [%p] %a '
        log_min_messages: warning
  initdb:
    - encoding: UTF8
    - auth: trust
postgresql:
  listen: ${machine.ip}:5432
  connect_address: ${machine.ip}:5432
  data_dir: ${dir}/data
  bin_dir: ${PG_BIN}
  pgpass: ${dir}/pgpass
  authentication:
    replication:
      username: postgres
    superuser:
      username: postgres
    rewind:
      username: postgres
  parameters:
    unix_socket_directories: '${dir}'
  pg_hba:
    - local all all trust
    - host all all 0.0.0.0/0 trust
    - host replication all 0.0.0.0/0 trust
tags:
  nofailover: false
  noloadbalance: false
  clonefrom: false
  nosync: false
`;
}

/** HAProxy listening on `port` (loopback), sending each connection to the node whose `/primary` answers 200. */
export function haproxyConfig(port: number, backends: readonly { readonly name: string; readonly machine: Machine; readonly via?: string }[]): string {
  const servers = backends.map(
    // `via`: where the connection goes (a proxy adding latency); the health check always asks the node.
    (b) => `  server ${b.name} ${b.via ?? `${b.machine.ip}:${PG_PORT}`} check addr ${b.machine.ip} port ${REST_PORT} on-marked-down shutdown-sessions`,
  );
  return `global
  maxconn 1000
defaults
  mode tcp
  timeout connect 3s
  timeout client 60s
  timeout server 60s
  timeout check 1s
listen primary
  bind 127.0.0.1:${port}
  option httpchk OPTIONS /primary
  http-check expect status 200
  default-server inter 500ms fall 2 rise 2
${servers.join('\n')}
`;
}
