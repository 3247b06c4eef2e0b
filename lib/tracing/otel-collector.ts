import type { k8s } from 'cdk8s-plus-34';
import { Construct } from 'constructs';
import { singlePodLintExemptions } from '../lint.ts';
import { assertOneOf, optionalFeature } from '../props.ts';
import { DEFAULT_REPLICA_SPREAD } from '../scheduling.ts';
import {
  APPLICATIONS_FILTER,
  assertValidControlPlane,
  CONTROL_PLANE_TAIL_SAMPLING,
  type CollectorControlPlane,
  controlPlanePipeline,
} from './collector/control-plane.ts';
import { assertValidBackends, backendExporter, type CollectorBackend, exporterId } from './collector/exporters.ts';
import { type CollectorProcessorOptions, type CollectorSampling, processorChain } from './collector/processors.ts';
import { assertValidReceiverSecurity, type CollectorReceiverSecurity, otlpReceivers } from './collector/receivers.ts';
import { assertValidRouting, type CollectorRouting, tracePipelines } from './collector/routing.ts';
import {
  assertValidCollectorConfig,
  type CollectorConfig,
  type ComponentId,
  type ExtensionConfig,
  type TelemetryConfig,
} from './collector-config.ts';
import { COLLECTOR_PORTS, HEALTH_CHECK_PATHS, serviceHost, TRACING_IMAGES, TRACING_NAMESPACE } from './names.ts';
import { type SecretMount, type TracingResources, TracingWorkload } from './tracing-workload.ts';

/** What the collector does, in the spec's words; `collectorConfig` turns it into the document. */
export interface CollectorPipelineOptions extends CollectorProcessorOptions {
  /** Backends; at least one. */
  readonly backends: CollectorBackend[];
  /** @default every span to every backend */
  readonly routing?: CollectorRouting;
  /** @default open receivers */
  readonly receiverSecurity?: CollectorReceiverSecurity;
  /** The collector's own log level. @default 'info' */
  readonly logLevel?: 'debug' | 'info' | 'warn' | 'error';
  /**
   * The Kubernetes control plane's traces (API server, etcd, kubelet), which the control plane
   * exports to this collector's OTLP gRPC port when told to (`--tracing-config-file`;
   * docs/use/control-plane-tracing.md), in a pipeline of their own (`traces/control-plane`): every
   * other pipeline drops their spans, so the applications' sampling never decides them, and theirs
   * keeps errors, slow requests and a percentage of the rest, without the API server's probes.
   * With routing they go to the default backends. `false`: no such pipeline, and control-plane
   * spans are sampled as any others.
   * @default true
   */
  readonly controlPlane?: boolean;
  /** Tunes the `controlPlane` pipeline. @default the defaults of CollectorControlPlane */
  readonly controlPlaneOptions?: CollectorControlPlane;
}

/** The collector's document plus what its pod needs to resolve it: env vars from Secrets, mounted Secrets. */
export interface CollectorPipeline {
  readonly config: CollectorConfig;
  readonly env: k8s.EnvVar[];
  readonly secretMounts: SecretMount[];
}

/** Throws at the first option the collector could not run with, naming it and what to change. */
export function assertValidCollectorOptions(options: CollectorPipelineOptions, where: string): void {
  assertValidBackends(options.backends, where);
  assertOneOf(where, 'logLevel', options.logLevel, ['debug', 'info', 'warn', 'error']);
  assertValidReceiverSecurity(options.receiverSecurity ?? {}, where);
  if (options.routing) assertValidRouting(options.routing, options.backends, where);
  const controlPlane = optionalFeature(where, 'controlPlane', options.controlPlane, options.controlPlaneOptions, true);
  if (controlPlane) assertValidControlPlane(controlPlane, where);
}

/** The collector's own logs (JSON) and metrics (Prometheus, on the metrics port). */
export function collectorTelemetry(logLevel: CollectorPipelineOptions['logLevel'] = 'info'): TelemetryConfig {
  return {
    logs: { level: logLevel, encoding: 'json' },
    metrics: {
      level: 'normal',
      readers: [{ pull: { exporter: { prometheus: { host: '0.0.0.0', port: COLLECTOR_PORTS.metrics } } } }],
    },
  };
}

/** The collector's configuration document for `options`, validated. */
export function collectorConfig(options: CollectorPipelineOptions, where = 'collectorConfig'): CollectorPipeline {
  assertValidCollectorOptions(options, where);
  const exporters = options.backends.map(backendExporter);
  const receivers = otlpReceivers(options.receiverSecurity ?? {});
  const base = processorChain(options);
  // With routing, control-plane spans (which carry no route's value) go where unclaimed spans go.
  const defaults = options.backends.filter((b) => options.routing?.defaultBackends.includes(b.name) ?? true);
  const controlPlaneOptions = optionalFeature(
    where,
    'controlPlane',
    options.controlPlane,
    options.controlPlaneOptions,
    true,
  );
  const controlPlane =
    controlPlaneOptions === undefined
      ? undefined
      : controlPlanePipeline(
          controlPlaneOptions,
          options.healthCheckPaths ?? HEALTH_CHECK_PATHS,
          (defaults.length > 0 ? defaults : options.backends).map(exporterId),
        );
  const processors = { ...base.processors, ...controlPlane?.processors };
  // Right after memory_limiter: the applications' sampling never sees a control-plane span.
  const chain = controlPlane ? [base.chain[0], APPLICATIONS_FILTER, ...base.chain.slice(1)] : base.chain;
  const { filters, pipelines: applicationPipelines } = tracePipelines(options.backends, chain, options.routing);
  const pipelines = controlPlane
    ? { ...applicationPipelines, 'traces/control-plane': controlPlane.pipeline }
    : applicationPipelines;
  // Authenticators, env vars and Secret mounts in this order: the exporters', then the receivers'.
  const parts = [...exporters, receivers];
  const extensions: Record<ComponentId, ExtensionConfig> = Object.assign(
    { health_check: { endpoint: `0.0.0.0:${COLLECTOR_PORTS.health}` } },
    ...parts.map((part) => part.extensions),
  );
  const config: CollectorConfig = {
    receivers: receivers.receivers,
    processors: { ...processors, ...filters },
    exporters: Object.fromEntries(exporters.map((e) => [e.id, e.exporter])),
    extensions,
    service: { extensions: Object.keys(extensions), pipelines, telemetry: collectorTelemetry(options.logLevel) },
  };
  assertValidCollectorConfig(config, where);
  return { config, env: parts.flatMap((part) => part.env), secretMounts: parts.flatMap((part) => part.secretMounts) };
}

