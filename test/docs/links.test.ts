/**
 * No broken link in the published README or in the guides: every relative link names a file
 * of this repository (or one the package ships), every `#anchor` names a heading of its page,
 * slugged as GitHub slugs them, and every link to the repository (package.json's `repository`)
 * names a file or folder of it. Links to other sites are not fetched.
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { repositoryLinks, repositoryWeb } from './repository-paths.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const PAGES = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
];

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens. */
const slug = (heading: string): string =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');

function anchorsOf(page: string): Set<string> {
  const text = readFileSync(join(ROOT, page), 'utf8').replace(/^```[\s\S]*?^```/gm, '');
  return new Set([...text.matchAll(/^#{1,6} (.+)$/gm)].map((match) => slug(match[1] as string)));
}

/** Links outside code: `[text](target)`. */
function linksOf(page: string): string[] {
  const text = readFileSync(join(ROOT, page), 'utf8')
    .replace(/^```[\s\S]*?^```/gm, '')
    .replace(/`[^`\n]*`/g, '');
  return [...text.matchAll(/\]\(([^)\s]+)\)/g)].map((match) => match[1] as string).filter((target) => !/^[a-z]+:/.test(target));
}

describe('links in the README and the guides', () => {
  it('are there to check', () => {
    expect(linksOf('README.md').length).toBeGreaterThanOrEqual(10);
  });

  it.each(PAGES)('%s: every relative link and anchor resolves', (page) => {
    const broken: string[] = [];
    for (const link of linksOf(page)) {
      const [path = '', anchor] = link.split('#');
      const target = path === '' ? page : relative(ROOT, normalize(join(ROOT, dirname(page), path)));
      if (!existsSync(join(ROOT, target))) {
        broken.push(`${link} (no file ${target})`);
        continue;
      }
      if (anchor !== undefined && target.endsWith('.md') && !anchorsOf(target).has(anchor)) broken.push(`${link} (no heading #${anchor} in ${target})`);
    }
    expect(broken).toEqual([]);
  });

  it('to the repository name a file or folder of it, in the guides and in the READMEs of the examples the package ships', () => {
    const web = repositoryWeb(JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { repository?: { url?: string } });
    const pages = [...PAGES, 'examples/batch-upload/README.md', 'examples/node-backend/README.md'];
    const links = pages.flatMap((page) => repositoryLinks(readFileSync(join(ROOT, page), 'utf8'), web).map((path) => ({ page, path })));
    expect(links.length).toBeGreaterThanOrEqual(40);
    expect(links.filter(({ path }) => !existsSync(join(ROOT, path))).map(({ page, path }) => `${page}: ${path}`)).toEqual([]);
  });
});
