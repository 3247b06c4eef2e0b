import type { k8s } from 'cdk8s-plus-34';
import { Construct } from 'constructs';
import { singlePodLintExemptions } from '../lint.ts';
import { DEFAULT_REPLICA_SPREAD } from '../scheduling.ts';
import {
  type ClientTlsConfig,
  type CollectorConfig,
  type ExporterConfig,
  type ExtensionConfig,
  type OtlpServerConfig,
  type PipelineConfig,
  type ProcessorConfig,
  type TailSamplingPolicy,
  assertValidCollectorConfig,
} from './collector-config.ts';
import { COLLECTOR_PORTS, HEALTH_CHECK_PATHS, TRACING_IMAGES, TRACING_NAMESPACE, serviceHost } from './names.ts';
import { type SecretMount, type TracingResources, TracingWorkload } from './tracing-workload.ts';

/** A key of a Secret in the collector's namespace. */
export interface SecretKeyRef {
  readonly secretName: string;
  readonly key: string;
}

/**
 * Which traces the collector keeps (spec §8):
 * - `always`: every trace;
 * - `probabilistic`: head-based, `percentage` of traces by trace id (every span of a kept trace is kept);
 * - `tail`: after a trace completes: every trace with an error, every trace slower than
 *   `latencyThresholdMs`, and `percentage` of the rest. One collector must see all spans of a
 *   trace: run one replica, or put a trace-id-aware load balancer in front.
 */
export type CollectorSampling =
  | { readonly mode: 'always' }
  | { readonly mode: 'probabilistic'; readonly percentage: number }
  | {
      readonly mode: 'tail';
      readonly percentage: number;
      /** @default 1000 */
      readonly latencyThresholdMs?: number;
      /** How long after its first span a trace is decided. @default '10s' */
      readonly decisionWait?: string;
      /** Traces held while waiting; size it to decisionWait × new traces per second. @default 50000 */
      readonly numTraces?: number;
    };

/** How the collector authenticates to a backend; every credential comes from a Secret. */
export type ForwardingAuth =
  | { readonly type: 'bearer-token'; readonly token: SecretKeyRef }
  | { readonly type: 'basic'; readonly username: string; readonly password: SecretKeyRef }
  | { readonly type: 'oauth2-client-credentials'; readonly tokenUrl: string; readonly clientId: string; readonly clientSecret: SecretKeyRef; readonly scopes?: readonly string[] };

/** A downstream OTLP receiver the collector exports to. */
export interface CollectorBackend {
  /** Names the exporter (`otlp_grpc/<name>`); lower-case letters, digits and dashes. */
  readonly name: string;
  /** gRPC: host:port. HTTP: a base URL (`https://otlp.example.net`). */
  readonly endpoint: string;
  /** @default 'grpc' */
  readonly protocol?: 'grpc' | 'http';
  /**
   * TLS to a gRPC backend (an HTTP backend follows its URL's scheme): `secretName` names a Secret
   * with `ca.crt` for a private CA (the system's roots otherwise), and with `tls.crt`/`tls.key`
   * when `clientCertificate` is set (mutual TLS). Plaintext when omitted.
   * @default plaintext
   */
  readonly tls?: { readonly secretName?: string; readonly clientCertificate?: boolean };
  /** Credentials travel over TLS only: a backend with auth needs `tls` (gRPC) or an https URL. @default none */
  readonly auth?: ForwardingAuth;
}

/**
 * Multi-backend routing by a resource attribute (`tenant`, `deployment.environment`, ...): spans
 * whose attribute equals a route's value go to that route's backends, all others to the default
 * backends. Built as one pipeline per destination, each dropping what is not its own.
 */
export interface CollectorRouting {
  readonly attribute: string;
  readonly routes: readonly { readonly value: string; readonly backends: readonly string[] }[];
  readonly defaultBackends: readonly string[];
}

/** Who may send spans to the collector's OTLP receivers. */
export interface CollectorReceiverSecurity {
  /**
   * TLS from a Secret with `tls.crt`/`tls.key`, and `ca.crt` to verify clients: with
   * `requireClientCertificate` (the default) only clients holding a certificate it signed connect.
   * @default plaintext
   */
  readonly tls?: { readonly secretName: string; readonly requireClientCertificate?: boolean };
  /** Senders must present this bearer token. @default none */
  readonly bearerToken?: SecretKeyRef;
  /** Senders must present an OIDC token from this issuer for this audience. @default none */
  readonly oidc?: { readonly issuerUrl: string; readonly audience: string };
}

