/**
 * Test helpers for the CLI: run `oncely` commands as real processes and a real reference
 * server on 127.0.0.1, port 0.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createInterface } from 'node:readline';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** The CLI entry, run from source through tsx's loader. */
export const MAIN = fileURLToPath(new URL('../../../src/cli/main.ts', import.meta.url));
/** tsx's loader by absolute URL: a bare `--import tsx` is resolved from the working directory. */
export const NODE_ARGS = ['--import', pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href];

export interface RunResult {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Starts `oncely <args>` (in `cwd`, default this process's); the promise resolves when it exits. */
export function startCli(args: readonly string[], env: NodeJS.ProcessEnv = {}, cwd?: string): { child: ChildProcess; done: Promise<RunResult> } {
  const child = spawn(process.execPath, [...NODE_ARGS, MAIN, ...args], {
    ...(cwd === undefined ? {} : { cwd }),
    env: { ...process.env, ONCELY_FAULTS: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const done = new Promise<RunResult>((resolve) => child.once('close', (code, signal) => resolve({ code, signal, stdout, stderr })));
  return { child, done };
}

/** Runs `oncely <args>` to completion. */
export function runCli(args: readonly string[], env: NodeJS.ProcessEnv = {}): Promise<RunResult> {
  return startCli(args, env).done;
}

export interface TestServer {
  readonly url: string;
  stop(): Promise<void>;
  /** `GET path` as the caller with `token` (default: the demo caller acme), parsed as JSON. */
  get<T>(path: string, token?: string): Promise<T>;
}

/**
 * Starts `oncely serve --port 0 --db <db>` and waits for its listening line. Each name in
 * `callers` becomes a caller of its own, token `tok_<name>`, so that tests sharing a server
 * never count each other's ledger entries; `test_acme` stays the demo caller acme. `extraArgs`
 * go to `oncely serve` as they are (e.g. `--faults slow:ext1:300`).
 */
export async function startServer(db: string, callers: readonly string[] = [], extraArgs: readonly string[] = []): Promise<TestServer> {
  const clientsFile = `${db}.clients.json`;
  const clients: Record<string, string> = { test_acme: 'acme' };
  for (const name of callers) clients[`tok_${name}`] = name;
  writeFileSync(clientsFile, JSON.stringify(clients));
  const child = spawn(process.execPath, [...NODE_ARGS, MAIN, 'serve', '--port', '0', '--db', db, '--quiet', '--clients', clientsFile, ...extraArgs], {
    env: { ...process.env, ONCELY_FAULTS: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const match = /^oncely listening on (\S+)/.exec(line);
      if (match) resolve(match[1]!);
    });
    child.stdout!.resume();
    child.once('exit', (code) => reject(new Error(`oncely serve exited with ${code}: ${stderr}`)));
  });
  return {
    url,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      await new Promise<void>((resolve) => {
        child.once('exit', () => resolve());
        child.kill('SIGKILL');
      });
    },
    async get<T>(path: string, token = 'test_acme'): Promise<T> {
      const response = await fetch(new URL(path, url), { headers: { authorization: `Bearer ${token}` } });
      return (await response.json()) as T;
    },
  };
}

/** The number of ledger entries of the caller with `token` (default: the demo caller acme). */
export async function ledgerCount(server: TestServer, token?: string): Promise<number> {
  return (await server.get<{ count: number }>('/v1/ledger?limit=0', token)).count;
}
