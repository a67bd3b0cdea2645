/**
 * The applications under test, each a process of its own on the host: two `oncely serve`
 * instances (the reference payments server) and two Express apps with `transaction: true`
 * (`express-app.ts`). Instance 0 of each reaches the leader through the store's multi-host URL
 * (its `pg_is_in_recovery()` check per new connection), instance 1 through HAProxy on Patroni's
 * `/primary` check — so duplicates sent to "the other instance" also cross the two ways of finding
 * the leader.
 *
 * @module
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { ROOT, TSX } from '../lib/proc.js';

export const SERVE_SCHEMA = 'onc_serve';
export const EXPRESS_SCHEMA = 'onc_express';

/** One running application instance. */
export interface App {
  /** `serve-0`, `serve-1`, `express-0`, `express-1`. */
  readonly name: string;
  readonly app: 'serve' | 'express';
  readonly url: string;
  /** Every stdout line after the listening line (pino JSON for `oncely serve`). */
  readonly lines: readonly string[];
  /** The startup line about replication, as `oncely serve` logged it. */
  readonly replicationLine: string | undefined;
  stop(): Promise<void>;
}

const LISTENING = /listening on (http:\/\/\S+)/;

/** Every app process still running: a run stopped by a signal kills them before it exits. */
const live = new Set<ChildProcess>();

/** SIGKILLs every app process still running (the run's signal handler). */
export function killApps(): void {
  for (const child of live) child.kill('SIGKILL');
}

/** Spawns `argv` and resolves once it prints its listening line, keeping every line it prints before and after. */
async function spawnApp(name: string, app: App['app'], argv: readonly string[]): Promise<App> {
  const child: ChildProcess = spawn(argv[0]!, argv.slice(1), { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ONCELY_FAULTS: '' } });
  live.add(child);
  child.once('exit', () => live.delete(child));
  const lines: string[] = [];
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-3000)));
  const exited = once(child, 'exit');
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name}: not listening within 90 s\n${stderr}`)), 90_000);
    createInterface({ input: child.stdout! }).on('line', (line) => {
      lines.push(line);
      const match = LISTENING.exec(line);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    });
    void exited.then(() => reject(new Error(`${name} exited before listening\n${stderr}`)));
  });
  return {
    name,
    app,
    url,
    lines,
    get replicationLine() {
      return lines.find((line) => line.includes('"event":"replication"'));
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/**
 * Starts the four apps; `urls[0]` is the multi-host URL, `urls[1]` HAProxy's.
 *
 * @example
 * ```ts
 * const apps = await startApps([multiHostUrl, haproxyUrl]);
 * ```
 */
export async function startApps(urls: readonly [string, string]): Promise<App[]> {
  const started: App[] = [];
  try {
    for (const [i, url] of urls.entries()) {
      const serve = ['serve', '--port', '0', '--db', url, '--pg-schema', SERVE_SCHEMA, '--quiet', '--lease', '5s', '--recovery-interval', '500ms'];
      started.push(await spawnApp(`serve-${i}`, 'serve', [...TSX, join(ROOT, 'src/cli/main.ts'), ...serve]));
      started.push(await spawnApp(`express-${i}`, 'express', [...TSX, join(ROOT, 'bench/cluster/express-app.ts'), url, EXPRESS_SCHEMA]));
    }
    return started;
  } catch (error) {
    await Promise.all(started.map((app) => app.stop()));
    throw error;
  }
}
