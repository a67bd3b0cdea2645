/**
 * Static files for `oncely serve --static DIR`: the browser example is served from the same
 * origin as the API, so it needs no CORS.
 *
 * @module
 */
import { readFile, stat } from 'node:fs/promises';
import { extname, join, resolve, sep } from 'node:path';

const TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.map': 'application/json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.txt': 'text/plain; charset=utf-8',
};

/**
 * Creates a static-file responder over `dir`: `GET /` serves `index.html`, a directory serves its
 * `index.html`, a missing file or any path escaping `dir` resolves to `undefined` (→ `404`).
 *
 * @example
 * ```ts
 * const assets = createStaticFiles('public');
 * const app = createReferenceApp({ store, assets });
 * ```
 */
export function createStaticFiles(dir: string): (request: Request) => Promise<Response | undefined> {
  const root = resolve(dir);
  return async (request) => {
    let pathname: string;
    try {
      pathname = decodeURIComponent(new URL(request.url).pathname);
    } catch {
      return undefined;
    }
    if (pathname.includes('\0')) return undefined;
    let file = resolve(join(root, pathname));
    // `..` segments are already folded by URL parsing; this also catches encoded ones (%2e%2e).
    if (file !== root && !file.startsWith(root + sep)) return undefined;
    try {
      if ((await stat(file)).isDirectory()) file = join(file, 'index.html');
      const body = await readFile(file);
      const headers = { 'content-type': TYPES[extname(file).toLowerCase()] ?? 'application/octet-stream', 'cache-control': 'no-cache' };
      return new Response(request.method.toUpperCase() === 'HEAD' ? null : body, { headers });
    } catch {
      return undefined;
    }
  };
}
