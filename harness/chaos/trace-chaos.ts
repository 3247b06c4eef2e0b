// The trace stack under faults, run by `npm run chaos:trace` (bench/chaos-trace.ts) and, short, by
// test/trace/chaos.test.ts. A Collector gateway with the production stack's settings (ProductionTracingStack's: tail sampling, errors kept, mutual
// TLS required of senders, the export queue and retries every collector has) in front of Jaeger
// all-in-one on Badger, synthesized by the constructs and run as local processes with the real
// binaries (harness/trace/local-stack.ts). Badger, not memory: Jaeger itself is restarted, and only
// storage that survives the restart keeps what was written before the outage, so every span sent
// can be looked for afterwards. Not Cassandra: on a small shared machine Jaeger's Cassandra writes (the
// span and each of its indexes) set the pace after an outage, and the run would measure Cassandra's write rate
// rather than the Collector's queue (Cassandra runs in test/trace/cassandra.test.ts).
//
// A bounded sender (the OpenTelemetry SDK's OTLP/HTTP protobuf exporter, with a client certificate,
// to 127.0.0.1 only) sends error traces at a constant rate: tail sampling keeps every error trace,
// so each trace the gateway accepted must end up in Jaeger whole. Faults:
// - Jaeger down (SIGTERM, an orderly stop), started again after the outage;
// - the gateway restarted (SIGTERM, then started again at once);
// - the gateway crashed (SIGKILL, then started again; full run only);
// - Elasticsearch unreachable: the production collector (JaegerProduction on a real Elasticsearch,
//   harness/trace/elasticsearch.ts) behind the same gateway, while connections to Elasticsearch's port
//   are reset (an iptables rule, as a network fault; needs root) for a few seconds. Jaeger's writer
//   reconnects by asking the node HEAD / (docs/measure/chaos.md, "Trace stack under faults").
// Afterwards every trace id is read back from Jaeger's query API. "Lost" is spans the gateway
// accepted (the export succeeded) that Jaeger does not hold; "refused" is spans whose export failed
// (the sender saw it, as an application's SDK would). Last, OTLP without a client certificate is
// sent to the gateway over every transport: each must be refused, and none of it stored.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Chart } from 'cdk8s';
import { CollectorSampling } from '../../lib/tracing/collector/processors.ts';
import { AllInOneStorage, JaegerAllInOne } from '../../lib/tracing/jaeger-all-in-one.ts';
import { JaegerProduction, ProductionStorage } from '../../lib/tracing/jaeger-production.ts';
import { OtelCollector } from '../../lib/tracing/otel-collector.ts';
import { awaitHealthy } from '../process/logged.ts';
import { sumMetric } from '../process/metrics.ts';
import { eventually } from '../process/poll.ts';
import { type Elasticsearch, es, startElasticsearch } from '../trace/elasticsearch.ts';
import {
  chartManifests,
  collectorOtlpPorts,
  healthUrl,
  type LocalStack,
  type RunningPod,
  startLocalStack,
  startPod,
  tracingBinaries,
} from '../trace/local-stack.ts';
import {
  type ClientTls,
  exportSpans,
  hex,
  jaegerTrace,
  type OtlpProtocol,
  otlpExporter,
  otlpRequest,
  sdkTraces,
  sendOtlpJson,
  sendOtlpJsonTls,
  synthYaml,
  testPki,
} from '../trace/traces.ts';

/** Spans per trace the sender makes: a failing request, its database query and a cache call. */
const SPANS_PER_TRACE = 3;

export interface TraceChaosOptions {
  readonly short: boolean;
  readonly log: (line: string) => void;
}

