import { describe, expect, it } from 'vitest';
import { createProgress, formatDuration } from '../../src/cli/upload-progress.js';

function fakeStream(isTTY: boolean) {
  const writes: string[] = [];
  return { writes, stream: { isTTY, columns: 200, write: (text: string) => writes.push(text) } };
}

describe('createProgress', () => {
  it('redraws one bar in place on a terminal, with the rate and the ETA', () => {
    let now = 0;
    const { writes, stream } = fakeStream(true);
    const progress = createProgress({ total: 1_000, stream, unit: 'rows', now: () => now });
    now = 2_000;
    progress.update(250, { executed: 240, replayed: 10, pending: 0 });
    now = 2_050; // inside the redraw interval: nothing drawn
    progress.update(260, { executed: 250, replayed: 10 });
    now = 8_000;
    progress.finish(1_000, { executed: 990, replayed: 10 });
    expect(writes).toHaveLength(2);
    expect(writes[0]).toBe('\r\x1b[K[######..................]  25% 250/1000 rows 125 rows/s ETA 0:06 · executed 240 · replayed 10');
    expect(writes[1]).toMatch(/^\r\x1b\[K\[#{24}\] 100% 1000\/1000 rows 125 rows\/s ETA 0:00 · executed 990 · replayed 10\n$/);
  });

  it('writes plain lines without escape codes when the output is not a terminal', () => {
    let now = 0;
    const { writes, stream } = fakeStream(false);
    const progress = createProgress({ total: 10, stream, unit: 'rows', now: () => now });
    now = 2_000;
    progress.update(5, { executed: 5 });
    progress.finish(10, { executed: 10 });
    expect(writes).toEqual(['progress:  50% 5/10 rows 3 rows/s ETA 0:02 · executed 5\n', 'progress: 100% 10/10 rows 5 rows/s ETA 0:00 · executed 10\n']);
  });

  it('shows no ETA until the rate rests on 20 rows and 2 seconds: the first rows of a run are the slowest', () => {
    let now = 0;
    const { writes, stream } = fakeStream(false);
    const progress = createProgress({ total: 500, stream, unit: 'payments', now: () => now, intervalMs: 0 });
    now = 3_600; // one payment after a start-up (a server crashed on purpose and restarted)
    progress.update(1, {});
    now = 4_000;
    progress.update(19, {});
    now = 4_500;
    progress.update(40, {});
    expect(writes.map((line) => /ETA (\S+)/.exec(line)?.[1])).toEqual(['--:--', '--:--', '0:52']);
  });

  it('counts only the rows this run worked on in the rate and the ETA, not those settled before it or never sent', () => {
    let now = 0;
    const { writes, stream } = fakeStream(false);
    const progress = createProgress({ total: 1_000, stream, unit: 'rows', now: () => now });
    now = 4_000;
    // A resumed run: 500 rows were settled by the earlier run and skipped at once, 100 sent since.
    progress.update(600, { replayed: 500, executed: 100 }, 100);
    now = 8_000;
    // Stopped: 50 more sent, 350 journaled but never sent.
    progress.finish(1_000, { replayed: 500, executed: 150, pending: 350 }, 150);
    expect(writes).toEqual([
      'progress:  60% 600/1000 rows 25 rows/s ETA 0:16 · replayed 500 · executed 100\n',
      'progress: 100% 1000/1000 rows 19 rows/s ETA 0:00 · replayed 500 · executed 150 · pending 350\n',
    ]);
  });

  it('formats durations as m:ss and h:mm:ss', () => {
    expect([formatDuration(75), formatDuration(3_725), formatDuration(Number.POSITIVE_INFINITY)]).toEqual(['1:15', '1:02:05', '--:--']);
  });
});
