/**
 * Spans for the framework middleware (`oncely/hono`, `oncely/express`, `oncely/fastify`): the
 * guard is wrapped once, so each guarded request gets an `oncely.request` span that ends when
 * the guard answers on its own (replay, `409`, `422`, `4xx`, `503`) or when the route's handler
 * has answered and its response was stored. The outcome is named as `/metrics` names it. As on
 * the handler, nothing the caller sent is copied into the span.
 *
 * @module
 * @internal
 */
import type { Answer, WireResponse } from '../answers.js';
import { failSpan, startSpan, within, type Tracing } from '../../telemetry/spans.js';
import { SpanKind, STATUS_ERROR, type TelemetrySpan } from '../../telemetry/types.js';
import type { RequestOutcome } from '../metrics.js';

/** The part of the guard's `Execution` this wrapper calls (typed here: `guard.ts` imports this file). */
interface TracedExecution {
  complete(response: WireResponse): Promise<WireResponse>;
  abort(error: unknown): Promise<void>;
}

/** The guard's `Decision`, over its execution type. */
type TracedDecision<E extends TracedExecution> =
  { readonly kind: 'pass' } | { readonly kind: 'answer'; readonly response: Answer } | { readonly kind: 'run'; readonly execution: E };

/** The guard's shape, over its request and execution types. */
export interface TracedGuard<R extends { readonly method: string; readonly route: string }, E extends TracedExecution> {
  guards(method: string): boolean;
  readonly maxBodyBytes: number;
  decide(request: R): Promise<TracedDecision<E>>;
}

/** The `/metrics` outcome of an answer the guard gave without running the handler. */
function answered(response: WireResponse): RequestOutcome {
  if (response.headers['idempotency-replay'] === 'true') return 'replayed';
  if (response.status === 409) return 'in_flight';
  if (response.status === 422) return 'mismatch';
  if (response.status >= 500) return 'transient';
  return 'invalid';
}

function close(span: TelemetrySpan, outcome: RequestOutcome, status: number): void {
  span.setAttribute('oncely.outcome', outcome);
  span.setAttribute('http.response.status_code', status);
  if (status >= 500) span.setStatus({ code: STATUS_ERROR, message: outcome });
  span.end();
}

/**
 * Wraps `guard` so every guarded request is traced; returns `guard` itself when tracing is off.
 *
 * @example
 * ```ts
 * return traceGuard(guard, tracingOf(options.telemetry));
 * ```
 */
export function traceGuard<R extends { readonly method: string; readonly route: string }, E extends TracedExecution>(
  guard: TracedGuard<R, E>,
  tracing: Tracing | undefined,
): TracedGuard<R, E> {
  if (tracing === undefined) return guard;
  return {
    guards: (method) => guard.guards(method),
    maxBodyBytes: guard.maxBodyBytes,
    async decide(request) {
      if (!guard.guards(request.method)) return guard.decide(request);
      const method = request.method.toUpperCase();
      const span = startSpan(tracing, 'oncely.request', SpanKind.Internal, { 'oncely.endpoint': `${method} ${request.route}`, 'http.request.method': method });
      // A span that records nothing (no SDK, or not sampled) needs no wrapping of the decision.
      if (!span.isRecording()) return guard.decide(request);
      let decision: TracedDecision<E>;
      try {
        decision = await within(tracing, span, () => guard.decide(request));
      } catch (error) {
        failSpan(span, error);
        span.end();
        throw error;
      }
      if (decision.kind === 'pass') {
        span.setAttribute('oncely.outcome', 'unguarded');
        span.end();
        return decision;
      }
      if (decision.kind === 'answer') {
        close(span, answered(decision.response), decision.response.status);
        return decision;
      }
      const { execution } = decision;
      return {
        kind: 'run',
        execution: {
          ...execution,
          async complete(response: WireResponse) {
            try {
              const sent = await execution.complete(response);
              // A 409 here is a lease lost while the handler ran (another request took the key over).
              close(span, sent.status >= 500 ? 'transient' : sent.status === 409 ? 'in_flight' : 'executed', sent.status);
              return sent;
            } catch (error) {
              failSpan(span, error);
              span.end();
              throw error;
            }
          },
          async abort(error: unknown) {
            failSpan(span, error);
            span.setAttribute('oncely.outcome', 'transient');
            span.end();
            return execution.abort(error);
          },
        },
      };
    },
  };
}
