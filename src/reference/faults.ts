/**
 * Fault injection for the reference server: `--faults` / `ONCELY_FAULTS`.
 *
 * A spec is a comma list of `kind:target:value[:max]`:
 *
 * | kind | target | value | what happens |
 * |---|---|---|---|
 * | `crash-after` | a recovery point (`H1_DONE` … `EXT2_DONE`) | probability | the process kills itself with SIGKILL right after that point commits |
 * | `timeout` | `ext1` \| `ext2` | probability | the system **applies** the instruction, then its reply is lost: the call's outcome is unknown |
 * | `lost` | `ext1` \| `ext2` | probability | the instruction is lost **before** the system gets it (nothing applied): the outcome is unknown |
 * | `unavailable` | `ext1` \| `ext2` | probability | the system answers 503 without applying anything: a transient failure |
 * | `probe-timeout` | `ext1` \| `ext2` | probability | a probe by derived key gets no answer: the probe is inconclusive |
 * | `slow` | `ext1` \| `ext2` | milliseconds | every call to the system takes that much longer (before it applies); `max` does not apply |
 *
 * The optional `max` caps how often a probabilistic fault fires in this process (e.g. `timeout:ext2:1:1`
 * times out the first call only), which lets one process show "202, then completion on retry".
 * `timeout` and `lost` both look like a timeout to the server; they differ only in what the
 * system did, which is exactly the ambiguity the probe-before-retry rule exists for. A call checks
 * `unavailable`, then `lost`, then (after applying) `timeout`, so one call suffers one fault at most.
 *
 * @module
 */
import { ErrorCode, OncelyError } from '../errors.js';

/** The recovery points of the reference payment, in order. */
export const RecoveryPoint = {
  H1Done: 'H1_DONE',
  Ext1Sent: 'EXT1_SENT',
  Ext1Done: 'EXT1_DONE',
  H2Done: 'H2_DONE',
  Ext2Sent: 'EXT2_SENT',
  Ext2Done: 'EXT2_DONE',
} as const;

/** One of {@link RecoveryPoint}'s values. */
export type RecoveryPoint = (typeof RecoveryPoint)[keyof typeof RecoveryPoint];

/** The kinds of fault a spec may name. */
export const FaultKind = {
  CrashAfter: 'crash-after',
  Timeout: 'timeout',
  Lost: 'lost',
  Unavailable: 'unavailable',
  ProbeTimeout: 'probe-timeout',
  Slow: 'slow',
} as const;

/** One of {@link FaultKind}'s values. */
export type FaultKind = (typeof FaultKind)[keyof typeof FaultKind];

/** An external system of the reference payment. */
export type ExternalSystem = 'ext1' | 'ext2';

/** One parsed entry of a fault spec. */
export interface FaultRule {
  readonly kind: FaultKind;
  /** A recovery point for `crash-after`, else `ext1` or `ext2`. */
  readonly target: string;
  /** A probability in [0, 1], or milliseconds for `slow`. */
  readonly value: number;
  /** How many times the rule may fire in this process; `Infinity` when not capped. */
  readonly max: number;
}

/** Options of {@link createFaults}. */
export interface FaultsOptions {
  /**
   * The spec, e.g. `crash-after:EXT2_SENT:0.2,timeout:ext2:0.1`. Empty or omitted: no faults.
   * @default ''
   */
  readonly spec?: string | undefined;
  /**
   * The random source deciding whether a probabilistic fault fires.
   * @default Math.random
   */
  readonly random?: (() => number) | undefined;
}

/** Decides, call by call, which faults fire. */
export interface Faults {
  /** The parsed rules, in spec order. */
  readonly rules: readonly FaultRule[];
  /** Whether a fault of `kind` fires now for `target` (counts the firing against `max`). */
  fires(kind: Exclude<FaultKind, 'slow'>, target: string): boolean;
  /** Extra latency of one call to `system`, in milliseconds (0 when no `slow` rule). */
  delayMs(system: ExternalSystem): number;
}

