/**
 * The demo's server supervisor: runs `oncely serve` as a child process and starts it again,
 * on the same port, every time an injected `crash-after` fault SIGKILLs it — the way systemd
 * or Kubernetes would. The clients only ever see a refused connection for a moment.
 *
 * @module
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

/**
 * The command line that runs a sibling CLI script in a fresh Node process: the same Node, the
 * same loader flags (`tsx` when running from source), and the script next to this one with
 * this file's extension (`.ts` from source, `.js` from `dist/`).
 *
 * @example
 * ```ts
 * const [command, ...args] = siblingScript('main');
 * spawn(command, [...args, 'serve', '--port', '0']);
 * ```
 */
export function siblingScript(name: string): [string, ...string[]] {
  const self = fileURLToPath(import.meta.url);
  const extension = self.slice(self.lastIndexOf('.'));
  const script = fileURLToPath(new URL(`./${name}${extension}`, import.meta.url));
  return [process.execPath, ...process.execArgv, script];
}

/** Options of {@link startSupervisedServer}. */
export interface SupervisedServerOptions {
  /** The SQLite file the server keeps its keys, payments, ledger and rail in. */
  readonly dbPath: string;
  /** The `--faults` spec; empty for none. */
  readonly faults: string;
  /** Extra `serve` arguments, e.g. `['--lease', '1s']`. */
  readonly extraArgs?: readonly string[];
  /** Gives up after this many restarts in a row that never printed the listening line. */
  readonly maxFailedStarts?: number;
  /** Called with each line the server logs on stderr (for `--verbose`). */
  readonly onLog?: (line: string) => void;
}

/** A running, supervised reference server. */
export interface SupervisedServer {
  /** `http://127.0.0.1:PORT`, stable across restarts. */
  readonly url: string;
  /** Times the server died (SIGKILLed by a fault) and was started again. */
  restarts(): number;
  /** Stops the server for good; resolves once the process has exited. */
  stop(): Promise<void>;
}

const LISTENING = /^oncely listening on (http:\/\/\S+)/;

/**
 * Starts `oncely serve` and keeps it running until {@link SupervisedServer.stop}.
 *
 * @throws Error when the server cannot be started (its stderr tail is in the message)
 *
 * @example
 * ```ts
 * const server = await startSupervisedServer({ dbPath: '/tmp/demo/oncely.db', faults: 'crash-after:EXT2_SENT:0.02' });
 * // ... drive payments at server.url ...
 * await server.stop();
 * ```
 */
export async function startSupervisedServer(options: SupervisedServerOptions): Promise<SupervisedServer> {
  const maxFailedStarts = options.maxFailedStarts ?? 5;
  let child: ChildProcess | undefined;
  let stopping = false;
  let restarts = 0;
  let failedStarts = 0;

  const launch = (port: number): Promise<string> =>
    new Promise<string>((resolve, reject) => {
      const [command, ...args] = siblingScript('main');
      const serveArgs = ['serve', '--host', '127.0.0.1', '--port', String(port), '--db', options.dbPath];
      if (options.faults !== '') serveArgs.push('--faults', options.faults);
      const proc = spawn(command, [...args, ...serveArgs, ...(options.extraArgs ?? [])], {
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { ...process.env, ONCELY_FAULTS: '' },
      });
      child = proc;
      const stderrTail: string[] = [];
      let listening = false;
      createInterface({ input: proc.stderr! }).on('line', (line) => {
        stderrTail.push(line);
        if (stderrTail.length > 20) stderrTail.shift();
        options.onLog?.(line);
      });
      createInterface({ input: proc.stdout! }).on('line', (line) => {
        const match = listening ? null : LISTENING.exec(line);
        if (match) {
          listening = true;
          resolve(match[1] as string);
        } else {
          options.onLog?.(line);
        }
      });
      proc.once('exit', (code, signal) => {
        if (!listening) {
          reject(new Error(`oncely serve exited (${signal ?? `code ${code}`}) before listening:\n${stderrTail.join('\n')}`));
        }
      });
      proc.once('error', reject);
    });

  const url = await launch(0);
  const port = Number(new URL(url).port);

  const supervise = (proc: ChildProcess): void => {
    proc.once('exit', () => {
      if (stopping) return;
      restarts += 1;
      // Restart on the same port so every client's baseUrl stays valid.
      const again = (): void => {
        launch(port).then(
          () => {
            failedStarts = 0;
            if (child) supervise(child);
          },
          (error: unknown) => {
            failedStarts += 1;
            if (stopping) return;
            if (failedStarts >= maxFailedStarts) {
              options.onLog?.(`oncely demo: giving up on the server: ${String(error)}`);
              return;
            }
            setTimeout(again, 200);
          },
        );
      };
      again();
    });
  };
  if (child) supervise(child);

  // A demo interrupted by an exception must not leave a server behind.
  const killOnExit = (): void => {
    child?.kill('SIGKILL');
  };
  process.once('exit', killOnExit);

  return {
    url,
    restarts: () => restarts,
    stop: async () => {
      stopping = true;
      process.off('exit', killOnExit);
      const proc = child;
      if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
      await new Promise<void>((resolve) => {
        proc.once('exit', () => resolve());
        proc.kill('SIGTERM');
        setTimeout(() => proc.kill('SIGKILL'), 3_000).unref();
      });
    },
  };
}
