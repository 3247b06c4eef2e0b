// The operator's own traces (OpenTelemetry): a span per reconcile, a client span per API request
// beneath it, sent over OTLP/HTTP (protobuf) to OTEL_EXPORTER_OTLP_ENDPOINT. Without an endpoint
// nothing is installed and @opentelemetry/api's no-op tracer costs nothing. This module holds only
// what every process needs (the settings and the API calls); the SDK lives in tracing-sdk.ts, which
// startTracing loads on demand, so a process without an endpoint never loads it (nor its exporter,
// protobuf encoder and semantic conventions: see operator/bundle.ts).
import type { IncomingHttpHeaders } from 'node:http';
import {
  type Attributes,
  context,
  isSpanContextValid,
  type Link,
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
} from '@opentelemetry/api';

const TRACER = 'website-operator';

export interface TracingSettings {
  /** OTEL_SERVICE_NAME. @default 'website-operator' */
  readonly serviceName: string;
  /** OTEL_TRACES_SAMPLER_ARG: share of new traces recorded (a parent's decision is always followed). */
  readonly samplingRatio: number;
  /** OTEL_BSP_SCHEDULE_DELAY: milliseconds between exports. @default 5000 */
  readonly scheduleDelayMs: number;
}

/** Tracing from the standard OpenTelemetry environment, or undefined when no OTLP endpoint is set. */
export function tracingSettings(env: NodeJS.ProcessEnv): TracingSettings | undefined {
  if (!env.OTEL_EXPORTER_OTLP_ENDPOINT && !env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) return undefined;
  if (env.OTEL_SDK_DISABLED === 'true') return undefined;
  const sampler = env.OTEL_TRACES_SAMPLER ?? 'parentbased_traceidratio';
  if (sampler !== 'parentbased_traceidratio') {
    throw new Error(
      `OTEL_TRACES_SAMPLER=${sampler} is not supported: use parentbased_traceidratio (the default) with OTEL_TRACES_SAMPLER_ARG between 0 and 1`,
    );
  }
  const ratio = env.OTEL_TRACES_SAMPLER_ARG === undefined ? 1 : Number(env.OTEL_TRACES_SAMPLER_ARG);
  if (!(ratio >= 0 && ratio <= 1))
    throw new Error(`OTEL_TRACES_SAMPLER_ARG must be a number between 0 and 1, got '${env.OTEL_TRACES_SAMPLER_ARG}'`);
  const delay = env.OTEL_BSP_SCHEDULE_DELAY === undefined ? 5000 : Number(env.OTEL_BSP_SCHEDULE_DELAY);
  if (!(Number.isInteger(delay) && delay > 0))
    throw new Error(
      `OTEL_BSP_SCHEDULE_DELAY must be a whole number of milliseconds above 0, got '${env.OTEL_BSP_SCHEDULE_DELAY}'`,
    );
  return {
    serviceName: env.OTEL_SERVICE_NAME ?? TRACER,
    samplingRatio: ratio,
    scheduleDelayMs: delay,
  };
}

/**
 * Installs the global tracer provider, context manager and W3C propagator (tracing-sdk.ts, loaded
 * here and only here); returns what flushes and stops it.
 */
export async function startTracing(settings: TracingSettings, version: string): Promise<{ shutdown(): Promise<void> }> {
  const { startTracingSdk } = await import('./tracing-sdk.ts');
  return startTracingSdk(settings, version);
}

/** Runs `work` inside a span named `name`, ending it with `work`'s outcome. */
export async function inSpan<T>(
  name: string,
  options: { kind?: SpanKind; attributes?: Attributes; links?: Link[] },
  work: (span: Span) => Promise<T>,
): Promise<T> {
  return trace
    .getTracer(TRACER)
    .startActiveSpan(
      name,
      { kind: options.kind ?? SpanKind.INTERNAL, attributes: options.attributes, links: options.links },
      async (span) => {
        try {
          return await work(span);
        } catch (error) {
          failed(span, error);
          throw error;
        } finally {
          span.end();
        }
      },
    );
}

/** inSpan for synchronous work (rendering a Website's children). */
export function inSyncSpan<T>(name: string, attributes: Attributes, work: () => T): T {
  return trace.getTracer(TRACER).startActiveSpan(name, { attributes }, (span) => {
    try {
      return work();
    } catch (error) {
      failed(span, error);
      throw error;
    } finally {
      span.end();
    }
  });
}

function failed(span: Span, error: unknown): void {
  span.recordException(error as Error);
  span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error).message });
}

/**
 * Runs `work` in the trace context an incoming request carries (its `traceparent`), so that the
 * spans `work` starts are children of the caller's: the API server's call of the conversion webhook.
 */
export function inRemoteContext<T>(headers: IncomingHttpHeaders, work: () => T): T {
  return context.with(propagation.extract(ROOT_CONTEXT, headers), work);
}

/**
 * A link to the span a W3C `traceparent` value names (version 00: `00-<trace id>-<span id>-<flags>`),
 * or none for a missing or malformed value: a user's annotation, never trusted to be well formed.
 */
export function traceparentLink(traceparent: string | undefined): Link[] | undefined {
  if (!traceparent) return undefined;
  const spanContext = trace.getSpanContext(propagation.extract(ROOT_CONTEXT, { traceparent }));
  return spanContext && isSpanContextValid(spanContext) ? [{ context: spanContext }] : undefined;
}

/** Adds the active span's `traceparent` to outgoing request headers. */
export function injectTraceContext(headers: Record<string, string>): void {
  propagation.inject(context.active(), headers);
}

/** The active span's ids, for log lines. */
export function activeTraceIds(): { trace_id: string; span_id: string } | undefined {
  const span = trace.getActiveSpan();
  if (!span?.isRecording()) return undefined;
  const { traceId, spanId } = span.spanContext();
  return { trace_id: traceId, span_id: spanId };
}

export { type Span, SpanKind };
