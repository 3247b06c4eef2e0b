// Jaeger v2's configuration document (the OpenTelemetry Collector's shape with Jaeger's extensions):
// one builder for the all-in-one, the collector and the query roles, so the three never drift.
import { JAEGER_PORTS } from './names.ts';

/** In-memory storage: lost on restart (spec §1.5), bounded so it cannot exhaust the pod's memory. */
export interface MemoryStorage {
  readonly type: 'memory';
  readonly maxTraces: number;
}

/** Badger on a local directory (a PersistentVolumeClaim): a restart keeps traces for `spanTtl`. */
export interface BadgerStorage {
  readonly type: 'badger';
  readonly directory: string;
  /** Go duration, e.g. '168h'. */
  readonly spanTtl: string;
}

/** Elasticsearch (or OpenSearch) at external URLs; the password is read from a mounted file. */
export interface ElasticsearchStorage {
  readonly type: 'elasticsearch';
  readonly serverUrls: string[];
  readonly indexPrefix: string;
  readonly username?: string;
  readonly passwordFile?: string;
  readonly caFile?: string;
  /** The cluster's major version; Jaeger reads it from `GET /` at start when not given. */
  readonly version?: ElasticsearchVersion;
  /** `false`: the client does not probe the server URLs (`HEAD /`) before using them. */
  readonly clientHealthCheck?: boolean;
}

/** The Elasticsearch major versions Jaeger v2 has mappings for (OpenSearch counts as 7). */
export type ElasticsearchVersion = 7 | 8 | 9;

/** Cassandra at external contact points; `traceTtl` is the retention. The password comes from the environment. */
export interface CassandraStorage {
  readonly type: 'cassandra';
  readonly servers: string[];
  readonly keyspace: string;
  /** Go duration, e.g. '168h'. */
  readonly traceTtl: string;
  /** Create the keyspace and tables when missing. */
  readonly createSchema: boolean;
  readonly datacenter?: string;
  readonly username?: string;
  /** Name of the environment variable holding the password. */
  readonly passwordEnv?: string;
  readonly caFile?: string;
}

export type JaegerStorage = MemoryStorage | BadgerStorage | ElasticsearchStorage | CassandraStorage;

/** TLS on the OTLP receivers; with `clientCaFile`, clients need a certificate it signed (mutual TLS). */
export interface JaegerReceiverTls {
  readonly certFile: string;
  readonly keyFile: string;
  readonly clientCaFile?: string;
}

export interface JaegerConfigOptions {
  readonly storage: JaegerStorage;
  /**
   * Span intake. `otlp` is the spec's COLLECTOR_OTLP_ENABLED: without it only the Jaeger Thrift
   * receivers listen. Omitted for a query-only process.
   */
  readonly ingest?: { readonly otlp: boolean; readonly thrift: boolean; readonly tls?: JaegerReceiverTls };
  /** Serve the UI and API; `localOnly` binds them to 127.0.0.1 (behind an authenticating proxy). */
  readonly query?: { readonly localOnly?: boolean };
  /** service.name of Jaeger's own telemetry. */
  readonly serviceName: string;
  readonly logLevel?: 'debug' | 'info' | 'warn' | 'error';
}

const STORE = 'main';
/**
 * Spans Jaeger holds while its storage is slow or down, before it refuses more: a few seconds of a
 * busy cluster's spans, some tens of MiB.
 */
export const JAEGER_QUEUE_SPANS = 50_000;

function storageBackend(storage: JaegerStorage): Record<string, unknown> {
  switch (storage.type) {
    case 'memory':
      return { memory: { max_traces: storage.maxTraces } };
    case 'badger':
      return {
        badger: {
          directories: { keys: `${storage.directory}/keys`, values: `${storage.directory}/values` },
          ephemeral: false,
          ttl: { spans: storage.spanTtl },
        },
      };
    case 'elasticsearch':
      return {
        elasticsearch: {
          server_urls: [...storage.serverUrls],
          ...(storage.version ? { version: storage.version } : {}),
          ...(storage.clientHealthCheck === false ? { disable_health_check: true } : {}),
          indices: { index_prefix: storage.indexPrefix },
          ...(storage.username
            ? {
                auth: {
                  basic: {
                    username: storage.username,
                    ...(storage.passwordFile ? { password_file: storage.passwordFile } : {}),
                  },
                },
              }
            : {}),
          ...(storage.caFile ? { tls: { ca_file: storage.caFile } } : {}),
        },
      };
    case 'cassandra':
      return {
        cassandra: {
          schema: {
            keyspace: storage.keyspace,
            create: storage.createSchema,
            trace_ttl: storage.traceTtl,
            ...(storage.datacenter ? { datacenter: storage.datacenter } : {}),
          },
          connection: {
            servers: [...storage.servers],
            ...(storage.datacenter ? { local_dc: storage.datacenter } : {}),
            ...(storage.username
              ? { auth: { basic: { username: storage.username, password: `\${env:${storage.passwordEnv}}` } } }
              : {}),
            tls: storage.caFile ? { ca_file: storage.caFile } : { insecure: true },
          },
        },
      };
  }
}