/** One fault under load, counted. */
export interface FaultResult {
  readonly fault: string;
  /** How it was injected. */
  readonly injected: string;
  readonly downSeconds: number;
  readonly spansSent: number;
  /** Spans in exports the gateway accepted. */
  readonly spansAccepted: number;
  /** Spans in exports that failed (the sender's SDK sees the failure). */
  readonly spansRefused: number;
  /** Accepted spans Jaeger holds afterwards. */
  readonly spansStored: number;
  /** Accepted spans Jaeger does not hold. */
  readonly spansLost: number;
  /** Spans Jaeger's query API returned beyond a trace's own: a span a reader would see twice. */
  readonly spansReadTwice: number;
  /** From the end of the load until the last accepted trace was whole in Jaeger (or until reading gave up). */
  readonly secondsToStore: number;
  /** The gateway's exporter queue at its fullest during the run, in spans, and its capacity. */
  readonly peakQueue: number;
  readonly queueCapacity: number;
  /**
   * Span documents stored more than once (counted in Elasticsearch; the Badger runs cannot tell).
   * Jaeger's Elasticsearch writer sends a bulk request again when its answer is lost, and the
   * documents have no id of their own, so an outage can store a span twice: delivery is at least
   * once. Jaeger's query removes identical copies (its DeduplicateSpans adjuster), which
   * spansReadTwice checks.
   */
  readonly spansDuplicated?: number;
  /** Packets to the storage the fault turned away (the iptables rule's counter): it reached the collector. */
  readonly packetsRefused?: number;
}

/** One attempt to send OTLP to the gateway without a client certificate. */
export interface UnauthenticatedResult {
  readonly transport: string;
  /** What the sender got back. */
  readonly outcome: string;
  readonly refused: boolean;
  /** Spans of it in Jaeger afterwards. */
  readonly spansStored: number;
}

interface Sizes {
  readonly tracesPerSecond: number;
  readonly beforeSeconds: number;
  readonly jaegerDownSeconds: number;
  /** Within the retries of Jaeger's Elasticsearch writer (about 10 s), which need no reconnection. */
  readonly elasticsearchDownSeconds: number;
  readonly afterSeconds: number;
}

