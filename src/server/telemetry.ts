/**
 * Server spans, made only when the handler was given `telemetry` (see `telemetry/types.ts`):
 *
 * ```
 * oncely.request   one per keyed request: endpoint, method, outcome, status, waited, taken over, recovery point
 * ├─ oncely.phase      one per store commit (admit, each recovery point, finished), with the point
 * └─ oncely.external   one per external call or probe, with the system's n and its outcome
 * oncely.recovery  the recovery worker resuming a row: its phases and calls, and how it ended
 * ```
 *
 * The outcome is the one `/metrics` counts ({@link RequestOutcome}), so a trace and the
 * counters never disagree. Nothing the caller sent is copied: no body, no header, no query
 * string, no key, no client id; a failed span carries the error's class name, not its message.
 *
 * @module
 */
import { failSpan, startSpan, tracingOf, within, type Tracing } from '../telemetry/spans.js';
import { SpanKind, STATUS_ERROR, type SpanAttributes, type TelemetryContext, type TelemetryOptions, type TelemetrySpan } from '../telemetry/types.js';
import type { RequestOutcome } from './metrics.js';

/** Spans of one run of an operation's steps (a request's, or the recovery worker's). */
export interface StepsTrace {
  /** Records that `point` is now the row's committed recovery point (the request span's last one). */
  committed(point: string): void;
  /** Runs one store commit of `point` in a span; a fenced result (`ok: false`) is marked as a lost lease. */
  phase<T>(point: string, commit: () => Promise<T>): Promise<T>;
  /** Runs one external call (or probe) of system `n` in a span, active during the call. */
  external<T extends { readonly outcome: string }>(system: number, probe: boolean, call: () => Promise<T>): Promise<T>;
}

/** The span of one keyed request. */
export interface RequestTrace extends StepsTrace {
  /** The request found its key in flight and waited for the original. */
  waited(): void;
  /** The request took over a row whose lease had expired. */
  tookOver(): void;
  /** Ends the span with the outcome `/metrics` counted and the status sent. */
  end(outcome: RequestOutcome, status: number): void;
}

/** The recovery worker's span for one row. */
export interface RecoveryTrace extends StepsTrace {
  /** Ends the span with what `resume` did with the row. */
  end(outcome: string): void;
}

/** Makes the server's spans; `undefined` when tracing is off. */
export interface ServerTelemetry {
  /** Starts the span of a keyed request for `endpoint` (`POST /v1/payments`, no query string). */
  request(endpoint: string): RequestTrace;
  /** Starts the span of the recovery worker resuming a row of `endpoint`. */
  recovery(endpoint: string): RecoveryTrace;
}

/**
 * The trace of a request (or recovery) whose span records nothing: the API's no-op tracer, or a
 * sampler that dropped it. Its children would record nothing either, so none is made, and one
 * shared object serves every such request: tracing that records nothing allocates nothing more.
 */
const UNTRACED: RequestTrace & RecoveryTrace = {
  committed: () => undefined,
  phase: (_point, commit) => commit(),
  external: (_system, _probe, call) => call(),
  waited: () => undefined,
  tookOver: () => undefined,
  end: () => undefined,
};

/** A recording request or recovery span and its children. A class: nothing is allocated per request but the object. */
class SpanTrace implements RequestTrace, RecoveryTrace {
  private point: string | undefined;
  /** The active context with this span in it: the parent of every child. */
  private readonly under: TelemetryContext;

  constructor(
    private readonly tracing: Tracing,
    private readonly span: TelemetrySpan,
  ) {
    this.under = tracing.api.trace.setSpan(tracing.api.context.active(), span);
  }

  committed(point: string): void {
    this.point = point;
  }

  phase<T>(point: string, commit: () => Promise<T>): Promise<T> {
    return this.child('oncely.phase', SpanKind.Internal, { 'oncely.recovery_point': point }, commit, (span, result) => {
      if ((result as { ok?: unknown } | undefined)?.ok === false) span.setAttribute('oncely.lease_lost', true);
    });
  }

  external<T extends { readonly outcome: string }>(system: number, probe: boolean, call: () => Promise<T>): Promise<T> {
    return this.child('oncely.external', SpanKind.Client, { 'oncely.external.system': system, 'oncely.external.probe': probe }, call, (span, result) =>
      span.setAttribute('oncely.external.outcome', result.outcome),
    );
  }

  waited(): void {
    this.span.setAttribute('oncely.waited', true);
  }

  tookOver(): void {
    this.span.setAttribute('oncely.taken_over', true);
  }

  /** Ends a request span (`status` given) or a recovery span (`outcome` only). */
  end(outcome: string, status?: number): void {
    const { span } = this;
    span.setAttribute(status === undefined ? 'oncely.recovery.outcome' : 'oncely.outcome', outcome);
    if (status !== undefined) span.setAttribute('http.response.status_code', status);
    if (this.point !== undefined) span.setAttribute('oncely.recovery_point', this.point);
    if (status !== undefined && status >= 500) span.setStatus({ code: STATUS_ERROR, message: outcome });
    span.end();
  }

  private async child<T>(
    name: string,
    kind: number,
    attributes: SpanAttributes,
    run: () => Promise<T>,
    after: (span: TelemetrySpan, result: T) => void,
  ): Promise<T> {
    const span = this.tracing.tracer.startSpan(name, { kind, attributes }, this.under);
    try {
      const result = await within(this.tracing, span, run);
      after(span, result);
      return result;
    } catch (error) {
      failSpan(span, error);
      throw error;
    } finally {
      span.end();
    }
  }
}

/**
 * Resolves the handler's `telemetry` option into span makers, or `undefined` when it is absent:
 * the handler then calls nothing.
 *
 * @example
 * ```ts
 * const telemetry = serverTelemetry(options.telemetry);
 * const trace = telemetry?.request('POST /v1/payments');
 * trace?.end('executed', 201);
 * ```
 */
export function serverTelemetry(options: TelemetryOptions | undefined): ServerTelemetry | undefined {
  const tracing = tracingOf(options);
  if (tracing === undefined) return undefined;
  const traceOf = (span: TelemetrySpan): SpanTrace | typeof UNTRACED => (span.isRecording() ? new SpanTrace(tracing, span) : UNTRACED);
  return {
    request: (endpoint) =>
      traceOf(
        startSpan(tracing, 'oncely.request', SpanKind.Internal, {
          'oncely.endpoint': endpoint,
          'http.request.method': endpoint.slice(0, endpoint.indexOf(' ')),
        }),
      ),
    recovery: (endpoint) => traceOf(startSpan(tracing, 'oncely.recovery', SpanKind.Internal, { 'oncely.endpoint': endpoint })),
  };
}

/**
 * Runs `commit` in a phase span when `trace` is on, else just runs it (the wiring's one call).
 *
 * @example
 * ```ts
 * const phase = await tracedPhase(run.trace, step.point, () => commits.commitPhase(lease, commit, work));
 * ```
 */
export function tracedPhase<T>(trace: StepsTrace | undefined, point: string, commit: () => Promise<T>): Promise<T> {
  return trace === undefined ? commit() : trace.phase(point, commit);
}

/**
 * Runs `call` in an external-call span when `trace` is on, else just runs it.
 *
 * @example
 * ```ts
 * const outcome = await tracedCall(run.trace, step.system, false, () => step.call(ctx(), kn));
 * ```
 */
export function tracedCall<T extends { readonly outcome: string }>(
  trace: StepsTrace | undefined,
  system: number,
  probe: boolean,
  call: () => Promise<T>,
): Promise<T> {
  return trace === undefined ? call() : trace.external(system, probe, call);
}
