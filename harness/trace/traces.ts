// What the trace tests and the trace chaos run share: run a chart's pods as local processes
// (harness/trace/local-stack.ts), build OTLP/JSON traces or make spans with the OpenTelemetry SDK
// and send them with its OTLP exporters (HTTP JSON, HTTP protobuf, gRPC), and read traces back from
// Jaeger's HTTP API.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { credentials } from '@grpc/grpc-js';
import { type Context, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { OTLPTraceExporter as GrpcExporter } from '@opentelemetry/exporter-trace-otlp-grpc';
import { OTLPTraceExporter as JsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtobufExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { App, Chart } from 'cdk8s';
import { Agent, fetch as undiciFetch } from 'undici';
import {
  chartManifests,
  collectorOtlpPorts,
  type LocalStack,
  type StackOptions,
  startLocalStack,
  tracingBinaries,
} from './local-stack.ts';

export type { LocalStack };
export { collectorOtlpPorts, tracingBinaries };

/** Starts every Deployment of `chart` (a dist/ chart name, or YAML) in a temporary folder, backends first, each healthy before the next. */
export function startStack(chart: string, options: Omit<StackOptions, 'dir'> = {}): Promise<LocalStack> {
  return startLocalStack(chartManifests(chart), { ...options, dir: mkdtempSync(join(tmpdir(), 'trace-stack-')) });
}

/** YAML of the charts a test builds with the package's constructs, as dist/ would hold it. */
export function synthYaml(build: (chart: Chart) => void): string {
  const app = new App({ outdir: mkdtempSync(join(tmpdir(), 'trace-synth-')) });
  build(new Chart(app, 'test'));
  return `${app.synthYaml()}\n`;
}

export const hex = (bytes: number) => randomBytes(bytes).toString('hex');

/** One span of a test trace. */
export interface TestSpan {
  readonly name: string;
  readonly spanId?: string;
  readonly parentSpanId?: string;
  /** Milliseconds. @default 5 */
  readonly durationMs?: number;
  readonly error?: boolean;
  readonly kind?: number;
  readonly attributes?: Readonly<Record<string, string | number | boolean>>;
}

const attribute = ([key, value]: [string, string | number | boolean]) => ({
  key,
  value:
    typeof value === 'string'
      ? { stringValue: value }
      : typeof value === 'boolean'
        ? { boolValue: value }
        : Number.isInteger(value)
          ? { intValue: String(value) }
          : { doubleValue: value },
});

/** An OTLP/JSON ExportTraceServiceRequest: `traces` of `service`, each a trace id and its spans ending now. */
export function otlpRequest(
  service: string,
  traces: readonly { traceId: string; spans: readonly TestSpan[] }[],
  resource: Readonly<Record<string, string>> = {},
) {
  const now = BigInt(Date.now()) * 1_000_000n;
  return {
    resourceSpans: [
      {
        resource: { attributes: Object.entries({ 'service.name': service, ...resource }).map(attribute) },
        scopeSpans: [
          {
            scope: { name: 'website-stack-tests' },
            spans: traces.flatMap(({ traceId, spans }) =>
              spans.map((s) => ({
                traceId,
                spanId: s.spanId ?? hex(8),
                ...(s.parentSpanId ? { parentSpanId: s.parentSpanId } : {}),
                name: s.name,
                kind: s.kind ?? 2,
                startTimeUnixNano: String(now - BigInt(Math.round((s.durationMs ?? 5) * 1_000_000))),
                endTimeUnixNano: String(now),
                attributes: Object.entries(s.attributes ?? {}).map(attribute),
                status: s.error ? { code: 2, message: 'failed' } : { code: 0 },
              })),
            ),
          },
        ],
      },
    ],
  };
}

/** POSTs an OTLP/JSON request to `<base>/v1/traces`; returns the HTTP status. */
export async function sendOtlpJson(
  base: string,
  request: unknown,
  headers: Record<string, string> = {},
): Promise<number> {
  const response = await fetch(`${base}/v1/traces`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(request),
  });
  await response.arrayBuffer();
  return response.status;
}

/** POSTs an OTLP/JSON request over https to `<base>/v1/traces`, trusting `tls.ca`, presenting `tls.cert`/`tls.key` when given; returns the HTTP status. */
export async function sendOtlpJsonTls(
  base: string,
  request: unknown,
  tls: ClientTls,
  headers: Record<string, string> = {},
): Promise<number> {
  const dispatcher = new Agent({ connect: tls });
  try {
    const response = await undiciFetch(`${base}/v1/traces`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(request),
      dispatcher,
    });
    await response.arrayBuffer();
    return response.status;
  } finally {
    await dispatcher.close();
  }
}

