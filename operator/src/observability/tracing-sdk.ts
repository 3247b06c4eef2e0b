// The OpenTelemetry SDK half of tracing.ts: only startTracing imports it, with a dynamic import(),
// so it (and its exporter, protobuf encoder and semantic conventions) loads only in a process that
// traces. Nothing else may import this module statically.
import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  BatchSpanProcessor,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  TracerProvider,
} from '@opentelemetry/sdk-trace';
import type { TracingSettings } from './tracing.ts';

/** Installs the global tracer provider, context manager and W3C propagator; returns what flushes and stops it. */
export function startTracingSdk(settings: TracingSettings, version: string): { shutdown(): Promise<void> } {
  const provider = new TracerProvider({
    resource: resourceFromAttributes({
      'service.name': settings.serviceName,
      'service.version': version,
    }),
    sampler: new ParentBasedSampler({
      root: new TraceIdRatioBasedSampler(settings.samplingRatio),
    }),
    // The exporter reads OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT and _HEADERS itself.
    spanProcessors: [
      new BatchSpanProcessor({
        exporter: new OTLPTraceExporter(),
        scheduledDelayMillis: settings.scheduleDelayMs,
      }),
    ],
  });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  return { shutdown: () => provider.shutdown() };
}
