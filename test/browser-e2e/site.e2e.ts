/**
 * `npm run docs` builds one static site (the guides and the API reference), and every page of it
 * opens in real Chromium (Debian's, through Playwright: never downloaded) with no console error
 * and no failed request, served over HTTP as a host would. TypeDoc runs with
 * `treatWarningsAsErrors` and link validation, so a broken link inside the site fails the build.
 */
import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { extname, join, normalize, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser } from 'playwright';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from './harness.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const TYPES: Record<string, string> = {
  '.html': 'text/html',
  '.js': 'text/javascript',
  '.css': 'text/css',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.json': 'application/json',
};

let out: string;
let server: Server;
let origin: string;
let browser: Browser;

const pagesOf = (dir: string): string[] =>
  readdirSync(dir).flatMap((name) => (statSync(join(dir, name)).isDirectory() ? pagesOf(join(dir, name)) : name.endsWith('.html') ? [join(dir, name)] : []));

beforeAll(async () => {
  out = mkdtempSync(join(tmpdir(), 'oncely-site-'));
  execFileSync(process.execPath, [join(ROOT, 'node_modules/typedoc/bin/typedoc'), '--out', out], { cwd: ROOT, stdio: 'pipe' });
  server = createServer((request, response) => {
    // The browser asks every host for /favicon.ico by itself; the site links none.
    if (request.url === '/favicon.ico') return void response.writeHead(204).end();
    const path = normalize(join(out, decodeURIComponent(new URL(request.url ?? '/', 'http://x').pathname)));
    try {
      if (!path.startsWith(out)) throw new Error('outside');
      const file = statSync(path).isDirectory() ? join(path, 'index.html') : path;
      response.writeHead(200, { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream' }).end(readFileSync(file));
    } catch {
      response.writeHead(404).end();
    }
  }).listen(0, '127.0.0.1');
  await once(server, 'listening');
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  browser = await launchChromium();
}, 240_000);

afterAll(async () => {
  await browser?.close();
  server?.close();
  if (out) rmSync(out, { recursive: true, force: true });
});

describe('the docs site (npm run docs)', () => {
  it('holds every guide and the API reference of each client entry', () => {
    const pages = pagesOf(out).map((file) => relative(out, file));
    for (const guide of [
      'client',
      'browser',
      'react',
      'upload',
      'server',
      'middleware',
      'postgresql',
      'reference-server',
      'PROTOCOL',
      'conformance',
      'benchmarks',
      'testing',
    ]) {
      expect(pages).toContain(`documents/${guide}.html`);
    }
    expect(pages.filter((page) => page.startsWith('modules/')).length).toBeGreaterThanOrEqual(10);
  });

  it('opens every page in Chromium with no console error and no failed request', async () => {
    const pages = pagesOf(out);
    expect(pages.length).toBeGreaterThan(50);
    const context = await browser.newContext();
    const page = await context.newPage();
    const problems: string[] = [];
    let current = '';
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(`${current}: console: ${message.text()} (${message.location().url})`);
    });
    page.on('pageerror', (error) => problems.push(`${current}: ${error.message}`));
    page.on('response', (response) => {
      if (response.status() >= 400) problems.push(`${current}: ${response.status()} ${response.url()}`);
    });
    for (const file of pages) {
      current = relative(out, file);
      await page.goto(`${origin}/${current}`, { waitUntil: 'load' });
    }
    await context.close();
    expect(problems).toEqual([]);
  }, 300_000);
});