/** A span and the spans under it, made by `sdkTraces`. */
export interface SpanTree {
  readonly name: string;
  /** @default SERVER for a root, INTERNAL below */
  readonly kind?: SpanKind;
  readonly attributes?: Readonly<Record<string, string | number | boolean>>;
  readonly error?: boolean;
  /** Milliseconds. @default 5 */
  readonly durationMs?: number;
  readonly children?: readonly SpanTree[];
}

/**
 * Spans made by the OpenTelemetry SDK, one trace per tree (ids from the SDK's generator), ended
 * bottom-up as an instrumented service ends them: what its exporters send.
 */
export async function sdkTraces(
  service: string,
  trees: readonly SpanTree[],
): Promise<{ traceIds: string[]; spans: ReadableSpan[] }> {
  const memory = new InMemorySpanExporter();
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ 'service.name': service }),
    spanProcessors: [new SimpleSpanProcessor({ exporter: memory })],
  });
  const tracer = provider.getTracer('website-stack-tests');
  const end = Date.now();
  const make = (node: SpanTree, parent: Context, root: boolean): string => {
    const span = tracer.startSpan(
      node.name,
      {
        kind: node.kind ?? (root ? SpanKind.SERVER : SpanKind.INTERNAL),
        attributes: { ...node.attributes },
        startTime: end - (node.durationMs ?? 5),
      },
      parent,
    );
    const inside = trace.setSpan(parent, span);
    for (const child of node.children ?? []) make(child, inside, false);
    if (node.error) span.setStatus({ code: SpanStatusCode.ERROR, message: 'failed' });
    span.end(end);
    return span.spanContext().traceId;
  };
  const traceIds = trees.map((tree) => make(tree, ROOT_CONTEXT, true));
  await provider.forceFlush();
  // Read before shutting down: the in-memory exporter forgets its spans on shutdown.
  const spans = memory.getFinishedSpans();
  await provider.shutdown();
  return { traceIds, spans };
}

/** The OTLP transports an SDK offers (OTEL_EXPORTER_OTLP_PROTOCOL's values). */
export const OTLP_PROTOCOLS = ['http/json', 'http/protobuf', 'grpc'] as const;
export type OtlpProtocol = (typeof OTLP_PROTOCOLS)[number];

/** PEM texts for TLS to a collector: `ca` to trust, and the client certificate and key for mutual TLS. */
export interface ClientTls {
  readonly ca: string;
  readonly cert?: string;
  readonly key?: string;
  /** The name the server's certificate must carry, when it is reached by address (a ClusterIP). */
  readonly servername?: string;
}

/** An OpenTelemetry SDK exporter for `protocol` to a collector's OTLP ports; https/TLS when `tls` is given. */
export function otlpExporter(
  protocol: OtlpProtocol,
  ports: { readonly http: number; readonly grpc: number },
  tls?: ClientTls,
) {
  const scheme = tls ? 'https' : 'http';
  const agent = tls ? { httpAgentOptions: { ca: tls.ca, ...(tls.cert ? { cert: tls.cert, key: tls.key } : {}) } } : {};
  if (protocol === 'grpc') {
    const channel = tls
      ? credentials.createSsl(
          Buffer.from(tls.ca),
          tls.key ? Buffer.from(tls.key) : null,
          tls.cert ? Buffer.from(tls.cert) : null,
        )
      : credentials.createInsecure();
    return new GrpcExporter({ url: `${scheme}://127.0.0.1:${ports.grpc}`, credentials: channel });
  }
  const url = `${scheme}://127.0.0.1:${ports.http}/v1/traces`;
  return protocol === 'http/json' ? new JsonExporter({ url, ...agent }) : new ProtobufExporter({ url, ...agent });
}

/** Exports `spans` once with `exporter`; rejects with the exporter's error when the collector does not accept them. */
export function exportSpans(exporter: ReturnType<typeof otlpExporter>, spans: ReadableSpan[]): Promise<void> {
  return new Promise((resolve, reject) => {
    exporter.export(spans, (result) =>
      result.code === 0 ? resolve() : reject(result.error ?? new Error(`export failed with code ${result.code}`)),
    );
  });
}

/** A trace as Jaeger's HTTP API returns it. */
export interface JaegerTrace {
  traceID: string;
  spans: Array<{
    traceID: string;
    spanID: string;
    operationName: string;
    references: Array<{ refType: string; traceID: string; spanID: string }>;
    processID: string;
    /** Microseconds since the epoch. */
    startTime: number;
    tags: Array<{ key: string; type: string; value: unknown }>;
    logs: Array<{ timestamp: number; fields: Array<{ key: string; value: unknown }> }>;
    duration: number;
  }>;
  processes: Record<string, { serviceName: string; tags: Array<{ key: string; value: unknown }> }>;
}

