/**
 * `oncely serve`: the reference payments server over HTTP (`@hono/node-server`).
 *
 * stdout: the first line is `oncely listening on http://HOST:PORT` (tests and the demo parse it),
 * then one pino JSON line per request and per lifecycle event; the `started` line says where the
 * database is (an SQLite file by its absolute path). stderr: startup errors only.
 *
 * SIGTERM/SIGINT: new requests get `503` at once; requests in flight get `--grace` to finish (one
 * still running after that has its lease released: its row keeps its recovery point and is taken
 * over at once by the next server); the recovery worker and reaper stop, the store closes, exit 0.
 *
 * @module
 */
import { withCors } from '../reference/cors.js';
import { readFile } from 'node:fs/promises';
import type { serve as listen } from '@hono/node-server';
import type { pino as Pino } from 'pino';
import { isOncelyError } from '../errors.js';
import { assertPeers, importPeer, type PeerName } from '../optional-peer.node.js';
import { createReferenceApp, type ReferenceApp } from '../reference/app.js';
import { createClients, parseClients } from '../reference/clients.js';
import { createFaults } from '../reference/faults.js';
import { createStaticFiles } from '../reference/static-files.node.js';
import { nodeDigest } from '../digest.node.js';
import { needsBetterSqlite3 } from '../sqlite/driver.node.js';
import { SERVER_DEFAULTS } from '../server/options.js';
import { listenHttp } from './serve-listen.js';
import { describeWakeUps, logReplication, redacted } from './serve-postgres.js';
import { describeDb, isMysql, isPostgres, openStore, resolveDb, type PgFlags } from './serve-store.js';
import { type CommandSpec, type OptionSpec, parseCommandArgs, readDuration, readInteger, reportParseFailure, usageError } from './args.js';

const spec = {
  name: 'serve',
  description:
    'Run the reference payments server: POST /v1/payments made idempotent, the simulated risk check and rail, ' +
    'the inbox, ledger and metrics. Durations take a unit: 300ms, 10s, 5m, 24h, 7d.',
  options: {
    port: { type: 'string', value: 'N', help: 'TCP port; 0 picks a free one (default 8787)' },
    host: { type: 'string', value: 'HOST', help: 'interface to bind (default 127.0.0.1)' },
    db: { type: 'string', value: 'PATH|URL', help: 'SQLite file, or postgres://… (default oncely-server.db)' },
    'mysql-url': { type: 'string', value: 'URL', help: 'keys and app tables on MySQL 8 / MariaDB 10.11 instead: mysql://user:password@host:3306/database' },
    'pg-schema': { type: 'string', value: 'NAME', help: 'schema for the key and app tables (default: the search_path in the URL options, else public)' },
    'pg-listen-url': {
      type: 'string',
      value: 'URL',
      help: "PostgreSQL's own URL for LISTEN when --db goes through a pooler (default: --db; behind a pooler, waits poll)",
    },
    'pg-prepared-statements': { type: 'string', value: 'on|off', help: 'named prepared statements (default: on when --db is direct, off behind a pooler)' },
    clients: { type: 'string', value: 'FILE', help: 'JSON {"<token>": "<client_id>"} (default: demo callers)' },
    'key-ttl': { type: 'string', value: 'DURATION', help: 'how long finished keys are kept (default 24h)' },
    lease: { type: 'string', value: 'DURATION', help: `owner lease between phase commits, below --key-ttl (default ${SERVER_DEFAULTS.leaseMs / 1000}s)` },
    'in-flight-wait': {
      type: 'string',
      value: 'DURATION',
      help: `how long a duplicate waits for the original before 409; 0 answers at once (default ${SERVER_DEFAULTS.inFlightWaitMs / 1000}s)`,
    },
    faults: { type: 'string', value: 'SPEC', help: 'fault injection, e.g. crash-after:EXT2_SENT:0.2 (default $ONCELY_FAULTS)' },
    static: { type: 'string', value: 'DIR', help: 'serve static files from DIR on the same origin' },
    cors: { type: 'string', value: 'ORIGIN', multiple: true, help: 'allow browser callers from ORIGIN (repeatable), e.g. https://shop.example' },
    'recovery-interval': { type: 'string', value: 'DURATION', help: 'recovery worker sweep interval; 0 disables it (default 1s)' },
    'reaper-interval': { type: 'string', value: 'DURATION', help: 'reaper pass interval; 0 disables it (default 60s)' },
    grace: { type: 'string', value: 'DURATION', help: 'how long shutdown waits for requests in flight (default 10s)' },
    'request-timeout': {
      type: 'string',
      value: 'DURATION',
      help: 'how long a request may take to arrive, headers and body; a slower one gets 408 (default 30s)',
    },
    metrics: { type: 'boolean', help: 'serve GET /metrics (global counters) to anyone who reaches the port (default: off)' },
    'metrics-token': { type: 'string', value: 'TOKEN', help: 'serve GET /metrics only with Authorization: Bearer TOKEN (default $ONCELY_METRICS_TOKEN)' },
    quiet: { type: 'boolean', help: 'no per-request log lines' },
  },
} as const satisfies CommandSpec<Record<string, OptionSpec>>;

