import { k8s } from 'cdk8s-plus-34';
import { Construct } from 'constructs';
import { lintAnnotations, WORKLOAD_LINT_EXEMPTIONS } from '../lint.ts';
import { addressPort, urlPort } from '../network-policy.ts';
import { DEFAULT_REPLICA_SPREAD, type ReplicaSpread } from '../scheduling.ts';
import { restrictedContainerSecurityContext, restrictedPodSecurityContext } from '../security.ts';
import { JAEGER_CONFIG_DIR, JAEGER_CONFIG_FILE } from './jaeger-all-in-one.ts';
import {
  type ElasticsearchVersion,
  type JaegerReceiverTls,
  type JaegerStorage,
  jaegerConfig,
} from './jaeger-config.ts';
import { JAEGER_PORTS, serviceHost, TRACING_IMAGES, TRACING_NAMESPACE, tracingLabels } from './names.ts';
import { OAUTH2_PROXY_PORT, oauth2ProxySidecar, oidcIssuerPort, type QueryOidcProps } from './oauth2-proxy.ts';
import { type SecretMount, type TracingResources, TracingWorkload } from './tracing-workload.ts';

/** A Secret with keys `username` and `password`. */
export interface CredentialsSecret {
  readonly secretName: string;
}

export interface ElasticsearchProps {
  /** URLs of the cluster's HTTP endpoints. */
  readonly serverUrls: string[];
  /** @default 'jaeger' */
  readonly indexPrefix?: string;
  /** @default no authentication */
  readonly credentials?: CredentialsSecret;
  /** A Secret with `ca.crt` to verify https server URLs. @default the system's roots */
  readonly caSecretName?: string;
  /**
   * The cluster's major version (7 for OpenSearch). Jaeger otherwise asks the cluster at start
   * (`GET /`, which needs the `monitor` cluster privilege and a node that serves that root endpoint);
   * with it, Jaeger never needs the root endpoint. 9 takes 8's mappings.
   * @default asked of the cluster at start
   */
  readonly version?: number;
  /**
   * Whether Jaeger's Elasticsearch client probes each server URL (`HEAD /`) before it uses it, and
   * fails to start while none answers. Behind one Kubernetes Service URL, which routes only to ready
   * pods, the probe adds nothing. Its bulk writer probes `HEAD /` regardless after a lost connection,
   * and writes again only once a node answers 2xx: the root endpoint must stay reachable.
   * @default true (Jaeger's default)
   */
  readonly clientHealthCheck?: boolean;
  /** Days of indices the daily index cleaner keeps. @default 7 */
  readonly retentionDays?: number;
  /** When the index cleaner runs (cron, UTC). @default '55 23 * * *' */
  readonly indexCleanerSchedule?: string;
}

export interface CassandraProps {
  /** Contact points, host or host:port. */
  readonly servers: string[];
  /** @default 'jaeger_v1_dc1' */
  readonly keyspace?: string;
  /** @default the driver's choice */
  readonly datacenter?: string;
  /** @default no authentication */
  readonly credentials?: CredentialsSecret;
  /** A Secret with `ca.crt` for TLS to Cassandra. @default plaintext */
  readonly caSecretName?: string;
  /** How long traces live (Cassandra TTL, Go duration). @default '168h' (7 days) */
  readonly traceTtl?: string;
  /** The collector and query create the keyspace and tables when missing. @default true */
  readonly createSchema?: boolean;
}

export const DEFAULT_JAEGER_COLLECTOR_RESOURCES: TracingResources = {
  cpuRequest: '250m',
  memoryRequest: '256Mi',
  memoryLimit: '1Gi',
};
export const DEFAULT_JAEGER_QUERY_RESOURCES: TracingResources = {
  cpuRequest: '100m',
  memoryRequest: '128Mi',
  memoryLimit: '512Mi',
};

