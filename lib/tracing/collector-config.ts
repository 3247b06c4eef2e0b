// The OpenTelemetry Collector's configuration document (spec §2 "Collector configuration shape"),
// typed for the components this package's collector uses, and the checks a Collector would only
// make at start-up, made at synth instead.

/** A component's id: its type, optionally `/name` (`otlp_grpc/jaeger`). */
export type ComponentId = string;

/** Server-side TLS of a receiver; with `client_ca_file`, clients must present a certificate it signed (mutual TLS). */
export interface ServerTlsConfig {
  readonly cert_file: string;
  readonly key_file: string;
  readonly client_ca_file?: string;
  readonly min_version?: string;
}

/** Client-side TLS of an exporter. */
export interface ClientTlsConfig {
  readonly insecure?: boolean;
  readonly ca_file?: string;
  readonly cert_file?: string;
  readonly key_file?: string;
  readonly min_version?: string;
}

/** One OTLP protocol server (gRPC or HTTP). */
export interface OtlpServerConfig {
  /** host:port to listen on; pods need 0.0.0.0 (the default is localhost). */
  readonly endpoint: string;
  readonly tls?: ServerTlsConfig;
  readonly auth?: { readonly authenticator: ComponentId };
}

export interface OtlpReceiverConfig {
  readonly protocols: { readonly grpc?: OtlpServerConfig; readonly http?: OtlpServerConfig };
}

export interface MemoryLimiterConfig {
  readonly check_interval: string;
  readonly limit_percentage: number;
  readonly spike_limit_percentage: number;
}

export interface BatchConfig {
  readonly timeout: string;
  readonly send_batch_size: number;
  readonly send_batch_max_size?: number;
}

/** Drops every span matching one of the OTTL conditions. */
export interface FilterConfig {
  readonly error_mode: 'ignore' | 'silent' | 'propagate';
  readonly traces: { readonly span: string[] };
}

export interface ProbabilisticSamplerConfig {
  /** Percent of traces kept, 0..100. */
  readonly sampling_percentage: number;
  readonly mode?: 'proportional' | 'equalizing' | 'hash_seed';
}

/** A tail_sampling policy that decides on its own (allowed inside `drop`). */
export type TailSamplingLeafPolicy =
  | { readonly name: string; readonly type: 'always_sample' }
  | {
      readonly name: string;
      readonly type: 'status_code';
      readonly status_code: { readonly status_codes: ('ERROR' | 'OK' | 'UNSET')[] };
    }
  | { readonly name: string; readonly type: 'latency'; readonly latency: { readonly threshold_ms: number } }
  | {
      readonly name: string;
      readonly type: 'probabilistic';
      readonly probabilistic: { readonly sampling_percentage: number };
    }
  /** Matches a trace when any of its spans meets one of the OTTL conditions. */
  | {
      readonly name: string;
      readonly type: 'ottl_condition';
      readonly ottl_condition: {
        readonly error_mode: 'ignore' | 'silent' | 'propagate';
        readonly span: string[];
      };
    };

/**
 * tail_sampling policies this package writes. A trace is dropped when a `drop` policy matches it
 * (every one of its sub-policies does), whatever the others say; otherwise it is kept when any
 * other policy keeps it.
 */
export type TailSamplingPolicy =
  | TailSamplingLeafPolicy
  | {
      readonly name: string;
      readonly type: 'drop';
      readonly drop: { readonly drop_sub_policy: TailSamplingLeafPolicy[] };
    };

export interface TailSamplingConfig {
  /** How long after a trace's first span the decision is made. */
  readonly decision_wait: string;
  /** Decide this soon after the trace's root span arrives, when that is earlier (whole seconds; unset: wait decision_wait). */
  readonly decision_wait_after_root_received?: string;
  /** Traces held in memory while waiting. */
  readonly num_traces: number;
  readonly expected_new_traces_per_sec?: number;
  /**
   * Trace ids whose decision is remembered after their spans leave memory, so spans arriving
   * after the decision follow it instead of starting a new trace.
   */
  readonly decision_cache?: { readonly sampled_cache_size: number; readonly non_sampled_cache_size: number };
  readonly policies: TailSamplingPolicy[];
}

export interface AttributesConfig {
  readonly actions: {
    readonly key: string;
    readonly action: 'insert' | 'update' | 'upsert' | 'delete';
    readonly value?: string;
  }[];
}

