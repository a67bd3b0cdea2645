/**
 * Child processes for the benchmarks: servers started on port 0 that announce their URL on
 * stdout, and one-shot scripts whose last stdout line is a JSON result.
 *
 * @module
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';

/** The repository root (bench/lib/ → ../../). */
export const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** `node --import tsx`: runs a TypeScript entry in a fresh process without a build step. */
export const TSX = [process.execPath, '--import', 'tsx'] as const;

/** A running server child. */
export interface ServerProcess {
  /** e.g. `http://127.0.0.1:41234` */
  readonly url: string;
  readonly child: ChildProcess;
  /** SIGKILL, then wait for the exit: the crash the benchmarks inject. */
  kill(): Promise<void>;
  /** SIGTERM, escalating to SIGKILL after `graceMs`. */
  stop(graceMs?: number): Promise<void>;
}

/** Options of {@link startServer}. */
export interface StartOptions {
  readonly env?: Readonly<Record<string, string>>;
  /** Give up when no URL was announced within this time. */
  readonly timeoutMs?: number;
}

const LISTENING = /listening on (https?:\/\/[^\s"]+)/;

/**
 * Spawns `argv` and resolves once a stdout line says `listening on http://HOST:PORT`
 * (the reference server's `oncely listening on …` and the peers' `peer … listening on …`).
 *
 * @example
 * ```ts
 * const server = await startServer([...TSX, 'src/cli/main.ts', 'serve', '--port', '0', '--db', file]);
 * await fetch(`${server.url}/healthz`);
 * await server.stop();
 * ```
 */
export async function startServer(argv: readonly string[], options: StartOptions = {}): Promise<ServerProcess> {
  const [cmd, ...args] = argv;
  if (cmd === undefined) throw new TypeError('startServer: empty argv');
  const child = spawn(cmd, args, {
    cwd: ROOT,
    env: { ...process.env, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  const exited = once(child, 'exit');
  const url = await new Promise<string>((resolve, reject) => {
    let buffered = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${argv.join(' ')}: no "listening on" line within ${options.timeoutMs ?? 90_000} ms\n${stderr}`));
    }, options.timeoutMs ?? 90_000);
    child.stdout?.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      const match = LISTENING.exec(buffered);
      if (match?.[1]) {
        clearTimeout(timer);
        // Keep draining stdout: a full pipe would block a server that logs every request.
        buffered = '';
        resolve(match[1].replace('localhost', '127.0.0.1'));
      }
    });
    void exited.then(([code, signal]) => {
      clearTimeout(timer);
      reject(new Error(`${argv.join(' ')} exited (${String(code ?? signal)}) before listening\n${stderr}`));
    });
  });
  const waitExit = async (): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    await exited;
  };
  return {
    url,
    child,
    async kill() {
      child.kill('SIGKILL');
      await waitExit();
    },
    async stop(graceMs = 3000) {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      await waitExit();
      clearTimeout(timer);
    },
  };
}

/**
 * Runs a script to completion and parses the last non-empty stdout line as JSON. With
 * `timeoutMs`, the script's whole process group is SIGKILLed when it runs longer (a benchmark
 * that spawned servers of its own must not leave them behind).
 *
 * @example
 * ```ts
 * const result = await runJson<{ rps: number }>([...TSX, 'bench/lib/load-worker.ts', JSON.stringify(spec)]);
 * ```
 */
export async function runJson<T>(argv: readonly string[], env: Readonly<Record<string, string>> = {}, timeoutMs?: number): Promise<T> {
  const [cmd, ...args] = argv;
  if (cmd === undefined) throw new TypeError('runJson: empty argv');
  const child = spawn(cmd, args, {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: timeoutMs !== undefined,
  });
  let stdout = '';
  let stderr = '';
  let timedOut = false;
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr = (stderr + c.toString()).slice(-4000)));
  const timer =
    timeoutMs === undefined
      ? undefined
      : setTimeout(() => {
          timedOut = true;
          if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
        }, timeoutMs);
  const [code] = (await once(child, 'exit')) as [number | null, NodeJS.Signals | null];
  clearTimeout(timer);
  const last = stdout.trim().split('\n').at(-1) ?? '';
  if (timedOut) throw new Error(`${argv.slice(0, 4).join(' ')} ran over ${timeoutMs} ms and was stopped\n${stdout.slice(-2000)}`);
  if (code !== 0) throw new Error(`${argv.slice(0, 4).join(' ')} exited ${String(code)}\n${stderr}`);
  try {
    return JSON.parse(last) as T;
  } catch {
    throw new Error(`${argv.slice(0, 4).join(' ')}: last stdout line is not JSON: ${last.slice(0, 200)}\n${stdout.slice(-2000)}`);
  }
}

/** Resolves after `ms`. */
export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