/** Requests for a collector handling a few thousand spans per second; the limit is what memory_limiter's percentage is of. */
export const DEFAULT_COLLECTOR_RESOURCES: TracingResources = {
  cpuRequest: '200m',
  memoryRequest: '256Mi',
  memoryLimit: '512Mi',
};

export interface OtelCollectorProps extends CollectorPipelineOptions {
  /** @default 'tracing' */
  readonly namespace?: string;
  /** Name of the Deployment, Service and ConfigMap. @default 'otel-collector' */
  readonly name?: string;
  /** @default 'otel/opentelemetry-collector-contrib:0.159.0' */
  readonly image?: string;
  /** More than one needs a trace-id-aware load balancer in front when decisions are per trace (tail sampling, health-check traces). @default 1 */
  readonly replicas?: number;
  /** @default DEFAULT_COLLECTOR_RESOURCES */
  readonly resources?: TracingResources;
}

/** Where the collector reads its configuration. */
export const COLLECTOR_CONFIG_DIR = '/etc/otelcol';
export const COLLECTOR_CONFIG_FILE = 'config.yaml';

/**
 * An OpenTelemetry Collector in front of one or more trace backends (spec §1.9): OTLP in on 4317
 * and 4318, memory protection, dropping health-check traces whole, batching, sampling, routing and
 * authenticated forwarding, health on 13133 and its own metrics on 8888.
 */
export class OtelCollector extends Construct {
  /** The configuration document the collector runs with (`CollectorConfig`), as its ConfigMap holds it. */
  public readonly config: Record<string, unknown>;
  public readonly workload: TracingWorkload;
  /** `http://<service>.<namespace>.svc:4318`: what applications set `OTEL_EXPORTER_OTLP_ENDPOINT` to. */
  public readonly otlpHttpEndpoint: string;
  /** `<service>.<namespace>.svc:4317`: the gRPC address. */
  public readonly otlpGrpcAddress: string;

  constructor(scope: Construct, id: string, props: OtelCollectorProps) {
    super(scope, id);
    const namespace = props.namespace ?? TRACING_NAMESPACE;
    const name = props.name ?? 'otel-collector';
    const replicas = props.replicas ?? 1;
    const where = `OtelCollector at '${this.node.path}'`;
    const pipeline = collectorConfig(props, where);
    assertReplicasSeeWholeTraces(pipeline.config, props.sampling, replicas, where);
    this.config = { ...pipeline.config };
    this.workload = new TracingWorkload(this, 'Workload', {
      namespace,
      name,
      component: 'collector',
      image: props.image ?? TRACING_IMAGES.collector,
      ports: { ...COLLECTOR_PORTS },
      config: { fileName: COLLECTOR_CONFIG_FILE, document: this.config, dir: COLLECTOR_CONFIG_DIR },
      env: pipeline.env,
      secretMounts: pipeline.secretMounts,
      health: { path: '/', port: 'health' },
      resources: props.resources ?? DEFAULT_COLLECTOR_RESOURCES,
      replicas,
      ...(replicas > 1
        ? { spread: DEFAULT_REPLICA_SPREAD }
        : {
            lint: singlePodLintExemptions(
              'One collector by default: tail sampling needs every span of a trace in one collector; raise replicas (behind a trace-id-aware load balancer for tail sampling) to scale.',
            ),
          }),
    });
    this.otlpHttpEndpoint = `http://${serviceHost(name, namespace)}:${COLLECTOR_PORTS['otlp-http']}`;
    this.otlpGrpcAddress = `${serviceHost(name, namespace)}:${COLLECTOR_PORTS['otlp-grpc']}`;
  }
}

/**
 * Throws when `replicas` collectors would each decide on fragments of traces: tail_sampling (tail
 * sampling, or dropping health-check traces whole) needs every span of a trace in one collector.
 */
export function assertReplicasSeeWholeTraces(
  config: CollectorConfig,
  sampling: CollectorSampling | undefined,
  replicas: number,
  where: string,
): void {
  if (replicas <= 1) return;
  const processors = config.processors ?? {};
  let why: string | undefined;
  if (processors.tail_sampling)
    why =
      sampling?.mode === 'tail'
        ? 'tail sampling'
        : 'dropping health-check traces whole (healthCheckPaths: [] keeps them)';
  else if (processors[CONTROL_PLANE_TAIL_SAMPLING])
    why = "the control plane's tail sampling (controlPlane: false leaves it out)";
  if (!why) return;
  throw new Error(
    `${where}: ${why} decides per trace; with ${replicas} replicas traces would be split between ` +
      'collectors and decided on fragments. Run 1 replica, or put a trace-id-aware load balancer in front',
  );
}
