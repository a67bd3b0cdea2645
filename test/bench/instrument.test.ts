import { createServer, type Server } from 'node:http';
import { connect, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { figure } from '../../bench/lib/figures.js';
import { localPortsOf } from '../../bench/lib/pg-observe.js';
import { renderMarkdown, type BenchReport } from '../../bench/lib/report-md.js';
import { alternate, evenRounds, mirroredOrder } from '../../bench/lib/stats.js';
import { verdict } from '../../bench/lib/verdict.js';

describe('the mirrored order of the rounds', () => {
  it('runs the arms as given, then mirrored: A B C, C B A, A B C, C B A', async () => {
    const order: string[] = [];
    const arm = (name: string) => () => Promise.resolve(order.push(name));
    const result = await alternate(4, { a: arm('a'), b: arm('b'), c: arm('c') });
    expect(order.join('')).toBe('abccbaabccba');
    expect(result.b).toHaveLength(4);
  });

  it('keeps the arms given side by side next to each other in every round, each first as often as last', () => {
    for (let round = 0; round < 4; round += 1) {
      const order = mirroredOrder(['x', 'guarded', 'baseline', 'y'], round);
      expect(Math.abs(order.indexOf('guarded') - order.indexOf('baseline'))).toBe(1);
    }
    const firsts = [0, 1, 2, 3].filter((round) => mirroredOrder(['guarded', 'baseline'], round)[0] === 'guarded');
    expect(firsts).toHaveLength(2);
  });

  it('rounds an odd count of rounds up to an even one, two at least', () => {
    expect([evenRounds(1), evenRounds(2), evenRounds(3), evenRounds(5), evenRounds(0)]).toEqual([2, 2, 4, 6, 2]);
  });
});

describe('a goal judged at the worst end of its spread', () => {
  it('takes the min as the worst round of an at-least goal and the max of an at-most one', () => {
    const atLeast = figure('a', 'a', '×', [0.55, 0.7, 0.8], { op: '>=', value: 0.6 });
    expect([atLeast.pass, atLeast.worst, atLeast.holdsAtWorst]).toEqual([true, 0.55, false]);
    const atMost = figure('b', 'b', '×', [1.1, 1.15, 1.19], { op: '<=', value: 1.2 });
    expect([atMost.pass, atMost.worst, atMost.holdsAtWorst]).toEqual([true, 1.19, true]);
  });

  it('says plainly whether the verdict holds in every round or by the median only', () => {
    const goal = { op: '>=', value: 0.6 } as const;
    expect(verdict(figure('a', 'a', '×', [0.65, 0.7, 0.8], goal))).toBe('met in every round (worst 0.65)');
    expect(verdict(figure('b', 'b', '×', [0.55, 0.7, 0.8], goal))).toBe('met by the median only: its worst round (0.55) would miss');
    expect(verdict(figure('c', 'c', '×', [0.4, 0.5, 0.62], goal))).toBe('**missed** by the median; its best round (0.62) would meet');
    expect(verdict(figure('d', 'd', '×', [0.4, 0.5, 0.55], goal))).toBe('**missed** in every round (best 0.55)');
    expect(verdict(figure('e', 'e', '×', [1.25, 1.3], { op: '<=', value: 1.2 }))).toBe('**missed** in every round (best 1.25)');
    expect(verdict(figure('f', 'f', '×', [1]))).toBeUndefined();
  });

  it('puts the spread and the verdict beside each goal in the Markdown', () => {
    const report: BenchReport = {
      generatedAt: '2026-12-02T14:00:00.000Z',
      command: 'npm run bench',
      quick: false,
      durationSec: 1,
      machine: { cpu: 'Test CPU', cores: 2, memoryGb: 8, os: 'Linux', loadAverageAtStart: [1, 1, 1] },
      node: 'v20',
      commit: 'abc1234',
      suites: { s: { suite: 's', figures: [figure('g', 'the goal', '×', [0.5, 0.7, 0.9, 0.8], { op: '>=', value: 0.6 })], tables: [] } },
      external: {},
    };
    expect(renderMarkdown(report)).toContain(
      '| the goal | 0.75 × | 0.5 – 0.9 (4 rounds) | >= 0.6 | met by the median only: its worst round (0.5) would miss |',
    );
  });
});

describe("a server's PostgreSQL connections found by their ports", () => {
  let server: Server;
  let socket: Socket;
  beforeAll(async () => {
    server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    socket = connect((server.address() as AddressInfo).port, '127.0.0.1');
    await new Promise((resolve) => socket.once('connect', resolve));
  });
  afterAll(() => {
    socket.destroy();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it("lists the local port of each of the process's own TCP connections", () => {
    const ports = localPortsOf(process.pid);
    expect(ports).toContain(socket.localPort);
    expect(ports).toContain((server.address() as AddressInfo).port);
  });
});