async function readClientsFile(path: string): Promise<Record<string, string>> {
  try {
    return parseClients(JSON.parse(await readFile(path, 'utf8')));
  } catch (error) {
    throw new Error(`--clients ${path}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
}

/**
 * Runs `oncely serve`. Resolves with the exit code once the server has shut down.
 *
 * @example
 * ```ts
 * process.exitCode = await serve(['--port', '0', '--db', '/tmp/oncely.db', '--lease', '300ms']);
 * ```
 */
export async function serve(argv: readonly string[]): Promise<number> {
  // Listening for the stop signals from the very start: a SIGTERM that arrives while the store is
  // opening or just after the listening line must still mean "drain and exit 0", not a hard kill.
  const stopSignal = new Promise<NodeJS.Signals>((resolve) => {
    process.once('SIGTERM', () => resolve('SIGTERM'));
    process.once('SIGINT', () => resolve('SIGINT'));
  });
  const parsed = parseCommandArgs(argv, spec);
  if (!parsed.ok) return reportParseFailure(parsed);
  const values = parsed.values;
  const fail = (problem: string): number => reportParseFailure(usageError(spec, problem));

  const port = readInteger('port', values.port, 8787, 0, 65_535);
  if (!port.ok) return fail(port.problem);
  const durations: Record<string, number> = {};
  for (const [name, fallback] of [
    // The server library's own defaults (`SERVER_DEFAULTS`): one set for every front end.
    ['key-ttl', `${SERVER_DEFAULTS.ttlMs}ms`],
    ['lease', `${SERVER_DEFAULTS.leaseMs}ms`],
    ['in-flight-wait', `${SERVER_DEFAULTS.inFlightWaitMs}ms`],
    ['recovery-interval', '1s'],
    ['reaper-interval', '60s'],
    ['grace', '10s'],
    ['request-timeout', '30s'],
  ] as const) {
    const duration = readDuration(name, values[name], { fallback });
    if (!duration.ok) return fail(duration.problem);
    durations[name] = duration.value;
  }
  const leaseMs = durations['lease']!;
  const origins = values.cors ?? [];
  const badOrigin = origins.find((origin) => !isOrigin(origin));
  if (badOrigin !== undefined) return fail(`--cors takes an origin such as https://shop.example, got ${JSON.stringify(badOrigin)}`);
  const ttlMs = durations['key-ttl']!;
  if (leaseMs < 100) return fail('--lease must be at least 100ms');
  if (ttlMs <= leaseMs) return fail('--key-ttl must be longer than the lease');
  if (durations['request-timeout']! < 1) return fail('--request-timeout must be longer than 0: every request needs a bound on its arrival');

  const metricsToken = values['metrics-token'] ?? process.env['ONCELY_METRICS_TOKEN'];
  if (metricsToken !== undefined && !/^[\x21-\x7e]{16,}$/.test(metricsToken)) {
    return fail('--metrics-token (or $ONCELY_METRICS_TOKEN) must be at least 16 printable ASCII characters without spaces');
  }
  const metrics = metricsToken !== undefined ? { token: metricsToken } : values.metrics === true ? 'open' : 'off';

  const mysqlUrl = values['mysql-url'];
  if (mysqlUrl !== undefined && values.db !== undefined) return fail('give --db or --mysql-url, not both');
  if (mysqlUrl !== undefined && !isMysql(mysqlUrl)) return fail(`--mysql-url takes a mysql:// URL, got ${JSON.stringify(redacted(mysqlUrl))}`);
  const db = resolveDb(mysqlUrl ?? values.db ?? 'oncely-server.db');
  const prepared = values['pg-prepared-statements'];
  if (prepared !== undefined && prepared !== 'on' && prepared !== 'off')
    return fail(`--pg-prepared-statements takes on or off, got ${JSON.stringify(prepared)}`);
  const listenUrl = values['pg-listen-url'];
  if (listenUrl !== undefined && !isPostgres(listenUrl)) return fail(`--pg-listen-url takes a postgres:// URL, got ${JSON.stringify(redacted(listenUrl))}`);
  const pgFlags: PgFlags = { schema: values['pg-schema'], listenUrl, prepared: prepared === undefined ? undefined : prepared === 'on' };
  // Optional peers of the package: every missing one is named at once, with its install command.
  let peers: { readonly listen: typeof listen; readonly pino: typeof Pino };
  try {
    // SQLite needs no package where Node has node:sqlite (22.16+).
    const store: PeerName[] = isPostgres(db) ? ['pg'] : isMysql(db) ? ['mysql2'] : needsBetterSqlite3() ? ['better-sqlite3'] : [];
    assertPeers('`oncely serve`', ['@hono/node-server', 'pino', ...store]);
    const [hono, logger] = await Promise.all([importPeer<{ serve: typeof listen }>('@hono/node-server'), importPeer<{ pino: typeof Pino }>('pino')]);
    peers = { listen: hono.serve, pino: logger.pino };
  } catch (error) {
    if (!isOncelyError(error)) throw error;
    console.error(`oncely serve: ${error.message}`);
    return 1;
  }
  const log = peers.pino({ base: { pid: process.pid }, messageKey: 'msg' });
  let app: ReferenceApp;
  try {
    const faults = createFaults({ spec: values.faults ?? process.env['ONCELY_FAULTS'] ?? '' });
    const clients = values.clients === undefined ? createClients() : createClients(await readClientsFile(values.clients));
    const store = await openStore(db, pgFlags);
    app = createReferenceApp({
      store,
      clients,
      faults,
      leaseMs,
      ttlMs,
      metrics,
      inFlightWaitMs: durations['in-flight-wait']!,
      // A crash fault is a real crash: no cleanup, no flush, exactly what a power cut leaves behind.
      crash: () => process.kill(process.pid, 'SIGKILL'),
      recoveryIntervalMs: durations['recovery-interval'] || 1000,
      reaperIntervalMs: durations['reaper-interval'] || 60_000,
      assets: values.static === undefined ? undefined : createStaticFiles(values.static),
      digest: nodeDigest,
      onError: (error, request) => log.error({ err: error, method: request.method, path: new URL(request.url).pathname }, 'request failed'),
      onAttemptError: (error, ref) => log.warn({ err: error, client: ref.clientId, key: ref.key }, 'attempt failed; the request stays retryable'),
    });
    await app.ready;
  } catch (error) {
    console.error(`oncely serve: ${error instanceof Error ? error.message : String(error)}`);
    return 1;
  }

  const quiet = values.quiet === true;
  const answer = withCors((request) => app.fetch(request), origins);
  const fetch = async (request: Request): Promise<Response> => {
    const started = performance.now();
    const response = await answer(request);
    if (!quiet) {
      log.info({
        method: request.method,
        path: new URL(request.url).pathname,
        status: response.status,
        ms: Math.round((performance.now() - started) * 10) / 10,
        key: request.headers.get('idempotency-key') ?? undefined,
        replay: response.headers.get('idempotency-replay') === 'true' || undefined,
      });
    }
    return response;
  };

  const server = await listenHttp(peers.listen, {
    fetch,
    port: port.value,
    host: values.host ?? '127.0.0.1',
    requestTimeoutMs: durations['request-timeout']!,
  });
  if (server === undefined) {
    await app.close(0);
    return 1;
  }
  log.info({
    event: 'started',
    store: app.store.dialect,
    db: redacted(db),
    leaseMs,
    ttlMs,
    faults: app.faults.rules.length > 0 ? app.faults.rules.map((rule) => `${rule.kind}:${rule.target}:${rule.value}`) : undefined,
    clients: app.clients.ids,
    metrics: typeof metrics === 'object' ? 'token' : metrics,
    msg:
      `${describeDb(db, values['pg-schema'])}; ` +
      (isPostgres(db) ? `${describeWakeUps(listenUrl)}; ` : '') +
      (app.clients.demo
        ? 'demo callers: token test_acme → client acme, token test_globex → client globex (use --clients FILE for real ones)'
        : 'callers loaded from --clients'),
  });
  // After the listening line, which stays the first line on stdout.
  if (isPostgres(db)) await logReplication(db, log);
  if (durations['recovery-interval']! > 0) app.worker.start();
  if (durations['reaper-interval']! > 0) app.reaper.start();
  // A store without sweep() or reap() (both optional) runs without that loop: said once, not crashed on.
  for (const loop of [app.worker, app.reaper]) if (loop.unsupported) log.warn({ event: 'loop-unsupported', msg: loop.unsupported });

  const signal = await stopSignal;
  log.info({ event: 'draining', signal, inFlight: app.inFlight() });
  const unfinished = await app.close(durations['grace']!);
  await new Promise<void>((resolve) => {
    server.close(() => resolve());
    // Idle keep-alive sockets would hold close() open; requests were already answered above.
    if ('closeAllConnections' in server) server.closeAllConnections();
  });
  log.info({ event: 'stopped', unfinished });
  return 0;
}

/** `scheme://host[:port]` and nothing more, as a browser sends it in `Origin`. */
function isOrigin(text: string): boolean {
  try {
    const url = new URL(text);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.origin === text;
  } catch {
    return false;
  }
}
