// Health-check traces with children, and ordinary traces beside them, sent to a collector the way
// instrumented services send them (the OpenTelemetry SDK's exporters, over each OTLP transport),
// then checked in Jaeger trace by trace: a health check leaves not one span, an ordinary trace
// arrives whole. Shared by the development and production stack tests.
import { SpanKind } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace';
import { eventually } from '../../harness/process/poll.ts';
import {
  type ClientTls,
  exportSpans,
  jaegerTrace,
  type OtlpProtocol,
  otlpExporter,
  type SpanTree,
  sdkTraces,
} from '../../harness/trace/traces.ts';

const db = (statement: string): SpanTree => ({
  name: statement,
  kind: SpanKind.CLIENT,
  attributes: { 'db.system.name': 'postgresql', 'db.query.text': statement },
});

/**
 * Health checks as the collector's healthCheckPaths define them (current and older HTTP
 * conventions), each with children: the probe's database query, a cache ping under it.
 */
const HEALTH_CHECKS: readonly SpanTree[] = [
  {
    name: 'GET /healthz',
    attributes: { 'http.request.method': 'GET', 'url.path': '/healthz' },
    children: [
      {
        ...db('SELECT 1'),
        children: [{ name: 'PING', kind: SpanKind.CLIENT, attributes: { 'db.system.name': 'redis' } }],
      },
    ],
  },
  {
    name: 'GET /readyz',
    attributes: { 'http.request.method': 'GET', 'http.route': '/readyz' },
    children: [db('SELECT 1')],
  },
  { name: 'GET', attributes: { 'http.method': 'GET', 'http.target': '/livez?verbose=1' }, children: [db('SELECT 1')] },
  // A failing probe, and a slow one: the drop wins over the rules that keep errors and slow traces.
  {
    name: 'GET /health',
    error: true,
    attributes: { 'http.request.method': 'GET', 'url.path': '/health/' },
    children: [{ ...db('SELECT 1'), error: true }],
  },
  {
    name: 'GET /healthz',
    durationMs: 1500,
    attributes: { 'http.request.method': 'GET', 'url.path': '/healthz' },
    children: [{ ...db('SELECT 1'), durationMs: 1400 }],
  },
];

/**
 * Ordinary requests, errors so that tail sampling keeps them too: one with a child that calls a
 * dependency's /healthz (only a root makes a health check), one whose path only looks like a probe.
 */
const ORDINARY: readonly SpanTree[] = [
  {
    name: 'GET /orders',
    error: true,
    attributes: { 'http.request.method': 'GET', 'url.path': '/orders' },
    children: [{ ...db('SELECT * FROM orders'), error: true }],
  },
  {
    name: 'POST /checkout',
    error: true,
    attributes: { 'http.request.method': 'POST', 'url.path': '/checkout' },
    children: [
      {
        name: 'GET',
        kind: SpanKind.CLIENT,
        attributes: { 'http.request.method': 'GET', 'url.path': '/healthz', 'server.address': 'payments' },
      },
      db('UPDATE stock'),
    ],
  },
  {
    name: 'GET /healthzone',
    error: true,
    attributes: { 'http.request.method': 'GET', 'url.path': '/healthzone' },
    children: [db('SELECT zone')],
  },
];

const byTrace = (spans: ReadableSpan[], traceId: string) => spans.filter((s) => s.spanContext().traceId === traceId);
const isRoot = (s: ReadableSpan) => s.parentSpanContext === undefined;

export interface SentTraces {
  /** Health-check trace ids: Jaeger must hold none of their spans. */
  readonly health: readonly string[];
  /** Ordinary trace ids and their span counts: Jaeger must hold each whole. */
  readonly ordinary: readonly { readonly traceId: string; readonly spans: number }[];
}

/**
 * Sends the health checks and ordinary traces over `protocol`, in the orders a collector meets
 * them: all spans of a trace in one export; the children first and the root in a later export
 * (an SDK's batches end children first); and one health check's last child `lateMs` after its
 * root, once the collector may already have decided the trace; then one more ordinary trace.
 */
export async function sendHealthAndOrdinaryTraces(
  protocol: OtlpProtocol,
  ports: { http: number; grpc: number },
  options: { service: string; tls?: ClientTls; lateMs: number },
): Promise<SentTraces> {
  const exporter = otlpExporter(protocol, ports, options.tls);
  try {
    const health = await sdkTraces(options.service, HEALTH_CHECKS);
    const ordinary = await sdkTraces(options.service, ORDINARY);
    const [together, childrenFirst, late, ...rest] = health.traceIds;
    const send = (spans: ReadableSpan[]) => exportSpans(exporter, spans);
    // Ordinary traces and the health checks sent whole, mixed in one export.
    await send([
      ...ordinary.spans,
      ...byTrace(health.spans, together),
      ...rest.flatMap((id) => byTrace(health.spans, id)),
    ]);
    // Children first, the root half a second later.
    await send(byTrace(health.spans, childrenFirst).filter((s) => !isRoot(s)));
    await new Promise((r) => setTimeout(r, 500));
    await send(byTrace(health.spans, childrenFirst).filter(isRoot));
    // The root (and any other children) first, the last child late.
    const lateSpans = byTrace(health.spans, late);
    const lastChild = lateSpans.find((s) => !isRoot(s))!;
    await send(lateSpans.filter((s) => s !== lastChild));
    await new Promise((r) => setTimeout(r, options.lateMs));
    await send([lastChild]);
    // Sent after everything else: once it is stored, every earlier trace has been decided.
    const last = await sdkTraces(options.service, ORDINARY.slice(0, 1));
    await send(last.spans);
    return {
      health: health.traceIds,
      ordinary: [...ordinary.traceIds, ...last.traceIds].map((traceId) => ({
        traceId,
        spans: byTrace([...ordinary.spans, ...last.spans], traceId).length,
      })),
    };
  } finally {
    await exporter.shutdown();
  }
}

/**
 * Waits until every ordinary trace is in Jaeger whole, the last one sent after every health-check
 * span; then returns, per health-check trace id, the number of its spans Jaeger holds (all 0 when
 * none leaked).
 */
export async function storedHealthSpans(
  query: string,
  sent: SentTraces,
  timeoutMs: number,
): Promise<Record<string, number>> {
  for (const { traceId, spans } of sent.ordinary) {
    await eventually(
      `ordinary trace ${traceId} whole in Jaeger (${spans} spans)`,
      async () => ((await jaegerTrace(query, traceId))?.spans.length === spans ? true : undefined),
      timeoutMs,
    );
  }
  const stored: Record<string, number> = {};
  for (const traceId of sent.health) stored[traceId] = (await jaegerTrace(query, traceId))?.spans.length ?? 0;
  return stored;
}
