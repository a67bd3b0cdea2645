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
    now = 1_000;
    progress.update(5, { executed: 5 });
    progress.finish(10, { executed: 10 });
    expect(writes).toEqual(['progress:  50% 5/10 rows 5 rows/s ETA 0:01 · executed 5\n', 'progress: 100% 10/10 rows 10 rows/s ETA 0:00 · executed 10\n']);
  });

  it('formats durations as m:ss and h:mm:ss', () => {
    expect([formatDuration(75), formatDuration(3_725), formatDuration(Number.POSITIVE_INFINITY)]).toEqual(['1:15', '1:02:05', '--:--']);
  });
});