/** JaegerProduction's settings but its namespace, which a trace stack gives. */
export interface JaegerProductionOptions {
  /** Prefix of every object's name: `<name>-collector`, `<name>-query`. @default 'jaeger' */
  readonly name?: string;
  readonly storage: ProductionStorage;
  /** @default 'jaegertracing/jaeger:2.13.0' */
  readonly image?: string;
  /** The spec's COLLECTOR_OTLP_ENABLED. @default true */
  readonly otlpEnabled?: boolean;
  /** The collector scales between these on CPU (HorizontalPodAutoscaler). @default { min: 2, max: 10, targetCpuUtilization: 70 } */
  readonly collectorScaling?: CollectorScaling;
  /**
   * TLS on the collector's OTLP receivers from a Secret with `tls.crt`, `tls.key` and `ca.crt`;
   * with `requireClientCertificate` (the default) only clients with a certificate signed by `ca.crt`
   * connect (mutual TLS).
   * @default plaintext
   */
  readonly collectorTls?: JaegerCollectorTls;
  /** @default no authentication in front of the UI */
  readonly oidc?: QueryOidcProps;
  /** @default 2 */
  readonly queryReplicas?: number;
  /**
   * How the collector's and the query's replicas spread: by default each prefers nodes and
   * zones without another replica of its own, and never stays Pending for it.
   * @default DEFAULT_REPLICA_SPREAD: { acrossNodes: 'preferred', acrossZones: 'preferred' }
   */
  readonly spread?: ReplicaSpread;
  /** @default DEFAULT_JAEGER_COLLECTOR_RESOURCES */
  readonly collectorResources?: TracingResources;
  /** @default DEFAULT_JAEGER_QUERY_RESOURCES */
  readonly queryResources?: TracingResources;
  /** @default 'jaegertracing/jaeger-es-index-cleaner:1.76.0' */
  readonly indexCleanerImage?: string;
  /** @default 'quay.io/oauth2-proxy/oauth2-proxy:v7.15.6' */
  readonly oauth2ProxyImage?: string;
}

export interface JaegerProductionProps extends JaegerProductionOptions {
  /** @default 'tracing' */
  readonly namespace?: string;
}

/** The Jaeger collector's HorizontalPodAutoscaler. */
export interface CollectorScaling {
  readonly min: number;
  readonly max: number;
  /** Average CPU utilization the autoscaler aims at, in percent of the request. */
  readonly targetCpuUtilization: number;
}

/** TLS on the Jaeger collector's OTLP receivers. */
export interface JaegerCollectorTls {
  /** A Secret with `tls.crt`, `tls.key` and `ca.crt`. */
  readonly secretName: string;
  /** Only clients with a certificate signed by `ca.crt` connect (mutual TLS). @default true */
  readonly requireClientCertificate?: boolean;
}

/** Where JaegerProduction keeps traces: Elasticsearch (or OpenSearch) or Cassandra, both run by the platform. */
export class ProductionStorage {
  /** Elasticsearch or OpenSearch at `serverUrls`, with a daily index cleaner. */
  public static elasticsearch(props: ElasticsearchProps): ProductionStorage {
    return new ProductionStorage({ type: 'elasticsearch', ...props });
  }

  /** Cassandra at `servers`; `traceTtl` is the retention. */
  public static cassandra(props: CassandraProps): ProductionStorage {
    return new ProductionStorage({ type: 'cassandra', ...props });
  }

  /** @internal the settings, by type */
  public readonly _settings:
    | ({ readonly type: 'elasticsearch' } & ElasticsearchProps)
    | ({ readonly type: 'cassandra' } & CassandraProps);

  private constructor(settings: ProductionStorage['_settings']) {
    this._settings = settings;
  }

  /** `elasticsearch` or `cassandra`. */
  public get type(): string {
    return this._settings.type;
  }
}

const STORAGE_DIR = '/etc/jaeger/storage';
const TLS_DIR = '/etc/jaeger/tls';

