import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { bundleBrowserEntry, type BrowserBundle } from './bundle-browser-entry.js';

/**
 * The size goal for oncely's own client code in a browser, ky left out: 15 KB from issue 6, then
 * raised on 2026-12-06 for what two issues asked of every browser user, each measured with this
 * bundle: the trust-boundary checks of issue 33 (a row checked against its fingerprint and origin
 * before it is resent; credentials kept out of the journal by rule), 14 915 → 15 796 B, and the
 * followable operation of issue 37 (state, subscribe, settled, resume follow), about +590 B.
 * Raised again on 2026-12-07 for issue 46's promises, 17 049 → 18 367 B, each step measured here:
 * the claim held from put() on IndexedDB (the Web Lock taken before the row) and the refusal rule
 * +318 B; close() waiting for the outcomes written behind +309 B; the attempt's whole-time timer
 * and the client's following()/subscribe() for usePendingOperations +353 B; the row seal checked
 * on every read +318 B (plus the split of the IndexedDB insertion, +20 B).
 * Raised again on 2026-12-08 for issue 50's server-side rendering, 18 372 → 18 644 B: a relative
 * baseUrl where there is no page is resolved at the first call instead of throwing in
 * createClient (src/client/base-url.ts, and the call named in its error) +272 B.
 */
const CLIENT_GZIP_BUDGET = 18.5 * 1024;

describe('the browser entry bundled with esbuild for the browser platform', () => {
  let whole: BrowserBundle;
  let withoutKy: BrowserBundle;

  beforeAll(async () => {
    [whole, withoutKy] = await Promise.all([bundleBrowserEntry(), bundleBrowserEntry({ external: ['ky'] })]);
  });

  it('imports no node: module, Node built-in, better-sqlite3 or pg', () => {
    expect(whole.forbiddenImports).toEqual([]);
  });

  it('names every Node built-in a browser module reaches, so the check above cannot pass vacuously', async () => {
    const leaky = await bundleBrowserEntry({ entry: fileURLToPath(new URL('./fixtures/leaky-entry.ts', import.meta.url)) });
    expect(leaky.forbiddenImports).toEqual(['node:fs (from test/bundle/fixtures/leaky-entry.ts)', 'path (from test/bundle/fixtures/leaky-entry.ts)']);
  });

  it('contains no Node-only source file (*.node.ts, src/node.ts, src/server, src/cli)', () => {
    const nodeOnly = whole.inputs.filter((input) =>
      /(\.node\.ts$|^src\/node\.ts$|^src\/server\/|^src\/cli\/|node_modules\/(better-sqlite3|pg|pino)\/)/.test(input),
    );
    expect(nodeOnly).toEqual([]);
  });

  it('keeps the client without ky under 18.5 KB minified and gzipped', () => {
    expect(withoutKy.inputs.some((input) => input.includes('node_modules/ky/'))).toBe(false);
    expect(withoutKy.gzipBytes).toBeLessThan(CLIENT_GZIP_BUDGET);
  });
});