/** Jaeger v2's configuration for the roles `options` asks for; every listener on all interfaces. */
export function jaegerConfig(options: JaegerConfigOptions): Record<string, unknown> {
  const any = (port: number) => `0.0.0.0:${port}`;
  const extensions: Record<string, unknown> = {
    healthcheckv2: {
      use_v2: true,
      http: { endpoint: any(JAEGER_PORTS.health), status: { enabled: true, path: '/status' } },
    },
    jaeger_storage: { backends: { [STORE]: storageBackend(options.storage) } },
  };
  const serviceExtensions = ['jaeger_storage', 'healthcheckv2'];
  if (options.query) {
    const host = options.query.localOnly ? '127.0.0.1' : '0.0.0.0';
    extensions.jaeger_query = {
      storage: { traces: STORE },
      http: { endpoint: `${host}:${JAEGER_PORTS.query}` },
      grpc: { endpoint: `${host}:${JAEGER_PORTS['query-grpc']}` },
      // The query service traces its own requests by OTLP to localhost:4317 (Jaeger's default):
      // only where this process receives plain OTLP there, else every export fails into the log.
      enable_tracing: Boolean(options.ingest?.otlp && !options.ingest.tls),
    };
    serviceExtensions.push('jaeger_query');
  }

  const receivers: Record<string, unknown> = {};
  let pipeline: Record<string, unknown>;
  const exporters: Record<string, unknown> = {};
  if (options.ingest) {
    const { otlp, thrift, tls } = options.ingest;
    if (!otlp && !thrift) throw new Error('jaegerConfig: ingest needs OTLP, Thrift or both');
    if (otlp) {
      const tlsConfig = tls
        ? {
            tls: {
              cert_file: tls.certFile,
              key_file: tls.keyFile,
              ...(tls.clientCaFile ? { client_ca_file: tls.clientCaFile } : {}),
              min_version: '1.2',
            },
          }
        : {};
      receivers.otlp = {
        protocols: {
          grpc: { endpoint: any(JAEGER_PORTS['otlp-grpc']), ...tlsConfig },
          http: { endpoint: any(JAEGER_PORTS['otlp-http']), ...tlsConfig },
        },
      };
    }
    if (thrift) {
      receivers.jaeger = {
        protocols: {
          thrift_http: { endpoint: any(JAEGER_PORTS['thrift-http']) },
          thrift_compact: { endpoint: any(JAEGER_PORTS['thrift-compact']) },
          thrift_binary: { endpoint: any(JAEGER_PORTS['thrift-binary']) },
        },
      };
    }
    // Batches are made in the storage exporter's queue, not by a batch processor: a batch processor
    // answers the sender before the write and drops what then fails, while a full queue refuses
    // (OTLP 503 / UNAVAILABLE) and the sender, the gateway, keeps the spans and retries. Writes that
    // fail are retried (synchronous storage: Cassandra). Elasticsearch's writer is asynchronous: it
    // holds a failed bulk request and retries it, blocking the queue's consumers while Elasticsearch
    // is down; the queue then fills and refuses.
    exporters.jaeger_storage_exporter = {
      trace_storage: STORE,
      queue: {
        enabled: true,
        sizer: 'items',
        queue_size: JAEGER_QUEUE_SPANS,
        num_consumers: 10,
        block_on_overflow: false,
        batch: { flush_timeout: '1s', min_size: 1024 },
      },
      retry_on_failure: { enabled: true },
    };
    pipeline = { receivers: Object.keys(receivers), exporters: ['jaeger_storage_exporter'] };
  } else {
    // A pipeline is mandatory; a query-only process has one that neither receives nor writes.
    receivers.nop = {};
    exporters.nop = {};
    pipeline = { receivers: ['nop'], exporters: ['nop'] };
  }

  return {
    service: {
      extensions: serviceExtensions,
      pipelines: { traces: pipeline },
      telemetry: {
        resource: { 'service.name': options.serviceName },
        metrics: {
          level: 'detailed',
          readers: [{ pull: { exporter: { prometheus: { host: '0.0.0.0', port: JAEGER_PORTS.metrics } } } }],
        },
        logs: { level: options.logLevel ?? 'info', encoding: 'json' },
      },
    },
    extensions,
    receivers,
    exporters,
  };
}