/**
 * Jaeger v2 for production (spec §1.6): the collector and query as separate Deployments on
 * Elasticsearch or Cassandra at external endpoints, credentials from Secrets only, 7-day
 * retention by default, a collector that scales horizontally, and as options mutual TLS on the
 * collector's OTLP receivers and OIDC in front of the UI.
 */
export class JaegerProduction extends Construct {
  public readonly collector: TracingWorkload;
  public readonly query: TracingWorkload;
  public readonly collectorConfig: Record<string, unknown>;
  public readonly queryConfig: Record<string, unknown>;
  public readonly autoscaler: k8s.KubeHorizontalPodAutoscalerV2;
  /** When the collector runs at least 2 replicas: its disruption budget. */
  public readonly collectorDisruptionBudget?: k8s.KubePodDisruptionBudget;
  /** When the query runs at least 2 replicas: its disruption budget. */
  public readonly queryDisruptionBudget?: k8s.KubePodDisruptionBudget;
  public readonly indexCleaner?: k8s.KubeCronJob;
  /** With `oidc`: the port of the issuer oauth2-proxy reaches, for the query pod's NetworkPolicy. */
  public readonly oidcIssuerPort?: number;
  /** The ports of the storage's endpoints (server URLs, contact points), for the NetworkPolicies of the pods that reach it. */
  public readonly storagePorts: number[];
  /** `<name>-collector.<namespace>.svc:4317`. */
  public readonly otlpGrpcAddress: string;

