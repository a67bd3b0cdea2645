import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { figure } from '../../bench/lib/figures.js';
import { startFaultProxy } from '../../bench/lib/fault-proxy.js';
import { renderMarkdown, type BenchReport } from '../../bench/lib/report-md.js';
import { renderSvg } from '../../bench/lib/report-svg.js';
import { alternate, ratios, summarize } from '../../bench/lib/stats.js';

describe('bench statistics', () => {
  it('reports the median of an odd and an even count with min and max', () => {
    expect(summarize([5, 1, 3])).toEqual({ median: 3, min: 1, max: 5, n: 3 });
    expect(summarize([4, 1, 2, 3])).toEqual({ median: 2.5, min: 1, max: 4, n: 4 });
  });

  it('takes ratios round by round, never of the two medians', () => {
    expect(ratios([10, 30], [5, 10])).toEqual([2, 3]);
  });

  it('alternates the measurements and rotates which goes first each round', async () => {
    const order: string[] = [];
    const result = await alternate(3, {
      a: () => Promise.resolve(order.push('a')),
      b: () => Promise.resolve(order.push('b')),
    });
    expect(order).toEqual(['a', 'b', 'b', 'a', 'a', 'b']);
    expect(result.a).toHaveLength(3);
    expect(result.b).toHaveLength(3);
  });

  it('marks a figure as meeting or missing its goal by its median', () => {
    expect(figure('x', 'x', '×', [1.1, 1.2, 2], { op: '<=', value: 1.3 }).pass).toBe(true);
    expect(figure('y', 'y', '×', [0.5, 0.55, 0.9], { op: '>=', value: 0.6 }).pass).toBe(false);
  });
});

describe('the fault-injecting proxy', () => {
  let upstream: ReturnType<typeof createServer>;
  let upstreamUrl = '';
  let hits = 0;
  beforeAll(async () => {
    upstream = createServer((req, res) => {
      hits += 1;
      req.resume();
      req.on('end', () => res.end('charged'));
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => upstream.close(() => resolve())));

  it('forwards every request and passes the response through when nothing is dropped', async () => {
    const proxy = await startFaultProxy({ upstream: upstreamUrl, dropRate: 0 });
    const response = await fetch(`${proxy.url}/pay`, { method: 'POST', body: '{}' });
    expect(await response.text()).toBe('charged');
    await proxy.close();
  });

  it('drops the response only after the server has acted on the request', async () => {
    const proxy = await startFaultProxy({ upstream: upstreamUrl, dropRate: 1 });
    const before = hits;
    await expect(fetch(`${proxy.url}/pay`, { method: 'POST', body: '{}' })).rejects.toThrow();
    expect(hits).toBe(before + 1);
    expect(proxy.dropped()).toBe(1);
    await proxy.close();
  });
});

describe('the rendered results', () => {
  const report: BenchReport = {
    generatedAt: '2026-12-02T14:00:00.000Z',
    command: 'npm run bench',
    quick: false,
    durationSec: 300,
    machine: { cpu: 'Test CPU', cores: 2, memoryGb: 8, os: 'Linux', loadAverageAtStart: [1, 1, 1] },
    node: 'v20.20.2',
    commit: 'abc1234',
    suites: {
      'client-latency': {
        suite: 'client-latency',
        figures: [figure('client.ratio', 'oncely post() ÷ raw ky POST latency', '×', [1.1, 1.2, 1.15], { op: '<=', value: 1.3 })],
        tables: [],
      },
      clients: {
        suite: 'clients',
        figures: [
          figure('clients.oncely.duplicates', 'oncely: duplicates', 'per 1 000', [0]),
          figure('clients.oncely.duplicates_killed', 'oncely: duplicates killed', 'per 1 000', [0]),
        ],
        tables: [{ id: 't', title: 'Client strategies', columns: ['client', 'duplicates'], rows: [['oncely | SQLite', 0]] }],
      },
      scale: { error: 'boom\nstack' },
    },
    external: { journal: { figures: 'whatever it printed' }, upload: { output: '┌ rows/s ┐' } },
  };

  it('puts goals, tables, failed suites and the reproduce command in the Markdown', () => {
    const md = renderMarkdown(report);
    expect(md).toContain('Reproduce: `npm run bench`');
    expect(md).toContain('| oncely post() ÷ raw ky POST latency | 1.15 × | 1.1 – 1.2 (3 rounds) | <= 1.3 | met in every round (worst 1.2) |');
    expect(md).toContain('| oncely \\| SQLite | 0 |');
    expect(md).toContain('`scale`: boom');
    // The page ships in the package, which holds no bench/ sources: each is linked at the repository.
    expect(md).toContain('[`bench/journal.ts`](https://github.com/oncely/oncely/blob/main/bench/journal.ts)');
    expect(md).toContain('```text\n┌ rows/s ┐\n```');
  });

  it('draws one bar per figure in a well-formed SVG', () => {
    const svg = renderSvg(report);
    expect(svg.startsWith('<svg')).toBe(true);
    expect(svg.trimEnd().endsWith('</svg>')).toBe(true);
    expect(svg).toContain('1.15×');
    expect(svg.match(/<rect class="bar"/g)?.length).toBe(3);
  });
});
