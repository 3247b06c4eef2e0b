import { k8s } from 'cdk8s-plus-34';
import { Construct } from 'constructs';
import { singlePodLintExemptions } from '../lint.ts';
import { type JaegerStorage, jaegerConfig } from './jaeger-config.ts';
import { JAEGER_PORTS, serviceHost, TRACING_IMAGES, TRACING_NAMESPACE, tracingLabels } from './names.ts';
import { type TracingResources, TracingWorkload } from './tracing-workload.ts';

/** Where Jaeger reads its configuration. */
export const JAEGER_CONFIG_DIR = '/etc/jaeger';
export const JAEGER_CONFIG_FILE = 'config.yaml';

/** In-memory storage of JaegerAllInOne. */
export interface MemoryStorageOptions {
  /** Traces kept; the oldest go first. Size it to the memory limit (about 10 KiB per HotROD trace). @default 50000 */
  readonly maxTraces?: number;
}

/** Badger storage of JaegerAllInOne, on a PersistentVolumeClaim. */
export interface BadgerStorageOptions {
  /** Size of the PersistentVolumeClaim. @default '10Gi' */
  readonly size?: string;
  /** @default the cluster's default StorageClass */
  readonly storageClassName?: string;
  /** How long spans are kept (Go duration). @default '168h' (7 days) */
  readonly spanTtl?: string;
}

/** Development storage: in memory (the default) or Badger on a PersistentVolumeClaim. */
export class AllInOneStorage {
  /** In memory: lost on restart, bounded by `maxTraces`. */
  public static memory(options: MemoryStorageOptions = {}): AllInOneStorage {
    return new AllInOneStorage({ type: 'memory', ...options });
  }

  /** Badger on a PersistentVolumeClaim: a restart keeps traces for `spanTtl`. */
  public static badger(options: BadgerStorageOptions = {}): AllInOneStorage {
    return new AllInOneStorage({ type: 'badger', ...options });
  }

  /** @internal the settings, by type */
  public readonly _settings:
    | ({ readonly type: 'memory' } & MemoryStorageOptions)
    | ({ readonly type: 'badger' } & BadgerStorageOptions);

  private constructor(settings: AllInOneStorage['_settings']) {
    this._settings = settings;
  }

  /** `memory` or `badger`. */
  public get type(): string {
    return this._settings.type;
  }
}

export const DEFAULT_ALL_IN_ONE_RESOURCES: TracingResources = {
  cpuRequest: '100m',
  memoryRequest: '256Mi',
  memoryLimit: '1Gi',
};

/** JaegerAllInOne's settings but its namespace, which a trace stack gives. */
export interface JaegerAllInOneOptions {
  /** Name of the Deployment, Service and ConfigMap. @default 'jaeger' */
  readonly name?: string;
  /** @default 'jaegertracing/jaeger:2.13.0' */
  readonly image?: string;
  /**
   * The spec's COLLECTOR_OTLP_ENABLED: OTLP on 4317/4318. When false, only the Jaeger Thrift
   * receivers (14268/HTTP, 6831 and 6832/UDP) accept spans.
   * @default true
   */
  readonly otlpEnabled?: boolean;
  /** @default in memory, 50000 traces */
  readonly storage?: AllInOneStorage;
  /** @default DEFAULT_ALL_IN_ONE_RESOURCES */
  readonly resources?: TracingResources;
}

export interface JaegerAllInOneProps extends JaegerAllInOneOptions {
  /** @default 'tracing' */
  readonly namespace?: string;
}

/**
 * Jaeger v2 all-in-one for development (spec §1.6): collector, storage and query in one pod, no
 * authentication (spec §5), UI and API on 16686, health on 13133 (/status).
 */
export class JaegerAllInOne extends Construct {
  public readonly workload: TracingWorkload;
  public readonly config: Record<string, unknown>;
  /** Badger's claim, when storage is badger. */
  public readonly volumeClaim?: k8s.KubePersistentVolumeClaim;
  /** `<service>.<namespace>.svc:4317`: where a collector exports OTLP over gRPC. */
  public readonly otlpGrpcAddress: string;
  /** `http://<service>.<namespace>.svc:16686`: the UI and query API. */
  public readonly queryUrl: string;

  constructor(scope: Construct, id: string, props: JaegerAllInOneProps = {}) {
    super(scope, id);
    const namespace = props.namespace ?? TRACING_NAMESPACE;
    const name = props.name ?? 'jaeger';
    const otlp = props.otlpEnabled ?? true;
    const storageProps = (props.storage ?? AllInOneStorage.memory())._settings;
    let storage: JaegerStorage;
    const volumes: { volume: k8s.Volume; mountPath: string }[] = [];
    if (storageProps.type === 'memory') {
      const maxTraces = storageProps.maxTraces ?? 50000;
      if (!Number.isInteger(maxTraces) || maxTraces < 1)
        throw new Error(
          `JaegerAllInOne at '${this.node.path}': storage.maxTraces must be a positive whole number, got ${maxTraces}`,
        );
      storage = { type: 'memory', maxTraces };
    } else {
      const spanTtl = storageProps.spanTtl ?? '168h';
      if (!/^(\d+(h|m|s))+$/.test(spanTtl))
        throw new Error(
          `JaegerAllInOne at '${this.node.path}': storage.spanTtl must be a Go duration such as 168h, got '${spanTtl}'`,
        );
      const directory = '/var/lib/jaeger';
      storage = { type: 'badger', directory, spanTtl };
      this.volumeClaim = new k8s.KubePersistentVolumeClaim(this, 'Data', {
        metadata: { name: `${name}-data`, namespace, labels: tracingLabels(name, 'all-in-one') },
        spec: {
          accessModes: ['ReadWriteOnce'],
          ...(storageProps.storageClassName ? { storageClassName: storageProps.storageClassName } : {}),
          resources: { requests: { storage: k8s.Quantity.fromString(storageProps.size ?? '10Gi') } },
        },
      });
      volumes.push({
        volume: { name: 'data', persistentVolumeClaim: { claimName: `${name}-data` } },
        mountPath: directory,
      });
    }
    this.config = jaegerConfig({ storage, ingest: { otlp, thrift: true }, query: {}, serviceName: name });

    // Without OTLP ingest the OTLP ports stay closed.
    const { 'otlp-grpc': _otlpGrpc, 'otlp-http': _otlpHttp, ...withoutOtlp } = JAEGER_PORTS;
    this.workload = new TracingWorkload(this, 'Workload', {
      namespace,
      name,
      component: 'all-in-one',
      image: props.image ?? TRACING_IMAGES.jaeger,
      ports: otlp ? JAEGER_PORTS : withoutOtlp,
      config: { fileName: JAEGER_CONFIG_FILE, document: this.config, dir: JAEGER_CONFIG_DIR },
      volumes,
      health: { path: '/status', port: 'health' },
      resources: props.resources ?? DEFAULT_ALL_IN_ONE_RESOURCES,
      // Badger's directory takes one writer: the old pod must be gone before the new one opens it.
      strategy: storage.type === 'badger' ? 'Recreate' : 'RollingUpdate',
      lint: singlePodLintExemptions(
        'All-in-one is one process by design: its storage (memory, or Badger on one volume) is not shared between pods.',
      ),
    });
    this.otlpGrpcAddress = `${serviceHost(name, namespace)}:${JAEGER_PORTS['otlp-grpc']}`;
    this.queryUrl = `http://${serviceHost(name, namespace)}:${JAEGER_PORTS.query}`;
  }
}