/** What the collector does, in the spec's words; `collectorConfig` turns it into the document. */
export interface CollectorPipelineOptions {
  /** Backends; at least one. */
  readonly backends: readonly CollectorBackend[];
  /** @default probabilistic 1 % (the spec's sample configuration) */
  readonly sampling?: CollectorSampling;
  /** @default { timeout: '1s', sendBatchSize: 1024 } */
  readonly batch?: { readonly timeout: string; readonly sendBatchSize: number };
  /**
   * Traces whose root span is a request to one of these paths are dropped whole: the root and every
   * span under it (a probe's database query too), decided per trace by tail_sampling, so the
   * collector must see every span of a trace (one replica). `[]` keeps them, and with sampling
   * other than `tail` then needs no trace-level decision.
   * @default /healthz, /readyz, /livez, /health
   */
  readonly healthCheckPaths?: readonly string[];
  /** Share of the container's memory limit the collector may use before refusing data. @default 80 */
  readonly memoryLimitPercentage?: number;
  /** @default every span to every backend */
  readonly routing?: CollectorRouting;
  /** @default open receivers */
  readonly receiverSecurity?: CollectorReceiverSecurity;
  /** The collector's own log level. @default 'info' */
  readonly logLevel?: 'debug' | 'info' | 'warn' | 'error';
}

/** The collector's document plus what its pod needs to resolve it: env vars from Secrets, mounted Secrets. */
export interface CollectorPipeline {
  readonly config: CollectorConfig;
  readonly env: readonly k8s.EnvVar[];
  readonly secretMounts: readonly SecretMount[];
}

/** Where the collector pod mounts TLS Secrets. */
export const COLLECTOR_TLS_DIR = '/etc/otelcol/tls';

const envName = (...parts: string[]) => parts.join('_').toUpperCase().replace(/[^A-Z0-9]+/g, '_');
const secretEnv = (name: string, ref: SecretKeyRef): k8s.EnvVar => ({ name, valueFrom: { secretKeyRef: { name: ref.secretName, key: ref.key } } });

/**
 * OTTL span conditions matching the root span of a request to `paths`, under old and current HTTP
 * semantic conventions. Only the root: a health check that an ordinary request makes on its way
 * (a client span to a dependency's /healthz) leaves that request's trace alone.
 */
