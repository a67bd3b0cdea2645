/**
 * The repository's own paths a shipped page names (`examples/…`, `test/…`, `bench/…`,
 * `scripts/…`, `src/…`), and whether a reader of the installed package can reach each one: the
 * file ships in the package, or the page links it at the repository, whose address is written in
 * one place, package.json's `repository`. A code block of commands run in a clone of the
 * repository says so by naming that address. Shared by the package test (on the tarball's pages
 * and listing) and the docs test (every such link names a file of the repository).
 */

/** The folders of the repository that a page may name and the package does not ship whole. */
const ROOTS = 'examples|test|bench|scripts|src';

/** A path under one of {@link ROOTS}, as a page writes it (in backticks or not). */
const PATH = new RegExp(`(?<![\\w./:-])((?:${ROOTS})/[\\w./+-]*)`, 'g');

/** The repository's web address from package.json's `repository` (`git+https://….git` or a URL). */
export function repositoryWeb(pkg: { readonly repository?: string | { readonly url?: string } }): string {
  const url = typeof pkg.repository === 'string' ? pkg.repository : pkg.repository?.url;
  if (url === undefined) throw new Error('package.json names no repository: the pages link the files the package does not ship there');
  return url.replace(/^git\+/, '').replace(/\.git$/, '');
}

/** The repository paths a page links at `web` (`…/blob/main/test/x.ts`, `…/tree/main/test/contract`). */
export function repositoryLinks(text: string, web: string): string[] {
  const escaped = web.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return [...text.matchAll(new RegExp(`\\]\\(${escaped}/(?:blob|tree)/main/([^)#\\s]+)(?:#[^)]*)?\\)`, 'g'))].map((match) => match[1] as string);
}

/** Where a page's paths are looked up. */
export interface PathWorld {
  /** The repository's web address ({@link repositoryWeb}). */
  readonly web: string;
  /** Whether the package holds this file or folder. */
  readonly shipped: (path: string) => boolean;
  /** Whether the repository holds it (a `src/main.ts` it does not hold is the reader's own file). */
  readonly inRepository: (path: string) => boolean;
}

const pathsIn = (text: string): string[] => [...text.matchAll(PATH)].map((match) => (match[1] as string).replace(/\.+$/, ''));

/**
 * The paths of `text` (a page) a reader of the package cannot reach, each with why: in prose, a
 * path under `examples/`, `test/`, `bench/` or `scripts/` (or a `src/` path of the repository)
 * that the package does not hold and that the page never links at the repository (a command in
 * the text may name a file the page links once); in a code block, a path of the repository the
 * package does not hold and the page does not link, in a block that does not name the
 * repository's address.
 */
export function unreachablePaths(text: string, world: PathWorld): string[] {
  const found: string[] = [];
  const linked = new Set(repositoryLinks(text, world.web));
  const blocks = text.split(/^(```[\s\S]*?^```)/m);
  blocks.forEach((block, index) => {
    if (index % 2 === 1) {
      if (block.includes(world.web)) return;
      for (const path of pathsIn(block)) {
        if (world.inRepository(path) && !world.shipped(path) && !linked.has(path)) found.push(`${path} (in a code block that does not name ${world.web})`);
      }
      return;
    }
    // Links to the repository are reachable; other addresses are not paths.
    const prose = block.replace(/\[[^\]]*\]\(https?:[^)]*\)/g, ' ').replace(/https?:\/\/\S+/g, ' ');
    for (const path of pathsIn(prose)) {
      if (world.shipped(path) || linked.has(path) || (path.startsWith('src/') && !world.inRepository(path))) continue;
      found.push(`${path} (neither in the package nor linked at ${world.web})`);
    }
  });
  return found;
}
