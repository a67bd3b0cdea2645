/**
 * `oncely --version`: the version of the package the running CLI belongs to.
 *
 * @module
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The `version` of the nearest `package.json` named `oncely` above `from` (default: this file),
 * or `undefined` when there is none.
 *
 * Walking up rather than importing `../../package.json` keeps one answer for every layout the
 * CLI runs from: `src/cli/` through tsx, `dist/cli/` after a build, and
 * `node_modules/oncely/dist/cli/` once installed. A `package.json` of another name on the way
 * (a `{"type": "module"}` marker in a build directory, say) is passed over.
 *
 * @example
 * ```ts
 * packageVersion(); // '0.1.0'
 * ```
 */
export function packageVersion(from: string | URL = import.meta.url): string | undefined {
  let dir = dirname(fileURLToPath(from));
  for (;;) {
    const candidate = join(dir, 'package.json');
    if (existsSync(candidate)) {
      const manifest = readManifest(candidate);
      if (manifest?.name === 'oncely' && typeof manifest.version === 'string') return manifest.version;
    }
    const parent = dirname(dir);
    if (parent === dir) return undefined;
    dir = parent;
  }
}

function readManifest(path: string): { readonly name?: unknown; readonly version?: unknown } | undefined {
  try {
    const manifest: unknown = JSON.parse(readFileSync(path, 'utf8'));
    return typeof manifest === 'object' && manifest !== null ? manifest : undefined;
  } catch {
    // Unreadable or not JSON: not the manifest we are looking for; keep walking up.
    return undefined;
  }
}
