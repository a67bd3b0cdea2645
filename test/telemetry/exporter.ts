/**
 * An in-memory OpenTelemetry pipeline for the telemetry tests: a tracer whose finished spans a
 * test reads back, and the API module to pass as `telemetry.api`.
 */
import * as api from '@opentelemetry/api';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';

export interface Recorder {
  readonly telemetry: { readonly api: typeof api; readonly tracer: api.Tracer };
  spans(name?: string): ReadableSpan[];
  /** Every attribute value of every finished span, as one string (for "nothing sensitive" checks). */
  everything(): string;
}

export function recorder(): Recorder {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const spans = (name?: string): ReadableSpan[] => exporter.getFinishedSpans().filter((span) => name === undefined || span.name === name);
  return {
    telemetry: { api, tracer: provider.getTracer('oncely') },
    spans,
    everything: () => JSON.stringify(spans().map((span) => [span.name, span.attributes, span.status, span.events])),
  };
}