  constructor(scope: Construct, id: string, props: JaegerProductionProps) {
    super(scope, id);
    const where = `JaegerProduction at '${this.node.path}'`;
    const namespace = props.namespace ?? TRACING_NAMESPACE;
    const name = props.name ?? 'jaeger';
    const image = props.image ?? TRACING_IMAGES.jaeger;
    const otlp = props.otlpEnabled ?? true;
    const scaling = props.collectorScaling ?? { min: 2, max: 10, targetCpuUtilization: 70 };
    if (!(Number.isInteger(scaling.min) && scaling.min >= 1 && scaling.max >= scaling.min)) {
      throw new Error(`${where}: collectorScaling needs 1 <= min <= max, got min ${scaling.min}, max ${scaling.max}`);
    }

    // Storage, and what each pod needs for it: env vars from the Secret, mounted files.
    const storageEnv: k8s.EnvVar[] = [];
    const storageMounts: SecretMount[] = [];
    const s = props.storage._settings;
    const credentialEnv = (variable: string, key: 'username' | 'password') => ({
      name: variable,
      valueFrom: { secretKeyRef: { name: s.credentials!.secretName, key } },
    });
    if (s.caSecretName)
      storageMounts.push({ secretName: s.caSecretName, mountPath: `${STORAGE_DIR}/ca`, keys: ['ca.crt'] });
    const caFile = s.caSecretName ? `${STORAGE_DIR}/ca/ca.crt` : undefined;
    // The same storage settings for collector and query.
    let storage: JaegerStorage;
    if (s.type === 'elasticsearch') {
      if (s.serverUrls.length === 0) throw new Error(`${where}: storage.serverUrls needs at least one URL`);
      if (s.version !== undefined && ![7, 8, 9].includes(s.version))
        throw new Error(`${where}: storage.version must be 7 (or OpenSearch), 8 or 9, got ${s.version}`);
      for (const url of s.serverUrls)
        if (!/^https?:\/\/[^/]+/.test(url))
          throw new Error(`${where}: storage.serverUrls: '${url}' is not an http(s) URL`);
      if (s.credentials) {
        storageEnv.push(credentialEnv('ES_USERNAME', 'username'));
        // The password as a file Jaeger re-reads when the Secret changes, not an environment variable.
        storageMounts.push({
          secretName: s.credentials.secretName,
          mountPath: `${STORAGE_DIR}/credentials`,
          keys: ['password'],
        });
      }
      storage = {
        type: 'elasticsearch',
        serverUrls: s.serverUrls,
        indexPrefix: s.indexPrefix ?? 'jaeger',
        ...(s.version ? { version: s.version as ElasticsearchVersion } : {}),
        ...(s.clientHealthCheck === false ? { clientHealthCheck: false } : {}),
        ...(s.credentials
          ? { username: '${env:ES_USERNAME}', passwordFile: `${STORAGE_DIR}/credentials/password` }
          : {}),
        ...(caFile ? { caFile } : {}),
      };
    } else {
      if (s.servers.length === 0) throw new Error(`${where}: storage.servers needs at least one contact point`);
      const traceTtl = s.traceTtl ?? '168h';
      if (!/^(\d+(h|m|s))+$/.test(traceTtl))
        throw new Error(`${where}: storage.traceTtl must be a Go duration such as 168h, got '${traceTtl}'`);
      if (s.credentials)
        storageEnv.push(
          credentialEnv('CASSANDRA_USERNAME', 'username'),
          credentialEnv('CASSANDRA_PASSWORD', 'password'),
        );
      storage = {
        type: 'cassandra',
        servers: s.servers,
        keyspace: s.keyspace ?? 'jaeger_v1_dc1',
        traceTtl,
        // Query too: it exits when its tables are missing, so on a fresh keyspace it would restart
        // until a collector had made them. Jaeger's statements are all IF NOT EXISTS, and the
        // collector's replicas run them side by side already.
        createSchema: s.createSchema ?? true,
        ...(s.datacenter ? { datacenter: s.datacenter } : {}),
        ...(s.credentials ? { username: '${env:CASSANDRA_USERNAME}', passwordEnv: 'CASSANDRA_PASSWORD' } : {}),
        ...(caFile ? { caFile } : {}),
      };
    }

    // Collector: intake and writes, no UI.
    let tls: JaegerReceiverTls | undefined;
    const collectorMounts = [...storageMounts];
    if (props.collectorTls) {
      const mutual = props.collectorTls.requireClientCertificate ?? true;
      collectorMounts.push({
        secretName: props.collectorTls.secretName,
        mountPath: TLS_DIR,
        keys: mutual ? ['tls.crt', 'tls.key', 'ca.crt'] : ['tls.crt', 'tls.key'],
      });
      tls = {
        certFile: `${TLS_DIR}/tls.crt`,
        keyFile: `${TLS_DIR}/tls.key`,
        ...(mutual ? { clientCaFile: `${TLS_DIR}/ca.crt` } : {}),
      };
    }
    this.collectorConfig = jaegerConfig({
      storage,
      ingest: { otlp, thrift: true, ...(tls ? { tls } : {}) },
      serviceName: `${name}-collector`,
    });
    const p = JAEGER_PORTS;
    this.collector = new TracingWorkload(this, 'Collector', {
      namespace,
      name: `${name}-collector`,
      component: 'collector',
      image,
      ports: {
        ...(otlp ? { 'otlp-grpc': p['otlp-grpc'], 'otlp-http': p['otlp-http'] } : {}),
        'thrift-http': p['thrift-http'],
        'thrift-compact': p['thrift-compact'],
        'thrift-binary': p['thrift-binary'],
        health: p.health,
        metrics: p.metrics,
      },
      config: { fileName: JAEGER_CONFIG_FILE, document: this.collectorConfig, dir: JAEGER_CONFIG_DIR },
      env: storageEnv,
      secretMounts: collectorMounts,
      health: { path: '/status', port: 'health' },
      resources: props.collectorResources ?? DEFAULT_JAEGER_COLLECTOR_RESOURCES,
      replicas: scaling.min,
      spread: props.spread ?? DEFAULT_REPLICA_SPREAD,
    });
    const collectorName = `${name}-collector`;
    this.autoscaler = new k8s.KubeHorizontalPodAutoscalerV2(this, 'CollectorAutoscaler', {
      metadata: { name: collectorName, namespace, labels: tracingLabels(collectorName, 'collector') },
      spec: {
        scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: collectorName },
        minReplicas: scaling.min,
        maxReplicas: scaling.max,
        metrics: [
          {
            type: 'Resource',
            resource: {
              name: 'cpu',
              target: { type: 'Utilization', averageUtilization: scaling.targetCpuUtilization },
            },
          },
        ],
      },
    });
    if (scaling.min > 1)
      this.collectorDisruptionBudget = disruptionBudget(this, 'CollectorDisruptionBudget', this.collector, namespace);