export function healthCheckConditions(paths: readonly string[]): string[] {
  const alternatives = paths.map((p) => p.replace(/^\//, '').replace(/[.*+?^${}()|[\]\\]/g, '\\\\$&')).join('|');
  const path = `^/(${alternatives})/?$`;
  const target = `^/(${alternatives})/?(\\\\?.*)?$`;
  return [
    `IsRootSpan() and IsMatch(attributes["url.path"], "${path}")`,
    `IsRootSpan() and IsMatch(attributes["http.route"], "${path}")`,
    `IsRootSpan() and IsMatch(attributes["http.target"], "${target}")`,
  ];
}

/**
 * While a backend is down the collector keeps what it accepted and retries: spans wait in memory,
 * counted by span (a request's size depends on the sender), 100,000 of them: a minute's outage at
 * about 1,500 spans per second, inside memory_limiter's share of the default 512 MiB limit.
 * Retries back off up to 10 s, so a backend that comes back gets the backlog within seconds; what
 * is still failing after 5 minutes is dropped (and counted in otelcol_exporter_send_failed_spans).
 */
export const EXPORT_QUEUE = { enabled: true, sizer: 'items', queue_size: 100_000 } as const;
export const EXPORT_RETRY = { enabled: true, initial_interval: '1s', max_interval: '10s', max_elapsed_time: '300s' } as const;

/** The collector's configuration document for `options`, validated. */
export function collectorConfig(options: CollectorPipelineOptions, where = 'collectorConfig'): CollectorPipeline {
  const env: k8s.EnvVar[] = [];
  const secretMounts: SecretMount[] = [];
  const extensions: Record<string, ExtensionConfig> = { health_check: { endpoint: `0.0.0.0:${COLLECTOR_PORTS.health}` } };
  const serviceExtensions = ['health_check'];
  const addExtension = (id: string, config: ExtensionConfig) => {
    extensions[id] = config;
    serviceExtensions.push(id);
  };

  if (options.backends.length === 0) throw new Error(`${where}: name at least one backend to export to`);
  const exporters: Record<string, ExporterConfig> = {};
  const exporterIds = new Map<string, string>();
  for (const backend of options.backends) {
    if (!/^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/.test(backend.name)) throw new Error(`${where}: backend name '${backend.name}' must be lower-case letters, digits and dashes`);
    if (exporterIds.has(backend.name)) throw new Error(`${where}: two backends are named '${backend.name}'`);
    const id = `${backend.protocol === 'http' ? 'otlp_http' : 'otlp_grpc'}/${backend.name}`;
    exporterIds.set(backend.name, id);
    const http = backend.protocol === 'http';
    if (http && !/^https?:\/\/[^/]+/.test(backend.endpoint)) throw new Error(`${where}: backend '${backend.name}' speaks OTLP/HTTP: its endpoint must be an http(s):// base URL, got '${backend.endpoint}'`);
    const encrypted = http ? backend.endpoint.startsWith('https://') : backend.tls !== undefined;
    if (backend.auth && !encrypted) {
      throw new Error(`${where}: backend '${backend.name}' would send its ${backend.auth.type} credentials in clear text; ${http ? 'use an https:// endpoint' : 'set tls (with secretName for a private CA)'}`);
    }
    if (http && backend.tls && !encrypted) throw new Error(`${where}: backend '${backend.name}' has tls settings but an http:// endpoint; use https://`);
    if (backend.tls?.clientCertificate && !backend.tls.secretName) throw new Error(`${where}: backend '${backend.name}' wants a client certificate: name the Secret holding tls.crt and tls.key in tls.secretName`);
    let tls: ClientTlsConfig | undefined = http ? undefined : { insecure: true };
    if (backend.tls) {
      const client = backend.tls.clientCertificate ?? false;
      tls = { min_version: '1.2' };
      if (backend.tls.secretName) {
        const dir = `${COLLECTOR_TLS_DIR}/${backend.name}`;
        secretMounts.push({ secretName: backend.tls.secretName, mountPath: dir, keys: client ? ['ca.crt', 'tls.crt', 'tls.key'] : ['ca.crt'] });
        tls = { ca_file: `${dir}/ca.crt`, ...(client ? { cert_file: `${dir}/tls.crt`, key_file: `${dir}/tls.key` } : {}), min_version: '1.2' };
      }
    }
    let auth: { authenticator: string } | undefined;
    if (backend.auth) {
      const a = backend.auth;
      if (a.type === 'bearer-token') {
        const variable = envName(backend.name, 'bearer_token');
        env.push(secretEnv(variable, a.token));
        addExtension(`bearertokenauth/${backend.name}`, { token: `\${env:${variable}}` });
        auth = { authenticator: `bearertokenauth/${backend.name}` };
      } else if (a.type === 'basic') {
        const variable = envName(backend.name, 'password');
        env.push(secretEnv(variable, a.password));
        addExtension(`basicauth/${backend.name}`, { client_auth: { username: a.username, password: `\${env:${variable}}` } });
        auth = { authenticator: `basicauth/${backend.name}` };
      } else {
        const variable = envName(backend.name, 'client_secret');
        env.push(secretEnv(variable, a.clientSecret));
        addExtension(`oauth2client/${backend.name}`, {
          client_id: a.clientId,
          client_secret: `\${env:${variable}}`,
          token_url: a.tokenUrl,
          ...(a.scopes ? { scopes: [...a.scopes] } : {}),
        });
        auth = { authenticator: `oauth2client/${backend.name}` };
      }
    }
    exporters[id] = { endpoint: backend.endpoint, ...(tls ? { tls } : {}), ...(auth ? { auth } : {}), retry_on_failure: EXPORT_RETRY, sending_queue: EXPORT_QUEUE };
  }

  // Receivers: gRPC and HTTP on every interface, with the same TLS and authentication.
  const security = options.receiverSecurity ?? {};
  const server = (port: number): OtlpServerConfig => {
    let tls: OtlpServerConfig['tls'];
    if (security.tls) {
      const dir = `${COLLECTOR_TLS_DIR}/receiver`;
      const mutual = security.tls.requireClientCertificate ?? true;
      tls = { cert_file: `${dir}/tls.crt`, key_file: `${dir}/tls.key`, ...(mutual ? { client_ca_file: `${dir}/ca.crt` } : {}), min_version: '1.2' };
    }
    const authenticator = security.bearerToken ? 'bearertokenauth/receiver' : security.oidc ? 'oidc/receiver' : undefined;
    return { endpoint: `0.0.0.0:${port}`, ...(tls ? { tls } : {}), ...(authenticator ? { auth: { authenticator } } : {}) };
  };
  if (security.bearerToken && security.oidc) throw new Error(`${where}: receiverSecurity takes bearerToken or oidc, not both`);
  if (security.tls) {
    const mutual = security.tls.requireClientCertificate ?? true;
    secretMounts.push({ secretName: security.tls.secretName, mountPath: `${COLLECTOR_TLS_DIR}/receiver`, keys: mutual ? ['ca.crt', 'tls.crt', 'tls.key'] : ['tls.crt', 'tls.key'] });
  }
  if (security.bearerToken) {
    env.push(secretEnv('RECEIVER_BEARER_TOKEN', security.bearerToken));
    addExtension('bearertokenauth/receiver', { token: '${env:RECEIVER_BEARER_TOKEN}' });
  }
  if (security.oidc) addExtension('oidc/receiver', { issuer_url: security.oidc.issuerUrl, audience: security.oidc.audience });
  const receivers = { otlp: { protocols: { grpc: server(COLLECTOR_PORTS['otlp-grpc']), http: server(COLLECTOR_PORTS['otlp-http']) } } };

  // Processors in list order: protect memory, sample by trace id (head), decide on whole traces
  // (tail: health checks dropped, the tail rules), then batch what is kept.
  const memoryLimit = options.memoryLimitPercentage ?? 80;
  const processors: Record<string, ProcessorConfig> = {
    memory_limiter: { check_interval: '1s', limit_percentage: memoryLimit, spike_limit_percentage: Math.max(1, Math.round(memoryLimit / 4)) },
    batch: { timeout: options.batch?.timeout ?? '1s', send_batch_size: options.batch?.sendBatchSize ?? 1024 },
  };
  const chain = ['memory_limiter'];
  const sampling = options.sampling ?? { mode: 'probabilistic', percentage: 1 };
  if (sampling.mode === 'probabilistic') {
    // Before the tail buffer, so it holds only the traces this keeps.
    processors.probabilistic_sampler = { sampling_percentage: sampling.percentage, mode: 'proportional' };
    chain.push('probabilistic_sampler');
  }
  const healthCheckPaths = options.healthCheckPaths ?? HEALTH_CHECK_PATHS;
  const policies: TailSamplingPolicy[] = [];
  if (healthCheckPaths.length > 0) {
    policies.push({
      name: 'health-checks',
      type: 'drop',
      drop: { drop_sub_policy: [{ name: 'health-check-root', type: 'ottl_condition', ottl_condition: { error_mode: 'ignore', span: healthCheckConditions(healthCheckPaths) } }] },
    });
  }
  if (sampling.mode === 'tail') {
    policies.push(
      { name: 'errors', type: 'status_code', status_code: { status_codes: ['ERROR'] } },
      { name: 'slow', type: 'latency', latency: { threshold_ms: sampling.latencyThresholdMs ?? 1000 } },
      { name: 'rest', type: 'probabilistic', probabilistic: { sampling_percentage: sampling.percentage } },
    );
  } else if (policies.length > 0) {
    policies.push({ name: 'everything-else', type: 'always_sample' });
  }
  if (policies.length > 0) {
    const numTraces = (sampling.mode === 'tail' ? sampling.numTraces : undefined) ?? 50000;
    processors.tail_sampling = {
      decision_wait: (sampling.mode === 'tail' ? sampling.decisionWait : undefined) ?? '10s',
      // Without tail rules the decision needs only the root span: made a second after it arrives.
      // Tail rules look at every span (an error deep down), so they wait the whole decision_wait.
      ...(sampling.mode === 'tail' ? {} : { decision_wait_after_root_received: '1s' }),
      num_traces: numTraces,
      // A span arriving after its trace was decided (a slow service's child) follows the decision:
      // a health check's late child is dropped too, never stored as an orphan.
      decision_cache: { sampled_cache_size: 2 * numTraces, non_sampled_cache_size: 2 * numTraces },
      policies,
    };
    chain.push('tail_sampling');
  }
  chain.push('batch');

  const pipelines: Record<string, PipelineConfig> = {};
  const exporterOf = (name: string) => {
    const id = exporterIds.get(name);
    if (!id) throw new Error(`${where}: routing names backend '${name}', which is not among the backends (${[...exporterIds.keys()].join(', ')})`);
    return id;
  };
  if (!options.routing) {
    pipelines.traces = { receivers: ['otlp'], processors: chain, exporters: [...exporterIds.values()] };
  } else {
    const { attribute, routes, defaultBackends } = options.routing;
    const key = JSON.stringify(attribute);
    const values = routes.map((r) => r.value);
    if (new Set(values).size !== values.length) throw new Error(`${where}: routing lists a value of '${attribute}' twice`);
    const destinations = new Map<string, string[]>();
    routes.forEach((route) => route.backends.forEach((b) => destinations.set(b, [...(destinations.get(b) ?? []), route.value])));
    const defaults = new Set(defaultBackends);
    for (const name of new Set([...destinations.keys(), ...defaults])) {
      const own = destinations.get(name) ?? [];
      // Drop every span that is not this backend's: a route value of its own, or (for a default
      // backend) a value no route claims.
      const keep = [
        ...own.map((v) => `resource.attributes[${key}] == ${JSON.stringify(v)}`),
        ...(defaults.has(name) ? [`(resource.attributes[${key}] == nil or not (${values.map((v) => `resource.attributes[${key}] == ${JSON.stringify(v)}`).join(' or ') || 'false'}))`] : []),
      ];
      const filter = `filter/route-${name}`;
      processors[filter] = { error_mode: 'ignore', traces: { span: [`not (${keep.join(' or ')})`] } };
      const routed = [...chain];
      routed.splice(routed.indexOf('memory_limiter') + 1, 0, filter);
      pipelines[`traces/${name}`] = { receivers: ['otlp'], processors: routed, exporters: [exporterOf(name)] };
    }
  }

  const config: CollectorConfig = {
    receivers,
    processors,
    exporters,
    extensions,
    service: {
      extensions: serviceExtensions,
      pipelines,
      telemetry: {
        logs: { level: options.logLevel ?? 'info', encoding: 'json' },
        metrics: { level: 'normal', readers: [{ pull: { exporter: { prometheus: { host: '0.0.0.0', port: COLLECTOR_PORTS.metrics } } } }] },
      },
    },
  };
  assertValidCollectorConfig(config, where);
  return { config, env, secretMounts };
}

/** Requests for a collector handling a few thousand spans per second; the limit is what memory_limiter's percentage is of. */
export const DEFAULT_COLLECTOR_RESOURCES: TracingResources = { cpuRequest: '200m', memoryRequest: '256Mi', memoryLimit: '512Mi' };

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
  public readonly config: CollectorConfig;
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
    const pipeline = collectorConfig(props, `OtelCollector at '${this.node.path}'`);
    if (pipeline.config.processors?.tail_sampling && replicas > 1) {
      const why = props.sampling?.mode === 'tail' ? 'tail sampling' : "dropping health-check traces whole (healthCheckPaths: [] keeps them)";
      throw new Error(
        `OtelCollector at '${this.node.path}': ${why} decides per trace; with ${replicas} replicas traces would be split between ` +
          'collectors and decided on fragments. Run 1 replica, or put a trace-id-aware load balancer in front',
      );
    }
    this.config = pipeline.config;
    this.workload = new TracingWorkload(this, 'Workload', {
      namespace,
      name,
      component: 'collector',
      image: props.image ?? TRACING_IMAGES.collector,
      args: [`--config=${COLLECTOR_CONFIG_DIR}/${COLLECTOR_CONFIG_FILE}`],
      ports: { ...COLLECTOR_PORTS },
      config: { fileName: COLLECTOR_CONFIG_FILE, document: this.config, dir: COLLECTOR_CONFIG_DIR },
      env: pipeline.env,
      secretMounts: pipeline.secretMounts,
      health: { path: '/', port: 'health' },
      resources: props.resources ?? DEFAULT_COLLECTOR_RESOURCES,
      replicas,
      ...(replicas > 1
        ? { spread: DEFAULT_REPLICA_SPREAD }
        : { lint: singlePodLintExemptions('One collector by default: tail sampling needs every span of a trace in one collector; raise replicas (behind a trace-id-aware load balancer for tail sampling) to scale.') }),
    });
    this.otlpHttpEndpoint = `http://${serviceHost(name, namespace)}:${COLLECTOR_PORTS['otlp-http']}`;
    this.otlpGrpcAddress = `${serviceHost(name, namespace)}:${COLLECTOR_PORTS['otlp-grpc']}`;
  }
}
