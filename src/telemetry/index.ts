/**
 * `oncely/telemetry`: the types of the `telemetry` option that the client, the server handler and
 * the middlewares take — the few pieces of `@opentelemetry/api` oncely calls, typed structurally
 * (oncely never imports OpenTelemetry). A user passes their own API; these names are for whoever
 * writes a wrapper or a test double.
 *
 * @example
 * ```ts
 * import * as api from '@opentelemetry/api';
 * import type { TelemetryOptions } from 'oncely/telemetry';
 * const telemetry: TelemetryOptions = { api };
 * ```
 *
 * @module
 */
export type { SpanAttributeValue, SpanAttributes, TelemetryApi, TelemetryContext, TelemetryOptions, TelemetrySpan, TelemetryTracer } from './types.js';