/** otlp_grpc (endpoint host:port) and otlp_http (endpoint a base URL). */
export interface OtlpExporterConfig {
  readonly endpoint: string;
  readonly tls?: ClientTlsConfig;
  readonly auth?: { readonly authenticator: ComponentId };
  /** In memory; `sizer` is what queue_size counts (requests, spans or bytes). */
  readonly sending_queue?: {
    readonly enabled?: boolean;
    readonly sizer?: 'requests' | 'items' | 'bytes';
    readonly queue_size?: number;
    readonly num_consumers?: number;
  };
  /** Exponential backoff from initial_interval to max_interval; dropped after max_elapsed_time. */
  readonly retry_on_failure?: {
    readonly enabled?: boolean;
    readonly initial_interval?: string;
    readonly max_interval?: string;
    readonly max_elapsed_time?: string;
  };
}

export interface DebugExporterConfig {
  readonly verbosity: 'basic' | 'normal' | 'detailed';
}

export interface HealthCheckConfig {
  readonly endpoint: string;
  readonly path?: string;
}

/** bearertokenauth: adds `Authorization: Bearer <token>` as a client, checks it as a server. */
export interface BearerTokenAuthConfig {
  readonly token?: string;
  readonly filename?: string;
  readonly scheme?: string;
}

/** basicauth as a client (`client_auth`) or as a server (`htpasswd`). */
export interface BasicAuthConfig {
  readonly client_auth?: { readonly username: string; readonly password: string };
  readonly htpasswd?: { readonly file?: string; readonly inline?: string };
}

/** oauth2client: the OAuth2 client-credentials grant. */
export interface OAuth2ClientConfig {
  readonly client_id?: string;
  readonly client_id_file?: string;
  readonly client_secret?: string;
  readonly client_secret_file?: string;
  readonly token_url: string;
  readonly scopes?: string[];
  readonly endpoint_params?: Record<string, string>;
}

/** oidc as a server authenticator: tokens must be issued by `issuer_url` for `audience`. */
export interface OidcConfig {
  readonly issuer_url: string;
  readonly audience: string;
  readonly issuer_ca_path?: string;
  readonly username_claim?: string;
}

export interface PipelineConfig {
  readonly receivers: ComponentId[];
  /** Applied in list order (spec §2). */
  readonly processors?: ComponentId[];
  readonly exporters: ComponentId[];
}

export interface TelemetryConfig {
  readonly logs?: { readonly level?: 'debug' | 'info' | 'warn' | 'error'; readonly encoding?: 'json' | 'console' };
  readonly metrics?: {
    readonly level?: 'none' | 'basic' | 'normal' | 'detailed';
    readonly readers?: {
      readonly pull: { readonly exporter: { readonly prometheus: { readonly host: string; readonly port: number } } };
    }[];
  };
  readonly resource?: Record<string, string>;
}

export type ReceiverConfig = OtlpReceiverConfig;
export type ProcessorConfig =
  | MemoryLimiterConfig
  | BatchConfig
  | FilterConfig
  | ProbabilisticSamplerConfig
  | TailSamplingConfig
  | AttributesConfig;
export type ExporterConfig = OtlpExporterConfig | DebugExporterConfig;
export type ExtensionConfig =
  | HealthCheckConfig
  | BearerTokenAuthConfig
  | BasicAuthConfig
  | OAuth2ClientConfig
  | OidcConfig;

/** One configuration document, as `otelcol --config` reads it. */
export interface CollectorConfig {
  readonly receivers: Record<ComponentId, ReceiverConfig>;
  readonly processors?: Record<ComponentId, ProcessorConfig>;
  readonly exporters: Record<ComponentId, ExporterConfig>;
  readonly extensions?: Record<ComponentId, ExtensionConfig>;
  readonly service: {
    readonly extensions?: ComponentId[];
    readonly pipelines: Record<string, PipelineConfig>;
    readonly telemetry?: TelemetryConfig;
  };
}

/**
 * Component types each section may name: the ones the typed model covers, which are exactly what
 * scripts/otelcol-builder.yaml builds (a unit test keeps the two equal).
 */
export const COLLECTOR_COMPONENT_TYPES = {
  receivers: ['otlp'],
  processors: ['memory_limiter', 'batch', 'filter', 'probabilistic_sampler', 'tail_sampling', 'attributes'],
  exporters: ['otlp_grpc', 'otlp_http', 'debug'],
  extensions: ['health_check', 'bearertokenauth', 'basicauth', 'oauth2client', 'oidc'],
} as const;

type Section = keyof typeof COLLECTOR_COMPONENT_TYPES;

/** The type part of a component id: `otlp_grpc/jaeger` → `otlp_grpc`. */
export function componentType(id: ComponentId): string {
  return id.split('/', 1)[0];
}

const DURATION = /^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$/;
const HOST_PORT = /^(\[[0-9a-fA-F:]+\]|[A-Za-z0-9.-]+|\$\{env:[A-Z0-9_]+\}):(\d{1,5})$/;

/**
 * Every problem `otelcol validate` would report for these reasons, and a few it would only find at
 * run time, each as one sentence naming the component and what to change. Empty when the config is
 * sound.
 */
