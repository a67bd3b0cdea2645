/**
 * Test harness for `oncely serve` as a real process: spawn it from source, parse the listening
 * line, talk HTTP (or raw bytes) to it, read its SQLite file, stop it with SIGTERM or watch it die.
 *
 * The server runs as `node --import tsx src/cli/main.ts serve …`, one process, so a signal it
 * receives (or sends itself) is the one the test observes: no `npx`/`tsx` wrapper in between.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { openRawDb } from '../support/sqlite-db.js';
import { afterAll } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const LISTENING = /^oncely listening on (http:\/\/\S+)$/;

export interface Served {
  readonly url: string;
  readonly proc: ChildProcess;
  /** stdout lines after the listening line (pino JSON). */
  readonly lines: string[];
  readonly stderr: string[];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** SIGTERM and wait for the exit. */
  stop(): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** A fresh temporary directory, removed by the returned cleanup. */
export function tempDir(): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'oncely-serve-'));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Spawns `oncely serve --port 0 …args` and resolves once it listens (rejects if it exits first). */
/** Servers still running: killed after the file's tests, so a test that timed out leaves none behind. */
const live = new Set<ChildProcess>();
afterAll(() => {
  for (const proc of live) proc.kill('SIGKILL');
});

export function spawnServe(args: readonly string[], env: NodeJS.ProcessEnv = {}): Promise<Served> {
  const proc = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'serve', '--port', '0', ...args], {
    cwd: ROOT,
    env: { ...process.env, ONCELY_FAULTS: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  live.add(proc);
  proc.once('exit', () => live.delete(proc));
  const lines: string[] = [];
  const stderr: string[] = [];
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    proc.once('close', (code, signal) => resolve({ code, signal })),
  );
  createInterface({ input: proc.stderr! }).on('line', (line) => stderr.push(line));
  return new Promise<Served>((resolve, reject) => {
    let url: string | undefined;
    createInterface({ input: proc.stdout! }).on('line', (line) => {
      if (url !== undefined) return void lines.push(line);
      const match = LISTENING.exec(line);
      if (!match) return void reject(new Error(`first stdout line is not the listening line: ${line}`));
      url = match[1]!;
      resolve({
        url,
        proc,
        lines,
        stderr,
        exited,
        stop: () => {
          if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
          return exited;
        },
      });
    });
    void exited.then(({ code, signal }) => {
      if (url === undefined) reject(new Error(`oncely serve exited (${signal ?? code}) before listening: ${stderr.join('\n')}`));
    });
  });
}

let barriers = 0;

/**
 * Every line the server logged for the requests it answered before this call: sends one more
 * request, to a path of its own, and resolves once that request's line was read. The server
 * writes its lines in order to one pipe, so the lines before it are in `served.lines` too (a
 * response can reach a test before the line the server wrote for it is read off the pipe).
 */
export async function loggedSoFar(served: Served, timeoutMs = 10_000): Promise<string[]> {
  const path = `/__logged-so-far-${++barriers}`;
  await fetch(`${served.url}${path}`).then((response) => response.arrayBuffer());
  const mine = (line: string): boolean => line.includes(`"path":"${path}"`);
  if (!(await eventually(() => served.lines.some(mine), timeoutMs))) throw new Error(`the server never logged ${path}`);
  return served.lines.slice(0, served.lines.findIndex(mine));
}

/** Runs `oncely serve …args` expecting it to fail at startup. */
export async function serveFailure(args: readonly string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const proc = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'serve', '--port', '0', ...args], {
    cwd: ROOT,
    env: { ...process.env, ONCELY_FAULTS: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  proc.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  proc.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => proc.once('close', (exitCode) => resolve(exitCode)));
  if (code === 0 || code === null) proc.kill('SIGKILL');
  return { code, stdout, stderr };
}

export const paymentBody = (amount = 1250, reference = 'inv-7'): string => JSON.stringify({ amount, currency: 'EUR', reference });

/** POSTs a payment; a dropped connection (the server died) resolves to `undefined`. */
export async function postPayment(url: string, key: string, body = paymentBody(), token = 'test_acme'): Promise<Response | undefined> {
  try {
    return await fetch(`${url}/v1/payments`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'idempotency-key': key, 'content-type': 'application/json' },
      body,
    });
  } catch {
    return undefined;
  }
}

export async function getJson<T = Record<string, unknown>>(url: string, path: string, token = 'test_acme'): Promise<{ status: number; body: T }> {
  const response = await fetch(`${url}${path}`, { headers: { authorization: `Bearer ${token}` } });
  return { status: response.status, body: (await response.json()) as T };
}

/** Sends raw bytes as one HTTP/1.1 request and resolves to the status code (0 when the server hung up). */
export function rawRequest(url: string, head: Buffer, body: string): Promise<number> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname);
    let reply = '';
    socket.on('data', (chunk) => (reply += chunk.toString('latin1')));
    socket.on('error', () => resolve(0));
    socket.on('close', () => resolve(Number(/^HTTP\/1\.1 (\d{3})/.exec(reply)?.[1] ?? 0)));
    socket.write(Buffer.concat([head, Buffer.from(`content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`)]));
  });
}

/** A count from the server's SQLite file (read while it runs: WAL lets readers in). */
export function dbCount(path: string, sql: string, ...params: unknown[]): number {
  const db = openRawDb(path, { readonly: true, fileMustExist: true });
  try {
    return Number((db.prepare(sql).get(...params) as { n: number }).n);
  } finally {
    db.close();
  }
}

/** How often step H1/H2/H3 ran for the payment(s) of `key`. */
export function stepCount(path: string, step: string, key: string, clientId = 'acme'): number {
  return dbCount(
    path,
    `SELECT COUNT(*) AS n FROM payment_steps WHERE step = ? AND client_id = ?
     AND payment_id IN (SELECT id FROM payments WHERE idempotency_key = ? AND client_id = ?)`,
    step,
    clientId,
    key,
    clientId,
  );
}

/** Polls `check` every 50 ms until it returns true or `timeoutMs` passes. */
export async function eventually(check: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return check();
}