    // Query: the UI and API, reading the same storage; behind oauth2-proxy when OIDC is on.
    const oidc = props.oidc;
    this.oidcIssuerPort = oidc ? oidcIssuerPort(oidc) : undefined;
    const queryReplicas = props.queryReplicas ?? 2;
    if (!Number.isInteger(queryReplicas) || queryReplicas < 1)
      throw new Error(`${where}: queryReplicas must be a whole number >= 1, got ${queryReplicas}`);
    this.queryConfig = jaegerConfig({
      storage,
      query: { localOnly: oidc !== undefined },
      serviceName: `${name}-query`,
    });
    const proxy = oidc && oauth2ProxySidecar(where, oidc, `http://127.0.0.1:${p.query}`, props.oauth2ProxyImage);
    this.query = new TracingWorkload(this, 'Query', {
      namespace,
      name: `${name}-query`,
      component: 'query',
      image,
      // With OIDC, Jaeger's own UI port is reachable only through the proxy, which takes its name.
      ports: oidc
        ? { health: p.health, metrics: p.metrics }
        : { query: p.query, 'query-grpc': p['query-grpc'], health: p.health, metrics: p.metrics },
      ...(proxy
        ? {
            sidecars: [proxy.container],
            sidecarVolumes: proxy.volumes,
            sidecarPorts: { query: OAUTH2_PROXY_PORT },
            servicePorts: ['metrics'],
          }
        : {}),
      config: { fileName: JAEGER_CONFIG_FILE, document: this.queryConfig, dir: JAEGER_CONFIG_DIR },
      env: storageEnv,
      secretMounts: storageMounts,
      health: { path: '/status', port: 'health' },
      resources: props.queryResources ?? DEFAULT_JAEGER_QUERY_RESOURCES,
      replicas: queryReplicas,
      spread: props.spread ?? DEFAULT_REPLICA_SPREAD,
      ...(queryReplicas === 1
        ? {
            lint: [
              {
                polaris: 'deploymentMissingReplicas',
                reason: 'queryReplicas is 1 by choice: the UI is down while its pod restarts.',
              },
              {
                polaris: 'missingPodDisruptionBudget',
                reason: 'One pod: a disruption budget could only block every node drain or allow everything.',
              },
            ],
          }
        : {}),
    });
    if (queryReplicas > 1)
      this.queryDisruptionBudget = disruptionBudget(this, 'QueryDisruptionBudget', this.query, namespace);

