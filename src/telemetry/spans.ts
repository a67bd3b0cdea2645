/**
 * What the server and client tracing share: resolving the `telemetry` option once, starting a
 * span under a parent, running a call with a span active, and marking a span failed without
 * copying an error's message (it may quote a URL, a header or a body).
 *
 * @module
 * @internal
 */
import { STATUS_ERROR, type SpanAttributes, type TelemetryApi, type TelemetryOptions, type TelemetrySpan, type TelemetryTracer } from './types.js';

/** The resolved option: the API and the tracer spans come from. */
export interface Tracing {
  readonly api: TelemetryApi;
  readonly tracer: TelemetryTracer;
}

/**
 * Resolves the `telemetry` option once; `undefined` (no tracing, nothing to call) without it.
 *
 * @example
 * ```ts
 * const tracing = tracingOf(options.telemetry); // undefined unless the app passed its API
 * ```
 */
export function tracingOf(options: TelemetryOptions | undefined): Tracing | undefined {
  if (options === undefined) return undefined;
  if (typeof options.api?.trace?.getTracer !== 'function')
    throw new TypeError('telemetry.api must be the @opentelemetry/api module (import * as api from "@opentelemetry/api")');
  return { api: options.api, tracer: options.tracer ?? options.api.trace.getTracer('oncely') };
}

/**
 * Starts a span, a child of `parent` when given, else of the active context.
 *
 * @example
 * ```ts
 * const span = startSpan(tracing, 'oncely.phase', SpanKind.Internal, { 'oncely.recovery_point': 'H1_DONE' }, request);
 * ```
 */
export function startSpan(tracing: Tracing, name: string, kind: number, attributes: SpanAttributes, parent?: TelemetrySpan): TelemetrySpan {
  const active = tracing.api.context.active();
  return tracing.tracer.startSpan(name, { kind, attributes }, parent === undefined ? active : tracing.api.trace.setSpan(active, parent));
}

/**
 * Runs `fn` with `span` active, so the spans an application makes inside (its database or HTTP
 * client's) are its children.
 *
 * @example
 * ```ts
 * const outcome = await within(tracing, span, () => step.call(ctx, kn));
 * ```
 */
export function within<T>(tracing: Tracing, span: TelemetrySpan, fn: () => T): T {
  return tracing.api.context.with(tracing.api.trace.setSpan(tracing.api.context.active(), span), fn);
}

/**
 * Marks `span` failed with the error's class name only: a message may quote what must never
 * reach a trace (a URL with a token, a header, a body).
 *
 * @example
 * ```ts
 * failSpan(span, error); // error.type = 'TypeError', status ERROR
 * ```
 */
export function failSpan(span: TelemetrySpan, error: unknown): void {
  const type = error instanceof Error ? error.name : typeof error;
  span.setAttribute('error.type', type);
  span.setStatus({ code: STATUS_ERROR, message: type });
}