/**
 * Thrown at startup for a spec that cannot be parsed; the message names the bad entry.
 *
 * @example
 * ```ts
 * try { parseFaultSpec('crash-after:NOWHERE:1'); } catch (error) { console.error((error as Error).message); }
 * ```
 */
export class InvalidFaultSpecError extends OncelyError {
  override name = 'InvalidFaultSpecError';

  constructor(message: string) {
    super(ErrorCode.Config, message);
  }
}

const POINTS: readonly string[] = Object.values(RecoveryPoint);
const SYSTEMS: readonly string[] = ['ext1', 'ext2'];
const KINDS: readonly string[] = Object.values(FaultKind);

function parseRule(entry: string): FaultRule {
  const fail = (why: string): never => {
    throw new InvalidFaultSpecError(`invalid fault ${JSON.stringify(entry)}: ${why} (expected kind:target:value[:max], kinds: ${KINDS.join(', ')})`);
  };
  const parts = entry.split(':');
  if (parts.length < 3 || parts.length > 4) fail('it needs 3 or 4 colon-separated fields');
  const [kindText = '', target = '', valueText = '', maxText] = parts;
  if (!KINDS.includes(kindText)) fail(`unknown kind ${JSON.stringify(kindText)}`);
  const kind = kindText as FaultKind;
  if (kind === FaultKind.CrashAfter) {
    if (!POINTS.includes(target)) fail(`crash-after needs a recovery point (${POINTS.join(', ')})`);
  } else if (!SYSTEMS.includes(target)) {
    fail('the target must be ext1 or ext2');
  }
  const value = Number(valueText);
  if (valueText.trim() === '' || !Number.isFinite(value)) fail(`${JSON.stringify(valueText)} is not a number`);
  if (kind === FaultKind.Slow) {
    if (value < 0 || value > 600_000) fail('a delay is 0 to 600000 milliseconds');
  } else if (value < 0 || value > 1) {
    fail('a probability is between 0 and 1');
  }
  let max = Number.POSITIVE_INFINITY;
  if (maxText !== undefined) {
    max = Number(maxText);
    if (!/^\d+$/.test(maxText) || max < 1) fail('max must be a positive integer');
  }
  return { kind, target, value, max };
}

/**
 * Parses a fault spec. Throws {@link InvalidFaultSpecError} on the first bad entry, so a typo
 * stops the server at startup instead of silently testing nothing.
 *
 * @example
 * ```ts
 * parseFaultSpec('crash-after:EXT2_SENT:0.2,timeout:ext2:1:1');
 * // [{ kind: 'crash-after', target: 'EXT2_SENT', value: 0.2, max: Infinity },
 * //  { kind: 'timeout', target: 'ext2', value: 1, max: 1 }]
 * ```
 */
export function parseFaultSpec(spec: string): FaultRule[] {
  return spec
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '')
    .map(parseRule);
}

/**
 * Creates the fault decider for one server process.
 *
 * @example
 * ```ts
 * const faults = createFaults({ spec: 'unavailable:ext1:0.05' });
 * if (faults.fires('unavailable', 'ext1')) return { outcome: 'unavailable' };
 * ```
 */
export function createFaults(options: FaultsOptions = {}): Faults {
  const rules = parseFaultSpec(options.spec ?? '');
  const random = options.random ?? Math.random;
  const fired = new Map<FaultRule, number>();
  return {
    rules,
    fires(kind, target) {
      for (const rule of rules) {
        if (rule.kind !== kind || rule.target !== target) continue;
        const count = fired.get(rule) ?? 0;
        if (count >= rule.max) continue;
        // p = 1 must always fire and p = 0 never, whatever the random source returns.
        if (rule.value >= 1 || (rule.value > 0 && random() < rule.value)) {
          fired.set(rule, count + 1);
          return true;
        }
      }
      return false;
    },
    delayMs(system) {
      return rules.filter((rule) => rule.kind === FaultKind.Slow && rule.target === system).reduce((sum, rule) => sum + rule.value, 0);
    },
  };
}