    if (s.type === 'elasticsearch') {
      const days = s.retentionDays ?? 7;
      if (!Number.isInteger(days) || days < 1)
        throw new Error(`${where}: storage.retentionDays must be a whole number of days >= 1, got ${days}`);
      const cleanerName = `${name}-es-index-cleaner`;
      const labels = tracingLabels(cleanerName, 'index-cleaner');
      const env: k8s.EnvVar[] = [
        { name: 'INDEX_PREFIX', value: s.indexPrefix ?? 'jaeger' },
        ...(s.credentials ? [credentialEnv('ES_USERNAME', 'username'), credentialEnv('ES_PASSWORD', 'password')] : []),
        ...(caFile
          ? [
              { name: 'ES_TLS_ENABLED', value: 'true' },
              { name: 'ES_TLS_CA', value: caFile },
            ]
          : []),
      ];
      const q = k8s.Quantity.fromString;
      this.indexCleaner = new k8s.KubeCronJob(this, 'IndexCleaner', {
        metadata: {
          name: cleanerName,
          namespace,
          labels,
          annotations: lintAnnotations([
            ...WORKLOAD_LINT_EXEMPTIONS,
            {
              polaris: 'missingNetworkPolicy',
              reason:
                'Its NetworkPolicy has no ingress rule on purpose: the job serves nothing, so no traffic may reach it.',
            },
          ]),
        },
        spec: {
          schedule: s.indexCleanerSchedule ?? '55 23 * * *',
          timeZone: 'Etc/UTC',
          concurrencyPolicy: 'Forbid',
          // The CronJob keeps the last successful run and the last three failed ones for
          // inspection, and deletes older ones. No ttlSecondsAfterFinished on its Jobs: a TTL
          // would delete them behind these limits' back (a day's TTL leaves at most one failed
          // run of a daily job), which is why kube-linter's job-ttl-seconds-after-finished flags
          // a TTL on a CronJob's Jobs and asks for one only on standalone Jobs.
          successfulJobsHistoryLimit: 1,
          failedJobsHistoryLimit: 3,
          jobTemplate: {
            spec: {
              backoffLimit: 3,
              template: {
                metadata: { labels },
                spec: {
                  restartPolicy: 'OnFailure',
                  automountServiceAccountToken: false,
                  securityContext: restrictedPodSecurityContext(),
                  ...(caFile
                    ? {
                        volumes: [
                          {
                            name: 'ca',
                            secret: {
                              secretName: s.caSecretName!,
                              defaultMode: 0o440,
                              items: [{ key: 'ca.crt', path: 'ca.crt' }],
                            },
                          },
                        ],
                      }
                    : {}),
                  containers: [
                    {
                      name: 'index-cleaner',
                      image: props.indexCleanerImage ?? TRACING_IMAGES.esIndexCleaner,
                      imagePullPolicy: 'IfNotPresent',
                      // Deletes the daily indices older than `days` days.
                      args: [String(days), s.serverUrls[0]],
                      env,
                      resources: { requests: { cpu: q('10m'), memory: q('32Mi') }, limits: { memory: q('128Mi') } },
                      securityContext: restrictedContainerSecurityContext(),
                      ...(caFile
                        ? { volumeMounts: [{ name: 'ca', mountPath: `${STORAGE_DIR}/ca`, readOnly: true }] }
                        : {}),
                    },
                  ],
                },
              },
            },
          },
        },
      });
    }
    this.otlpGrpcAddress = `${serviceHost(collectorName, namespace)}:${p['otlp-grpc']}`;
    this.storagePorts = [
      ...new Set(
        s.type === 'elasticsearch'
          ? s.serverUrls.map(urlPort)
          : s.servers.map((server) => addressPort(server, CASSANDRA_PORT)),
      ),
    ];
  }
}

/** Cassandra's native protocol port, where a contact point names none. */
const CASSANDRA_PORT = 9042;

/**
 * A budget letting one pod of `workload` go at a time in a drain. Pods that are not Ready may go
 * regardless (unhealthyPodEvictionPolicy AlwaysAllow, the value Kubernetes recommends): they
 * serve nothing, and under the default IfHealthyBudget a crash-looping pod would block the drain
 * of its node for as long as the budget is unmet.
 */
function disruptionBudget(
  scope: Construct,
  id: string,
  workload: TracingWorkload,
  namespace: string,
): k8s.KubePodDisruptionBudget {
  const name = workload.deployment.name;
  return new k8s.KubePodDisruptionBudget(scope, id, {
    metadata: { name, namespace, labels: tracingLabels(name, workload.selector['app.kubernetes.io/component']) },
    // By name alone, which is the workload's own (Polaris counts a budget matching any one label of a pod as that pod's).
    spec: {
      maxUnavailable: k8s.IntOrString.fromNumber(1),
      unhealthyPodEvictionPolicy: 'AlwaysAllow',
      selector: { matchLabels: { 'app.kubernetes.io/name': name } },
    },
  });
}