/** Traces of `service` in Jaeger (up to `limit`, which must stay below the storage's max_traces), or [] when it has none. */
export async function jaegerTraces(
  queryBase: string,
  service: string,
  limit = 20_000,
  headers: Record<string, string> = {},
): Promise<JaegerTrace[]> {
  const response = await fetch(
    `${queryBase}/api/traces?service=${encodeURIComponent(service)}&limit=${limit}&lookback=1h`,
    { headers },
  );
  if (!response.ok) throw new Error(`Jaeger /api/traces answered ${response.status}: ${await response.text()}`);
  return ((await response.json()) as { data: JaegerTrace[] | null }).data ?? [];
}

/** The services one HotROD /dispatch request passes through, each reporting spans under its own name. */
export const HOTROD_SERVICES = ['frontend', 'customer', 'mysql', 'driver', 'redis-manual', 'route'];

/**
 * The trace of a HotROD /dispatch request once Jaeger holds all of it: HotROD's services export
 * their spans in batches of their own, so the tree arrives piece by piece. Whole means every
 * service of HOTROD_SERVICES and all 10 route calls. Until then it throws, saying what is missing,
 * so that eventually()'s timeout tells how far the trace got.
 */
export async function wholeDispatchTrace(
  queryBase: string,
  headers: Record<string, string> = {},
): Promise<JaegerTrace> {
  const traces = await jaegerTraces(queryBase, 'frontend', 20_000, headers);
  const dispatch = traces.find((t) => t.spans.some((s) => s.operationName === '/dispatch'));
  if (!dispatch) throw new Error(`no /dispatch trace yet (${traces.length} traces of frontend)`);
  const services = new Set(dispatch.spans.map((s) => dispatch.processes[s.processID].serviceName));
  const missing = HOTROD_SERVICES.filter((s) => !services.has(s));
  const routes = dispatch.spans.filter((s) => s.operationName === '/route').length;
  if (missing.length > 0 || routes !== 10)
    throw new Error(
      `trace ${dispatch.traceID} has ${dispatch.spans.length} spans, no spans yet from [${missing.join(', ')}], ${routes} of 10 /route calls`,
    );
  return dispatch;
}

/** One trace by id, or undefined when Jaeger does not have it. */
export async function jaegerTrace(
  queryBase: string,
  traceId: string,
  headers: Record<string, string> = {},
): Promise<JaegerTrace | undefined> {
  const response = await fetch(`${queryBase}/api/traces/${traceId}`, { headers });
  if (response.status === 404) return undefined;
  if (!response.ok)
    throw new Error(`Jaeger /api/traces/${traceId} answered ${response.status}: ${await response.text()}`);
  return ((await response.json()) as { data: JaegerTrace[] }).data[0];
}

/** A CA, and server and client certificates it signed, made with openssl: PEM texts. */
export interface TestPki {
  readonly ca: string;
  readonly serverCert: string;
  readonly serverKey: string;
  readonly clientCert: string;
  readonly clientKey: string;
}

/** A fresh CA, a server certificate for `dnsNames` and 127.0.0.1, and a client certificate. */
export function testPki(dnsNames: readonly string[]): TestPki {
  const dir = mkdtempSync(join(tmpdir(), 'pki-'));
  const ssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  const read = (file: string) => readFileSync(join(dir, file), 'utf8');
  // An unencrypted P-256 key: how every `openssl req` here makes its key.
  const newKey = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];
  ssl('req', '-x509', ...newKey, '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '1', '-subj', '/CN=test-ca');
  const issue = (name: string, ext: string) => {
    writeFileSync(join(dir, `${name}.ext`), ext);
    ssl('req', ...newKey, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${name}`);
    ssl(
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      'ca.crt',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-out',
      `${name}.crt`,
      '-days',
      '1',
      '-extfile',
      `${name}.ext`,
    );
  };
  const sans = [...dnsNames.map((n) => `DNS:${n}`), 'IP:127.0.0.1'].join(',');
  issue('server', `subjectAltName=${sans}\nextendedKeyUsage=serverAuth\nkeyUsage=digitalSignature\n`);
  issue('client', 'extendedKeyUsage=clientAuth\nkeyUsage=digitalSignature\n');
  return {
    ca: read('ca.crt'),
    serverCert: read('server.crt'),
    serverKey: read('server.key'),
    clientCert: read('client.crt'),
    clientKey: read('client.key'),
  };
}
