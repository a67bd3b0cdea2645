/**
 * Client spans, made only when the client was given `telemetry` (see `telemetry/types.ts`): one
 * `oncely.attempt` span per HTTP attempt, with the attempt's number, the status, whether the
 * answer was a replay, and its `Retry-After`. No header, body, key or query string is copied:
 * the URL appears as its host and path only.
 *
 * @module
 */
import { failSpan, startSpan, tracingOf } from '../telemetry/spans.js';
import { SpanKind, STATUS_ERROR, type TelemetryOptions } from '../telemetry/types.js';

export type { TelemetryOptions } from '../telemetry/types.js';
import type { AttemptReport } from './attempt.js';

/** Starts the span of one attempt; the returned function ends it with what the attempt produced. */
export type AttemptTracer = (method: string, url: string, attempt: number) => (report: AttemptReport | undefined, error?: unknown) => void;

/** The end of an attempt whose span records nothing (no SDK, or not sampled). */
const unrecorded = (): void => undefined;

/**
 * Resolves the client's `telemetry` option into an attempt tracer, or `undefined` when absent.
 *
 * @example
 * ```ts
 * const end = attemptTracer(options.telemetry)?.('POST', 'https://api.example/v1/payments', 1);
 * end?.(report);
 * ```
 */
export function attemptTracer(options: TelemetryOptions | undefined): AttemptTracer | undefined {
  const tracing = tracingOf(options);
  if (tracing === undefined) return undefined;
  return (method, url, attempt) => {
    const where = URL.canParse(url) ? new URL(url) : undefined;
    const span = startSpan(tracing, 'oncely.attempt', SpanKind.Client, {
      'http.request.method': method.toUpperCase(),
      'server.address': where?.hostname,
      'url.path': where?.pathname,
      'oncely.attempt': attempt,
    });
    if (!span.isRecording()) return unrecorded;
    return (report, error) => {
      if (report === undefined) failSpan(span, error);
      else if (report.outcome.kind === 'network') failSpan(span, report.outcome.error);
      else if ('headers' in report) {
        const { status, retryAfter } = report.outcome;
        span.setAttribute('http.response.status_code', status);
        span.setAttribute('oncely.replayed', report.headers['idempotency-replay'] === 'true');
        if (retryAfter !== null) span.setAttribute('oncely.retry_after', retryAfter);
        if (status >= 500) span.setStatus({ code: STATUS_ERROR });
      }
      span.end();
    };
  };
}

/**
 * Runs `send` (one attempt) in a span when `tracer` is on, else just runs it.
 *
 * @example
 * ```ts
 * const report = await tracedAttempt(options.traceAttempt, 'POST', url, 2, () => sendAttempt(request));
 * ```
 */
export function tracedAttempt(
  tracer: AttemptTracer | undefined,
  method: string,
  url: string,
  attempt: number,
  send: () => Promise<AttemptReport>,
): Promise<AttemptReport> {
  return tracer === undefined ? send() : traceOne(tracer(method, url, attempt), send);
}

async function traceOne(end: ReturnType<AttemptTracer>, send: () => Promise<AttemptReport>): Promise<AttemptReport> {
  let report: AttemptReport;
  try {
    report = await send();
  } catch (error) {
    end(undefined, error);
    throw error;
  }
  end(report);
  return report;
}
