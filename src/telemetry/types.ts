/**
 * The `telemetry` option: the few pieces of `@opentelemetry/api` oncely uses, typed
 * structurally so that oncely imports nothing from it, ever. The application passes its own
 * copy of the API (`import * as api from '@opentelemetry/api'`): when it does not, no span is
 * made and no OpenTelemetry code is loaded, in Node or in a browser bundle.
 *
 * Attributes are chosen so that nothing a caller sent can leak into a trace: no body, no
 * request text stored with a key, no header (so no `Authorization`, cookie or token), no query
 * string, no idempotency key and no client id. See docs/observability.md for the list.
 *
 * @module
 */

/** An attribute value as OpenTelemetry takes it (oncely only sets these three kinds). */
export type SpanAttributeValue = string | number | boolean;

/** A set of span attributes. */
export type SpanAttributes = Record<string, SpanAttributeValue | undefined>;

/** The propagation context (`Context` of `@opentelemetry/api`), opaque to oncely. */
export interface TelemetryContext {
  getValue(key: symbol): unknown;
}

/** The part of an OpenTelemetry `Span` oncely calls. */
export interface TelemetrySpan {
  setAttribute(key: string, value: SpanAttributeValue): unknown;
  setStatus(status: { code: number; message?: string }): unknown;
  isRecording(): boolean;
  end(): void;
}

/** The part of an OpenTelemetry `Tracer` oncely calls. */
export interface TelemetryTracer {
  startSpan(name: string, options?: { kind?: number; attributes?: SpanAttributes }, context?: TelemetryContext): TelemetrySpan;
}

/** The part of the `@opentelemetry/api` module oncely calls: where a span's parent comes from. */
export interface TelemetryApi {
  readonly trace: {
    getTracer(name: string, version?: string): TelemetryTracer;
    setSpan(context: TelemetryContext, span: TelemetrySpan): TelemetryContext;
  };
  readonly context: {
    active(): TelemetryContext;
    with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(
      context: TelemetryContext,
      fn: F,
      thisArg?: ThisParameterType<F>,
      ...args: A
    ): ReturnType<F>;
  };
}

/**
 * Turns tracing on: the `@opentelemetry/api` module, and optionally the tracer to use (else
 * `api.trace.getTracer('oncely')`, the global provider's).
 *
 * @example
 * ```ts
 * import * as api from '@opentelemetry/api';
 * const handler = createIdempotencyHandler({ store, operations, authenticate, telemetry: { api } });
 * ```
 */
export interface TelemetryOptions {
  readonly api: TelemetryApi;
  readonly tracer?: TelemetryTracer;
}

/** `SpanStatusCode.ERROR` of the OpenTelemetry specification (a stable number). */
export const STATUS_ERROR = 2;
/** `SpanKind.INTERNAL` and `SpanKind.CLIENT` of the OpenTelemetry specification. */
export const SpanKind = { Internal: 0, Client: 2 } as const;