const FULL: Sizes = {
  tracesPerSecond: 50,
  beforeSeconds: 10,
  jaegerDownSeconds: 60,
  elasticsearchDownSeconds: 8,
  afterSeconds: 20,
};
const SHORT: Sizes = {
  tracesPerSecond: 20,
  beforeSeconds: 5,
  jaegerDownSeconds: 10,
  elasticsearchDownSeconds: 5,
  afterSeconds: 5,
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The stack's pods, restartable one by one on the same local ports. */
class Pods {
  private readonly current = new Map<string, RunningPod>();
  private readonly binaries = tracingBinaries();
  private readonly stack: LocalStack;
  private readonly logDir: string;
  constructor(stack: LocalStack, logDir: string) {
    this.stack = stack;
    this.logDir = logDir;
    for (const r of stack.running) this.current.set(r.pod.name, r);
  }

  /** Stops `name` with `signal` and waits for it to exit. */
  async stop(name: string, signal: 'SIGTERM' | 'SIGKILL'): Promise<void> {
    const running = this.current.get(name)!;
    if (running.process.exitCode !== null || running.process.signalCode !== null) return;
    // 'exit' is enough: its log goes straight to a file (startPod), complete once it has exited.
    const exited = new Promise((r) => running.process.once('exit', r));
    running.process.kill(signal);
    await exited;
  }

  /** Starts `name` again with its plan (same ports, config and environment) and waits until healthy. */
  async start(name: string): Promise<void> {
    const pod = this.stack.pods.find((p) => p.name === name)!;
    const running = startPod(pod, this.binaries, { logDir: this.logDir });
    this.current.set(name, running);
    await awaitHealthy(running, healthUrl(pod));
  }

  async stopAll(): Promise<void> {
    await Promise.all([...this.current.values()].map((r) => r.stop()));
  }
}

/** Sends error traces at a constant rate until stopped, or until `maxSeconds`; records each export's outcome. */
class Load {
  readonly accepted: string[] = [];
  readonly refused: string[] = [];
  private stopped = false;
  private readonly inFlight = new Set<Promise<void>>();
  private readonly exporter: ReturnType<typeof otlpExporter>;
  private readonly done: Promise<void>;

  constructor(
    ports: { http: number; grpc: number },
    tls: ClientTls,
    service: string,
    tracesPerSecond: number,
    maxSeconds: number,
  ) {
    // The SDK's own retries (for about 10 s) bridge a short refusal, as they would in an application.
    this.exporter = otlpExporter('http/protobuf', ports, tls);
    this.done = this.run(service, tracesPerSecond, maxSeconds);
  }

  private async run(service: string, tracesPerSecond: number, maxSeconds: number): Promise<void> {
    const tickMs = 100;
    const start = Date.now();
    for (let tick = 0; !this.stopped && Date.now() - start < maxSeconds * 1000; tick++) {
      // Whole traces per tick, spread so that the rate holds on average.
      const count =
        Math.floor(((tick + 1) * tracesPerSecond * tickMs) / 1000) -
        Math.floor((tick * tracesPerSecond * tickMs) / 1000);
      if (count > 0) {
        const { traceIds, spans } = await sdkTraces(
          service,
          Array.from({ length: count }, () => ({
            name: 'POST /orders',
            error: true,
            attributes: { 'url.path': '/orders' },
            children: [{ name: 'INSERT orders', error: true, children: [{ name: 'SET session' }] }],
          })),
        );
        const sent = exportSpans(this.exporter, spans).then(
          () => void this.accepted.push(...traceIds),
          () => void this.refused.push(...traceIds),
        );
        this.inFlight.add(sent);
        void sent.finally(() => this.inFlight.delete(sent));
      }
      await sleep(start + (tick + 1) * tickMs - Date.now());
    }
  }

  /** Stops sending and waits for every export under way to finish. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.done;
    await Promise.all([...this.inFlight]);
    await this.exporter.shutdown();
  }
}

/** The gateway's exporter queue size and capacity, in spans, from its own metrics. */
async function queue(metricsPort: number): Promise<{ size: number; capacity: number }> {
  try {
    const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    return {
      size: sumMetric(text, 'otelcol_exporter_queue_size'),
      capacity: sumMetric(text, 'otelcol_exporter_queue_capacity'),
    };
  } catch {
    return { size: 0, capacity: 0 };
  }
}

/**
 * Reads every trace back from Jaeger until each holds all its spans, or until nothing more has
 * arrived for `quietMs` (longer than the decision wait plus the longest retry interval); returns
 * the spans found per trace.
 */
async function storedSpans(
  query: string,
  traceIds: readonly string[],
  quietMs: number,
  log: (line: string) => void,
): Promise<{ found: Map<string, number>; lastProgress: number }> {
  const found = new Map<string, number>(traceIds.map((id) => [id, 0]));
  let lastProgress = Date.now();
  for (;;) {
    const pending = traceIds.filter((id) => found.get(id)! < SPANS_PER_TRACE);
    let progress = false;
    for (let i = 0; i < pending.length; i += 16) {
      await Promise.all(
        pending.slice(i, i + 16).map(async (id) => {
          const spans = (await jaegerTrace(query, id))?.spans.length ?? 0;
          if (spans > found.get(id)!) progress = true;
          found.set(id, spans);
        }),
      );
    }
    const missing = traceIds.filter((id) => found.get(id)! < SPANS_PER_TRACE).length;
    if (progress) lastProgress = Date.now();
    if (missing === 0) return { found, lastProgress };
    if (Date.now() - lastProgress > quietMs) {
      log(`  ${missing} of ${traceIds.length} traces still incomplete after ${quietMs / 1000} s without progress`);
      return { found, lastProgress };
    }
    await sleep(3000);
  }
}

interface Context {
  readonly pods: Pods;
  readonly ports: { http: number; grpc: number };
  readonly metricsPort: number;
  readonly query: () => string;
  readonly tls: ClientTls;
  readonly sizes: Sizes;
  readonly log: (line: string) => void;
}

/** The gateway with the production stack's settings (tail sampling, client certificates required) in front of `jaeger`. */
function productionGateway(chart: Chart, jaeger: string): void {
  new OtelCollector(chart, 'Gateway', {
    sampling: CollectorSampling.tail({ percentage: 1 }),
    backends: [{ name: 'jaeger', endpoint: jaeger }],
    receiverSecurity: { tls: { secretName: 'otel-collector-tls' } },
  });
}

/** The gateway's serving certificate and the CA its senders' certificates chain to. */
const gatewaySecrets = (pki: ReturnType<typeof testPki>) => ({
  'otel-collector-tls': { 'tls.crt': pki.serverCert, 'tls.key': pki.serverKey, 'ca.crt': pki.ca },
});

/** The load's view of a started stack: its gateway's ports and metrics, and Jaeger's query in pod `query`. */
function context(
  stack: LocalStack,
  pods: Pods,
  query: string,
  tls: ClientTls,
  sizes: Sizes,
  log: (line: string) => void,
): Context {
  return {
    pods,
    ports: collectorOtlpPorts(stack),
    metricsPort: stack.port('otel-collector', 'metrics'),
    query: () => stack.url(query, 'query'),
    tls,
    sizes,
    log,
  };
}

/** Runs the load through `fault` (which returns after the fault is over) and counts what arrived. */
async function underLoad(
  ctx: Context,
  name: string,
  injected: string,
  fault: () => Promise<number>,
  named: (service: string) => void = () => {},
): Promise<FaultResult> {
  const { sizes, log } = ctx;
  const service = `chaos-${name.toLowerCase().replace(/[^a-z0-9]+/g, '-')}-${hex(3)}`;
  named(service);
  log(
    `${name}: ${sizes.tracesPerSecond} error traces/s (${sizes.tracesPerSecond * SPANS_PER_TRACE} spans/s) as ${service}`,
  );
  const load = new Load(
    ctx.ports,
    ctx.tls,
    service,
    sizes.tracesPerSecond,
    sizes.beforeSeconds + sizes.jaegerDownSeconds + sizes.afterSeconds + 120,
  );
  let peak = 0;
  let capacity = 0;
  const sampler = setInterval(() => {
    void queue(ctx.metricsPort).then((q) => {
      peak = Math.max(peak, q.size);
      capacity = Math.max(capacity, q.capacity);
    });
  }, 1000);
  let downSeconds: number;
  try {
    await sleep(sizes.beforeSeconds * 1000);
    downSeconds = await fault();
    await sleep(sizes.afterSeconds * 1000);
  } finally {
    await load.stop();
    clearInterval(sampler);
  }
  log(
    `  load stopped: ${load.accepted.length} traces accepted, ${load.refused.length} refused; reading them back from Jaeger`,
  );
  const stoppedAt = Date.now();
  // Quiet for 90 s: past the 10 s decision wait, the 10 s longest retry interval, and a slow write.
  const { found, lastProgress } = await storedSpans(ctx.query(), load.accepted, 90_000, log);
  // Per trace: fewer spans than it has were lost; more would be a span read twice.
  const counts = [...found.values()];
  const spansStored = counts.reduce((sum, n) => sum + Math.min(n, SPANS_PER_TRACE), 0);
  const spansReadTwice = counts.reduce((sum, n) => sum + Math.max(0, n - SPANS_PER_TRACE), 0);
  const spansAccepted = load.accepted.length * SPANS_PER_TRACE;
  const result: FaultResult = {
    fault: name,
    injected,
    downSeconds: Math.round(downSeconds * 10) / 10,
    spansSent: (load.accepted.length + load.refused.length) * SPANS_PER_TRACE,
    spansAccepted,
    spansRefused: load.refused.length * SPANS_PER_TRACE,
    spansStored,
    spansLost: spansAccepted - spansStored,
    spansReadTwice,
    secondsToStore: Math.round((lastProgress - stoppedAt) / 100) / 10,
    peakQueue: peak,
    queueCapacity: capacity,
  };
  log(`  ${JSON.stringify(result)}`);
  return result;
}

/** Stops `names` with `signal`, waits `holdMs`, starts them again; returns the seconds they were down. */
async function outage(
  pods: Pods,
  names: readonly string[],
  signal: 'SIGTERM' | 'SIGKILL',
  holdMs: number,
): Promise<number> {
  const start = Date.now();
  for (const name of names) await pods.stop(name, signal);
  await sleep(holdMs);
  for (const name of names) await pods.start(name);
  return (Date.now() - start) / 1000;
}

/** A failed send in a few words: the TLS alert, or the transport's own message. */
function refusal(error: Error): string {
  const message = `${error.message} ${(error.cause as Error | undefined)?.message ?? ''}`;
  if (/certificate required/.test(message)) return 'refused at the TLS handshake: certificate required';
  if (/UNAVAILABLE/.test(message)) return 'refused: no connection (gRPC UNAVAILABLE)';
  return `refused: ${message.split('\n')[0].trim().slice(0, 80)}`;
}

/** OTLP without a client certificate, over each transport; then an authenticated trace, so that anything let in would have been stored by then. */
async function unauthenticated(ctx: Context): Promise<UnauthenticatedResult[]> {
  const service = 'chaos-unauthenticated';
  const json = (label: string, base: string, tls?: ClientTls) => {
    const traceId = hex(16);
    const body = otlpRequest(service, [{ traceId, spans: [{ name: 'POST /orders', error: true }] }]);
    return {
      transport: label,
      traceId,
      send: async () => {
        const status = await (tls ? sendOtlpJsonTls(base, body, tls) : sendOtlpJson(base, body));
        return status === 200 ? 'accepted (HTTP 200)' : `refused: HTTP ${status}`;
      },
    };
  };
  const sdk = async (label: string, protocol: OtlpProtocol, tls?: ClientTls) => {
    const { traceIds, spans } = await sdkTraces(service, [{ name: 'POST /orders', error: true }]);
    return {
      transport: label,
      traceId: traceIds[0],
      send: async () => {
        const exporter = otlpExporter(protocol, ctx.ports, tls);
        try {
          await exportSpans(exporter, spans);
          return 'accepted';
        } finally {
          await exporter.shutdown();
        }
      },
    };
  };
  const attempts = [
    json('OTLP/HTTP JSON, plain HTTP', `http://127.0.0.1:${ctx.ports.http}`),
    json('OTLP/HTTP JSON over TLS, no client certificate', `https://127.0.0.1:${ctx.ports.http}`, { ca: ctx.tls.ca }),
    await sdk('OTLP/HTTP protobuf over TLS, no client certificate', 'http/protobuf', { ca: ctx.tls.ca }),
    await sdk('OTLP/gRPC over TLS, no client certificate', 'grpc', { ca: ctx.tls.ca }),
    await sdk('OTLP/gRPC, plaintext', 'grpc'),
  ];
  const outcomes: string[] = [];
  for (const attempt of attempts) outcomes.push(await attempt.send().catch(refusal));
  // An authenticated error trace sent after them: once it is stored, anything let in before it would be too.
  const control = await sdkTraces(service, [{ name: 'POST /orders', error: true }]);
  const exporter = otlpExporter('http/protobuf', ctx.ports, ctx.tls);
  await exportSpans(exporter, control.spans);
  await exporter.shutdown();
  // Without it the gateway stores nothing, and its refusals would prove nothing.
  await eventually('the authenticated control trace in Jaeger', () => jaegerTrace(ctx.query(), control.traceIds[0]), {
    timeoutMs: 90_000,
    intervalMs: 1000,
    stopOnError: true,
  });
  await sleep(3000);
  const results: UnauthenticatedResult[] = [];
  for (const [i, attempt] of attempts.entries()) {
    const spansStored = (await jaegerTrace(ctx.query(), attempt.traceId))?.spans.length ?? 0;
    results.push({
      transport: attempt.transport,
      outcome: outcomes[i],
      refused: outcomes[i].startsWith('refused'),
      spansStored,
    });
    ctx.log(`  ${attempt.transport}: ${outcomes[i]}; ${spansStored} spans stored`);
  }
  return results;
}

/**
 * Resets every connection to 127.0.0.1:`port` for `holdMs` (an iptables rule); returns the seconds
 * it lasted and the packets the rule turned away.
 */
async function refuseConnections(port: number, holdMs: number): Promise<{ seconds: number; packets: number }> {
  const rule = ['-p', 'tcp', '-d', '127.0.0.1', '--dport', String(port), '-j', 'REJECT', '--reject-with', 'tcp-reset'];
  const iptables = (...args: string[]) => execFileSync('iptables', args, { encoding: 'utf8' });
  const start = Date.now();
  iptables('-I', 'INPUT', '1', ...rule);
  let packets = 0;
  try {
    await sleep(holdMs);
  } finally {
    // The rule is first in the chain: its packet counter is the first number of its line.
    packets = Number(iptables('-L', 'INPUT', '1', '-v', '-x', '-n').trim().split(/\s+/)[0]);
    iptables('-D', 'INPUT', ...rule);
  }
  return { seconds: (Date.now() - start) / 1000, packets };
}

/**
 * The production collector on a real Elasticsearch behind the gateway, under the same load, while
 * Elasticsearch's port refuses connections; lost and duplicated spans counted in Elasticsearch.
 */
async function elasticsearchDown(
  dir: string,
  tls: ClientTls,
  pki: ReturnType<typeof testPki>,
  sizes: Sizes,
  log: (line: string) => void,
): Promise<FaultResult> {
  log('starting Elasticsearch, then the production collector and query on it behind the gateway');
  const users = { elastic: randomBytes(18).toString('base64url'), jaeger: randomBytes(18).toString('base64url') };
  let elasticsearch: Elasticsearch | undefined;
  let pods: Pods | undefined;
  try {
    elasticsearch = await startElasticsearch(join(dir, 'node'), { users });
    const esHost = new URL(elasticsearch.url).host;
    const yaml = synthYaml((chart) => {
      const jaeger = new JaegerProduction(chart, 'Jaeger', {
        storage: ProductionStorage.elasticsearch({
          serverUrls: ['https://elasticsearch-es-http.tracing.svc:9200'],
          version: 8,
          clientHealthCheck: false,
          credentials: { secretName: 'jaeger-elasticsearch' },
          caSecretName: 'elasticsearch-es-http-certs-public',
        }),
        queryReplicas: 1,
      });
      productionGateway(chart, jaeger.otlpGrpcAddress);
    });
    const stack = await startLocalStack(chartManifests(yaml), {
      dir,
      order: ['jaeger-collector', 'jaeger-query', 'otel-collector'],
      secrets: {
        ...gatewaySecrets(pki),
        'jaeger-elasticsearch': { username: 'jaeger', password: users.jaeger },
        'elasticsearch-es-http-certs-public': { 'ca.crt': elasticsearch.ca },
      },
      extraAddresses: { 'elasticsearch-es-http.tracing.svc:9200': esHost },
    });
    pods = new Pods(stack, join(dir, 'logs'));
    const ctx = context(stack, pods, 'jaeger-query', tls, sizes, log);
    const port = Number(new URL(elasticsearch.url).port);
    const node = { elasticsearch: { ...elasticsearch, users } };
    let service = '';
    let packetsRefused = 0;
    const result = await underLoad(
      ctx,
      'Elasticsearch unreachable',
      `connections to Elasticsearch reset (iptables) under the production collector`,
      async () => {
        // The gateway holds traces for its tail-sampling decision (10 s): the fault starts once the
        // collector is writing this run's spans, so that it lands on writes.
        await eventually(
          "the run's first spans in Elasticsearch",
          async () =>
            (await es(node, 'GET', `/jaeger-jaeger-span-*/_count?q=process.serviceName:${service}`)).body?.count > 0,
          { timeoutMs: 60_000, intervalMs: 500 },
        );
        const refused = await refuseConnections(port, sizes.elasticsearchDownSeconds * 1000);
        packetsRefused = refused.packets;
        return refused.seconds;
      },
      (name) => {
        service = name;
      },
    );
    // Every span document of the run, and each span id held more than once. A terms aggregation
    // whose shard size covers every span id of the run counts exactly; the cardinality aggregation
    // is an estimate, and once counted 1,445 distinct spans among 1,446 documents that held no
    // duplicate.
    const counted = await es(node, 'POST', '/jaeger-jaeger-span-*/_search', {
      body: {
        size: 0,
        track_total_hits: true,
        query: { term: { 'process.serviceName': service } },
        aggs: {
          duplicated: {
            terms: { field: 'spanID', min_doc_count: 2, size: 65_000, shard_size: 65_000 },
          },
        },
      },
    });
    const documents: number = counted.body.hits.total.value;
    const duplicated: { key: string; doc_count: number }[] = counted.body.aggregations.duplicated.buckets;
    const spansDuplicated = duplicated.reduce((sum, bucket) => sum + bucket.doc_count - 1, 0);
    log(
      `  in Elasticsearch: ${documents} span documents, ${spansDuplicated} duplicated${duplicated.length ? ` (span ids ${duplicated.map((b) => b.key).join(', ')})` : ''}; ${packetsRefused} packets refused`,
    );
    return { ...result, spansDuplicated, packetsRefused };
  } finally {
    await pods?.stopAll();
    await elasticsearch?.stop();
  }
}

function markdown(sizes: Sizes, faults: readonly FaultResult[], unauth: readonly UnauthenticatedResult[]): string {
  const lines = [
    `Load: ${sizes.tracesPerSecond} error traces/s of ${SPANS_PER_TRACE} spans (${sizes.tracesPerSecond * SPANS_PER_TRACE} spans/s), OTLP/HTTP protobuf with a client certificate, into a gateway with the production settings (tail sampling keeps every error trace); Jaeger all-in-one on Badger, and for "Elasticsearch unreachable" Jaeger's production collector and query on a real Elasticsearch.`,
    '',
    '| Fault | Injected as | Down (s) | Spans sent | Accepted | Refused (sender saw it) | Stored | Lost (accepted, not stored) | Read twice (query) | Stored twice (Elasticsearch documents) | Stored within (s after the load) | Gateway queue peak / capacity (spans) |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...faults.map(
      (f) =>
        `| ${f.fault} | ${f.injected} | ${f.downSeconds} | ${f.spansSent} | ${f.spansAccepted} | ${f.spansRefused} | ${f.spansStored} | ${f.spansLost} | ${f.spansReadTwice} | ${f.spansDuplicated ?? 'n/a'} | ${f.secondsToStore} | ${f.peakQueue} / ${f.queueCapacity} |`,
    ),
    '',
    '| OTLP to the gateway without a client certificate | Outcome | Spans stored |',
    '|---|---|---:|',
    ...unauth.map((u) => `| ${u.transport} | ${u.outcome} | ${u.spansStored} |`),
  ];
  return `${lines.join('\n')}\n`;
}

/** The trace stack's chaos run: faults under constant load, and unauthenticated OTLP; a markdown report and the figures as JSON. */
export async function traceChaos(options: TraceChaosOptions): Promise<{ markdown: string; json: unknown }> {
  const { log } = options;
  const sizes = options.short ? SHORT : FULL;
  const dir = mkdtempSync(join(tmpdir(), 'chaos-trace-'));
  const pki = testPki(['jaeger-collector.tracing.svc', 'otel-collector.tracing.svc']);
  const tls: ClientTls = { ca: pki.ca, cert: pki.clientCert, key: pki.clientKey };
  log('starting Jaeger all-in-one (Badger) and the gateway as local processes');
  let pods: Pods | undefined;
  try {
    const yaml = synthYaml((chart) => {
      const jaeger = new JaegerAllInOne(chart, 'Jaeger', { storage: AllInOneStorage.badger() });
      productionGateway(chart, jaeger.otlpGrpcAddress);
    });
    const stack = await startLocalStack(chartManifests(yaml), {
      dir,
      order: ['jaeger', 'otel-collector'],
      secrets: gatewaySecrets(pki),
    });
    pods = new Pods(stack, join(dir, 'logs'));
    const ctx = context(stack, pods, 'jaeger', tls, sizes, log);
    const p = pods;
    const faults: FaultResult[] = [];
    faults.push(
      await underLoad(ctx, 'Jaeger down', 'SIGTERM to Jaeger, started again', () =>
        outage(p, ['jaeger'], 'SIGTERM', sizes.jaegerDownSeconds * 1000),
      ),
    );
    faults.push(
      await underLoad(ctx, 'Collector restart', 'SIGTERM to the gateway, started again at once', () =>
        outage(p, ['otel-collector'], 'SIGTERM', 0),
      ),
    );
    if (!options.short)
      faults.push(
        await underLoad(ctx, 'Collector crash', 'SIGKILL to the gateway, started again at once', () =>
          outage(p, ['otel-collector'], 'SIGKILL', 0),
        ),
      );
    log('unauthenticated OTLP to the gateway');
    const unauth = await unauthenticated(ctx);
    await pods.stopAll();
    faults.push(await elasticsearchDown(join(dir, 'elasticsearch'), tls, pki, sizes, log));
    return {
      markdown: markdown(sizes, faults, unauth),
      json: { sizes, spansPerTrace: SPANS_PER_TRACE, faults, unauthenticated: unauth },
    };
  } finally {
    await pods?.stopAll();
    rmSync(dir, { recursive: true, force: true });
  }
}