export function collectorConfigProblems(config: CollectorConfig): string[] {
  const problems: string[] = [];
  const sections: Record<Section, Record<string, unknown>> = {
    receivers: config.receivers,
    processors: config.processors ?? {},
    exporters: config.exporters,
    extensions: config.extensions ?? {},
  };
  for (const [section, components] of Object.entries(sections) as [Section, Record<string, unknown>][]) {
    const known: readonly string[] = COLLECTOR_COMPONENT_TYPES[section];
    for (const id of Object.keys(components)) {
      if (!/^[a-z0-9_]+(\/[A-Za-z0-9_.-]+)?$/.test(id))
        problems.push(`${section}: '${id}' is not a component id (type or type/name, e.g. otlp_grpc/jaeger)`);
      else if (!known.includes(componentType(id)))
        problems.push(
          `${section}: '${id}' is of type '${componentType(id)}', which this collector does not have (it has ${known.join(', ')})`,
        );
    }
  }

  const pipelines = Object.entries(config.service.pipelines);
  if (pipelines.length === 0) problems.push('service.pipelines: define at least one pipeline');
  const used = { receivers: new Set<string>(), processors: new Set<string>(), exporters: new Set<string>() };
  for (const [name, pipeline] of pipelines) {
    if (componentType(name) !== 'traces')
      problems.push(
        `service.pipelines: '${name}' is not a traces pipeline (traces or traces/<name>); this collector only handles traces`,
      );
    for (const section of ['receivers', 'processors', 'exporters'] as const) {
      const ids = pipeline[section] ?? [];
      if (section !== 'processors' && ids.length === 0)
        problems.push(`service.pipelines.${name}.${section}: name at least one`);
      const seen = new Set<string>();
      for (const id of ids) {
        used[section].add(id);
        if (seen.has(id)) problems.push(`service.pipelines.${name}.${section}: '${id}' is listed twice`);
        seen.add(id);
        if (!(id in sections[section])) {
          const defined = Object.keys(sections[section]);
          problems.push(
            `service.pipelines.${name}.${section}: '${id}' is not defined under ${section} (defined: ${defined.length ? defined.join(', ') : 'none'})`,
          );
        }
      }
    }
  }
  for (const id of config.service.extensions ?? []) {
    if (!(id in sections.extensions)) problems.push(`service.extensions: '${id}' is not defined under extensions`);
  }

  for (const [id, receiver] of Object.entries(config.receivers)) {
    const protocols = Object.entries(receiver.protocols ?? {}).filter(([, server]) => server !== undefined) as [
      string,
      OtlpServerConfig,
    ][];
    if (protocols.length === 0) problems.push(`receivers.${id}: enable protocols.grpc, protocols.http or both`);
    for (const [protocol, server] of protocols) {
      const at = `receivers.${id}.protocols.${protocol}`;
      if (!HOST_PORT.test(server.endpoint))
        problems.push(`${at}.endpoint: '${server.endpoint}' is not host:port (a pod needs 0.0.0.0:<port>)`);
      if (server.auth && !(server.auth.authenticator in sections.extensions))
        problems.push(`${at}.auth.authenticator: '${server.auth.authenticator}' is not defined under extensions`);
      if (server.auth && !(config.service.extensions ?? []).includes(server.auth.authenticator))
        problems.push(
          `${at}.auth.authenticator: '${server.auth.authenticator}' must also be listed in service.extensions`,
        );
      if (server.tls?.client_ca_file !== undefined && !server.tls.cert_file)
        problems.push(`${at}.tls: client_ca_file (mutual TLS) needs the server's cert_file and key_file`);
    }
  }

  for (const [id, processor] of Object.entries(config.processors ?? {})) {
    const type = componentType(id);
    const at = `processors.${id}`;
    const percentage = (value: number, key: string) => {
      if (!(Number.isFinite(value) && value >= 0 && value <= 100))
        problems.push(`${at}.${key}: ${value} is outside 0..100 (a percentage of traces kept)`);
    };
    if (type === 'probabilistic_sampler')
      percentage((processor as ProbabilisticSamplerConfig).sampling_percentage, 'sampling_percentage');
    if (type === 'memory_limiter') {
      const m = processor as MemoryLimiterConfig;
      percentage(m.limit_percentage, 'limit_percentage');
      percentage(m.spike_limit_percentage, 'spike_limit_percentage');
      if (m.spike_limit_percentage >= m.limit_percentage)
        problems.push(
          `${at}: spike_limit_percentage (${m.spike_limit_percentage}) must be below limit_percentage (${m.limit_percentage})`,
        );
      if (!DURATION.test(m.check_interval))
        problems.push(`${at}.check_interval: '${m.check_interval}' is not a duration such as 1s`);
    }
    if (type === 'batch') {
      const b = processor as BatchConfig;
      if (!DURATION.test(b.timeout))
        problems.push(`${at}.timeout: '${b.timeout}' is not a duration such as 1s or 200ms`);
      if (!(Number.isInteger(b.send_batch_size) && b.send_batch_size > 0))
        problems.push(`${at}.send_batch_size: ${b.send_batch_size} is not a positive whole number`);
      if (b.send_batch_max_size !== undefined && b.send_batch_max_size < b.send_batch_size)
        problems.push(
          `${at}.send_batch_max_size: ${b.send_batch_max_size} is below send_batch_size (${b.send_batch_size})`,
        );
    }
    if (type === 'tail_sampling') {
      const t = processor as TailSamplingConfig;
      if (!DURATION.test(t.decision_wait))
        problems.push(`${at}.decision_wait: '${t.decision_wait}' is not a duration such as 10s`);
      if (
        t.decision_wait_after_root_received !== undefined &&
        !/^[1-9]\d*s$/.test(t.decision_wait_after_root_received)
      ) {
        problems.push(
          `${at}.decision_wait_after_root_received: '${t.decision_wait_after_root_received}' is not a whole number of seconds such as 1s (the processor decides in 1 s ticks)`,
        );
      }
      if (!(Number.isInteger(t.num_traces) && t.num_traces > 0))
        problems.push(`${at}.num_traces: ${t.num_traces} is not a positive whole number`);
      for (const [key, size] of Object.entries(t.decision_cache ?? {})) {
        if (!(Number.isInteger(size) && size > 0))
          problems.push(`${at}.decision_cache.${key}: ${size} is not a positive whole number`);
      }
      if (!t.policies.some((policy) => policy.type !== 'drop'))
        problems.push(
          `${at}.policies: name at least one policy that keeps traces (drop policies only discard), or every trace is dropped`,
        );
      const leaf = (policy: TailSamplingLeafPolicy, path: string) => {
        if (policy.type === 'probabilistic')
          percentage(policy.probabilistic.sampling_percentage, `${path}.probabilistic.sampling_percentage`);
        if (policy.type === 'latency' && !(policy.latency.threshold_ms > 0))
          problems.push(`${at}.${path}.latency.threshold_ms: ${policy.latency.threshold_ms} must be above 0`);
        if (policy.type === 'ottl_condition' && policy.ottl_condition.span.length === 0)
          problems.push(`${at}.${path}.ottl_condition.span: name at least one condition`);
      };
      for (const policy of t.policies) {
        if (policy.type !== 'drop') leaf(policy, `policies.${policy.name}`);
        else if (policy.drop.drop_sub_policy.length === 0)
          problems.push(
            `${at}.policies.${policy.name}.drop.drop_sub_policy: name at least one policy (the trace is dropped when all of them match)`,
          );
        else for (const sub of policy.drop.drop_sub_policy) leaf(sub, `policies.${policy.name}.drop.${sub.name}`);
      }
    }
    if (type === 'filter' && (processor as FilterConfig).traces.span.length === 0)
      problems.push(`${at}.traces.span: name at least one condition`);
  }
  for (const [section, ids] of Object.entries(used)) {
    for (const id of Object.keys(sections[section as Section])) {
      if (!ids.has(id)) problems.push(`${section}.${id}: defined but in no pipeline (remove it, or add it to one)`);
    }
  }

  for (const [id, exporter] of Object.entries(config.exporters)) {
    const type = componentType(id);
    const e = exporter as OtlpExporterConfig;
    if (type === 'otlp_grpc' && !HOST_PORT.test(e.endpoint))
      problems.push(`exporters.${id}.endpoint: '${e.endpoint}' is not host:port (gRPC exporters take no scheme)`);
    if (type === 'otlp_http' && !/^https?:\/\/[^/]+/.test(e.endpoint))
      problems.push(`exporters.${id}.endpoint: '${e.endpoint}' is not an http(s):// base URL`);
    if ((type === 'otlp_grpc' || type === 'otlp_http') && e.auth) {
      if (!(e.auth.authenticator in sections.extensions))
        problems.push(`exporters.${id}.auth.authenticator: '${e.auth.authenticator}' is not defined under extensions`);
      else if (!(config.service.extensions ?? []).includes(e.auth.authenticator))
        problems.push(
          `exporters.${id}.auth.authenticator: '${e.auth.authenticator}' must also be listed in service.extensions`,
        );
    }
  }
  return problems;
}

/** Throws one error listing every problem, so a user fixes them in one pass. */
export function assertValidCollectorConfig(config: CollectorConfig, where: string): void {
  const problems = collectorConfigProblems(config);
  if (problems.length > 0) {
    throw new Error(`${where}: the collector configuration is invalid:\n  - ${problems.join('\n  - ')}`);
  }
}
