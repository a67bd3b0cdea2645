/**
 * Who holds a claim in the SQLite journal, precisely enough to tell that the holder is dead.
 *
 * A claim runs for `claimTtlMs` so that a crashed process cannot strand an operation forever;
 * but a process restarted after a crash would otherwise wait out its predecessor's claim. Each
 * claim therefore also records the claiming process: host, boot, pid and the pid's start time.
 * A later claimant on the same host may void the claim at once when that process provably no
 * longer runs:
 *
 * | the holder's record says          | verdict                                           |
 * |-----------------------------------|---------------------------------------------------|
 * | another host (or nothing)         | alive: wait for the claim to run out              |
 * | this host, an earlier boot        | dead: nothing survives a reboot                   |
 * | this host and boot, pid gone      | dead (`kill(pid, 0)` answers `ESRCH`)             |
 * | pid runs but started at another   | dead: the pid was reused by an unrelated process  |
 * | time than recorded                |                                                   |
 * | pid is a zombie (killed, unreaped) | dead                                              |
 * | pid runs, same start time         | alive                                             |
 *
 * Start times and boot ids come from Linux's `/proc`; where it is missing (macOS), the pid
 * check alone decides, and a reused pid is taken for the holder (the claim then just runs out).
 * A wrong "dead" can only happen across pid namespaces sharing one host name; its cost is one
 * concurrent resend, which the server's deduplication answers with `409`.
 *
 * @module
 * @internal
 */
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';

/** What a claim records about the process that took it. */
interface ProcessIdentity {
  readonly host: string;
  readonly boot: string | null;
  readonly pid: number;
  readonly start: string | null;
}

const read = (path: string): string | null => {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return null;
  }
};

const bootId = (): string | null => read('/proc/sys/kernel/random/boot_id')?.trim() || null;

/** Fields 3 (state) and 22 (start time in clock ticks since boot) of `/proc/<pid>/stat`. */
function procStat(pid: number): { readonly state: string; readonly start: string } | null {
  const stat = read(`/proc/${pid}/stat`);
  if (stat === null) return null;
  // The command name (field 2) may hold spaces and parentheses: count fields after its last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return fields[0] !== undefined && fields[19] !== undefined ? { state: fields[0], start: fields[19] } : null;
}

const startTime = (pid: number): string | null => procStat(pid)?.start ?? null;

let self: string | undefined;

/**
 * This process, as a claim records it.
 *
 * @example
 * ```ts
 * thisProcess(); // '{"host":"api-1","boot":"6f1c…","pid":4242,"start":"918273"}'
 * ```
 */
export function thisProcess(): string {
  self ??= JSON.stringify({ host: hostname(), boot: bootId(), pid: process.pid, start: startTime(process.pid) } satisfies ProcessIdentity);
  return self;
}

function parse(recorded: string): ProcessIdentity | undefined {
  try {
    const value = JSON.parse(recorded) as Partial<ProcessIdentity> | null;
    if (typeof value?.host !== 'string' || typeof value.pid !== 'number' || !Number.isInteger(value.pid) || value.pid <= 0) return undefined;
    return {
      host: value.host,
      boot: typeof value.boot === 'string' ? value.boot : null,
      pid: value.pid,
      start: typeof value.start === 'string' ? value.start : null,
    };
  } catch {
    return undefined;
  }
}

/**
 * Whether the process a claim recorded is provably gone (see the module's table). Anything it
 * cannot prove — another host, an unreadable record — counts as alive.
 *
 * @example
 * ```ts
 * isProvablyDead(thisProcess()); // false
 * ```
 */
export function isProvablyDead(recorded: string | null): boolean {
  if (recorded === null) return false;
  const holder = parse(recorded);
  if (holder === undefined || holder.host !== hostname()) return false;
  const boot = bootId();
  if (holder.boot !== null && boot !== null && holder.boot !== boot) return true;
  try {
    process.kill(holder.pid, 0);
  } catch (error) {
    // EPERM: it exists, under another user. Only ESRCH says nobody has this pid.
    if ((error as NodeJS.ErrnoException).code === 'ESRCH') return true;
  }
  const stat = procStat(holder.pid);
  if (stat === null) return false;
  // A killed process its parent has not reaped yet still has its pid: a zombie runs nothing.
  if (stat.state === 'Z' || stat.state === 'X') return true;
  return holder.start !== null && stat.start !== holder.start;
}
