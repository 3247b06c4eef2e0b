import { k8s } from 'cdk8s-plus-34';
import { Construct } from 'constructs';
import { type LintExemption, lintAnnotations, singlePodLintExemptions, WORKLOAD_LINT_EXEMPTIONS } from '../lint.ts';
import { replicaSpread } from '../scheduling.ts';
import { restrictedContainerSecurityContext, restrictedPodSecurityContext } from '../security.ts';
import { DEFAULT_GROUP } from '../website/schema.ts';
import { gatewayEnvironment, type WebsiteGateway } from '../workload/website-route.ts';
import {
  LEASE_NAME,
  OPERATOR_NAME,
  OPERATOR_PORTS,
  operatorLabels,
  WEBHOOK_CERT_DIR,
  WEBHOOK_SECRET_NAME,
  WEBHOOK_SERVICE_NAME,
  type WebhookCertificateMode,
} from './names.ts';
import type { WatchNamespaces } from './watch-namespaces.ts';

/*
 * The environment the operator process reads, as this Deployment sets it:
 *
 *   WEBSITE_GROUP            API group of the Website resource (the CRD is websites.<group>)
 *   OPERATOR_NAMESPACE       namespace the operator runs in (downward API)
 *   WATCH_NAMESPACE          only with watchNamespaces: the namespaces whose Websites it reconciles,
 *                            comma-separated, or * for all; unset, it reconciles OPERATOR_NAMESPACE's
 *   POD_NAME                 this replica's identity for leader election (downward API)
 *   LEADER_ELECTION          'true' | 'false'
 *   LEASE_NAME               leader-election Lease in OPERATOR_NAMESPACE
 *   NODE_OPTIONS             --max-old-space-size tied to the memory limit, and OPERATOR_V8_FLAGS
 *                            (nodeOptionsFor); the image's entrypoint adds OPERATOR_NODE_FLAGS
 *   MALLOC_ARENA_MAX         OPERATOR_MALLOC_ARENA_MAX
 *   OTEL_SERVICE_NAME,
 *   OTEL_EXPORTER_OTLP_ENDPOINT   only when tracing is configured
 *
 * The conversion webhook listens on port 9443 (OPERATOR_PORTS.webhook), path /convert, and takes
 * its certificate according to WEBHOOK_CERT_MODE:
 *
 *   WEBHOOK_CERT_MODE=operator   built-in mode (OperatorManagedCertificates): the operator keeps
 *                                the CA and serving certificate in Secret WEBHOOK_SECRET_NAME in
 *                                OPERATOR_NAMESPACE, for Service WEBHOOK_SERVICE_NAME, and sets the
 *                                caBundle of CRD websites.<WEBSITE_GROUP>
 *     WEBHOOK_SECRET_NAME        the Secret (the Role allows get/update on this name only)
 *     WEBHOOK_SERVICE_NAME       the webhook Service, whose DNS names the certificate covers
 *   WEBHOOK_CERT_MODE=files      cert-manager mode (CertificateFiles): tls.crt and tls.key are read
 *                                from WEBHOOK_CERT_DIR, the mounted Secret WEBHOOK_SECRET_NAME,
 *                                and reloaded when cert-manager renews it; no Secret or CRD access
 *     WEBHOOK_CERT_DIR           folder of the mounted Secret
 *     WEBHOOK_SECRET_NAME        the Secret cert-manager writes (for messages)
 *
 * Not set here: WEBHOOK_ADVERTISE_ADDRESS, for an operator started outside the cluster (`npm run
 * operator`), which has no pod for the Service to select: it makes itself the Service's endpoint at
 * that address (LocalServiceEndpoint). The CRD calls the Service either way.
 */

/** CPU and memory of the operator container, as Kubernetes quantities. */
export interface OperatorResources {
  readonly cpuRequest: string;
  readonly memoryRequest: string;
  readonly memoryLimit: string;
}

/**
 * The operator's memory as `npm run bench -- --n 1000 --memory 5000` measures it
 * (docs/operate/capacity.md): the bundle with this Deployment's NODE_OPTIONS, V8's heap right after a
 * full garbage collection and VmRSS, in a fresh process that has made its first pass over the Websites it holds.
 * What grows with Websites is the caches (each Website whole, its Deployment and Service cut to the
 * fields the operator reads) and the queue's index.
 */
export const OPERATOR_MEMORY = {
  /** V8 heap after a full GC with no Website (MiB). */
  idleHeapMiB: 13.4,
  /** V8 heap after a full GC per Website held (KiB): 9.9 right after creating 5000, 7.2 in a fresh process. */
  heapPerWebsiteKiB: 9.9,
  /** RSS with no Website, caches synced (MiB). */
  idleRssMiB: 70.5,
  /** RSS per Website held, fresh process (KiB): 5000 Websites took it from 70.5 to 118.9 MiB (141.5 MiB right after creating them). */
  rssPerWebsiteKiB: 9.9,
} as const;

/**
 * What the operator's process needs outside V8's old generation (MiB): about 57 MiB of RSS idle is
 * code, Node's own and native memory (TLS and HTTP/2 buffers grow in a burst), and the young
 * generation, held to three 1 MiB semi-spaces (OPERATOR_V8_FLAGS); the rest is margin, which a
 * limit only spends if the process really holds that much.
 */
const OPERATOR_NON_HEAP_MIB = 128;

/**
 * V8's old generation is capped at this many times the live heap: a burst of creations allocates
 * far more than stays live (RSS 141.5 MiB right after creating 5000 Websites, 118.9 MiB in a fresh
 * process holding them), and V8 needs room above the live heap to collect
 * without running back to back.
 */
const HEAP_HEADROOM = 2;

/** The smallest cap on V8's old generation: start-up and the first list allocate about 64 MiB. */
const MIN_HEAP_MIB = 128;

/** Websites the default resources are sized for: what the benchmark holds in its memory phase. */
export const DEFAULT_OPERATOR_CAPACITY = 5000;

const roundUp16 = (mib: number) => Math.ceil(mib / 16) * 16;

/** V8's old-generation cap (MiB) for `capacity` Websites: HEAP_HEADROOM times the live heap, at least MIN_HEAP_MIB. */
function heapCapMiB(capacity: number): number {
  const live = OPERATOR_MEMORY.idleHeapMiB + (OPERATOR_MEMORY.heapPerWebsiteKiB * capacity) / 1024;
  return roundUp16(Math.max(MIN_HEAP_MIB, HEAP_HEADROOM * live));
}

/**
 * Requests and limit for an operator that holds `capacity` Websites, from OPERATOR_MEMORY:
 * - memory limit: V8's old-generation cap (HEAP_HEADROOM times the live heap) plus what the process
 *   needs outside it (OPERATOR_NON_HEAP_MIB); a limit only contains a leak and reserves nothing;
 * - memory request: the RSS of a process holding them, rounded up to 16 MiB;
 * - CPU request 100m: idle it uses about 12m (Lease renewals, timers); a new Website costs about
 *   18 ms of CPU; no CPU limit, so reconcile bursts are not throttled (CPU is shared by request).
 */
function operatorResourcesFor(capacity: number): OperatorResources {
  if (!Number.isInteger(capacity) || capacity < 1)
    throw new Error(`an operator's capacity is a whole number of Websites, at least 1; got ${capacity}`);
  const rss = OPERATOR_MEMORY.idleRssMiB + (OPERATOR_MEMORY.rssPerWebsiteKiB * capacity) / 1024;
  return {
    cpuRequest: '100m',
    memoryRequest: `${roundUp16(rss)}Mi`,
    memoryLimit: `${OPERATOR_NON_HEAP_MIB + heapCapMiB(capacity)}Mi`,
  };
}

/** The Websites an operator with this memory limit holds: the inverse of operatorResourcesFor. */
function capacityFor(memoryLimit: string): number {
  const heap = quantityMebibytes(memoryLimit) - OPERATOR_NON_HEAP_MIB;
  const live = heap / HEAP_HEADROOM - OPERATOR_MEMORY.idleHeapMiB;
  return Math.max(0, Math.floor((live * 1024) / OPERATOR_MEMORY.heapPerWebsiteKiB));
}

/** What the Deployment gets without `resources` or `capacity`: sized for DEFAULT_OPERATOR_CAPACITY Websites. */
export const DEFAULT_OPERATOR_RESOURCES: OperatorResources = operatorResourcesFor(DEFAULT_OPERATOR_CAPACITY);

/** Mebibytes in a Kubernetes memory quantity ('384Mi', '1Gi', '500M', '400000000'). */
function quantityMebibytes(quantity: string): number {
  const match = /^([0-9]+(?:\.[0-9]+)?)(Ki|Mi|Gi|Ti|k|M|G|T)?$/.exec(quantity.trim());
  if (!match)
    throw new Error(
      `'${quantity}' is not a memory quantity this construct reads: use a number with Ki, Mi, Gi, Ti, k, M, G or T, e.g. '384Mi'`,
    );
  const unit =
    { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, k: 1e3, M: 1e6, G: 1e9, T: 1e12 }[match[2] ?? ''] ?? 1;
  return (Number(match[1]) * unit) / 2 ** 20;
}

/**
 * V8's young generation held to 1 MiB semi-spaces (OPERATOR_V8_FLAGS): by default they grow to
 * 16 MiB each in a burst and V8 keeps the pages. Measured by `npm run bench` (N = 1000, one run):
 * RSS holding 1000 Websites 120.5 MiB against 149.1 MiB, idle 75.0 against 78.2 MiB, for CPU per
 * new Website 16.6 against 13.8 ms (more scavenges). `npm run operator` runs with the same flags.
 */
export const OPERATOR_V8_FLAGS = '--max-semi-space-size=1';

/**
 * Node flags NODE_OPTIONS does not take, so the image's entrypoint carries them (the Dockerfile's
 * ENTRYPOINT, `npm run operator`): `--optimize-for-size`, V8's heuristics for memory over speed.
 * Measured by `npm run bench` (N = 1000, one run): RSS holding 1000 Websites 96.4 MiB against
 * 110.0 MiB, for CPU per new Website 19.8 against 16.7 ms.
 */
export const OPERATOR_NODE_FLAGS: readonly string[] = ['--optimize-for-size'];

/**
 * glibc's malloc arenas for the operator's native memory (TLS, HTTP/2, zlib): two, rather than
 * eight per core, which each keep freed pages. Measured by `npm run bench` (N = 1000, one run): RSS
 * holding 1000 Websites 141.0 MiB against 149.1 MiB, idle unchanged.
 */
export const OPERATOR_MALLOC_ARENA_MAX = '2';

/**
 * NODE_OPTIONS for a memory limit: V8's old generation capped at the limit minus
 * OPERATOR_NON_HEAP_MIB, so Node collects harder as it nears the limit and, should live data
 * really outgrow it, fails with a JavaScript heap error naming the cause rather than being
 * OOM-killed by the kernel; and OPERATOR_V8_FLAGS.
 */
export function nodeOptionsFor(memoryLimit: string): string {
  const heap = Math.floor(quantityMebibytes(memoryLimit) - OPERATOR_NON_HEAP_MIB);
  if (heap < 64) {
    throw new Error(
      `the operator's memory limit ${memoryLimit} is too small: it idles at about ${Math.round(OPERATOR_MEMORY.idleRssMiB)} MiB; give it at least ${OPERATOR_NON_HEAP_MIB + 64}Mi (default ${DEFAULT_OPERATOR_RESOURCES.memoryLimit})`,
    );
  }
  return `--max-old-space-size=${heap} ${OPERATOR_V8_FLAGS}`;
}

/**
 * The operator image of this package version, as the release workflow publishes it
 * (.github/workflows/release.yml): built from this repository's Dockerfile for amd64 and arm64.
 */
export const DEFAULT_OPERATOR_IMAGE = 'ghcr.io/website-stack/website-operator:0.1.0';

export interface OperatorDeploymentProps {
  /** Namespace the operator runs in. */
  readonly namespace: string;
  /**
   * The namespaces whose Websites the operator reconciles (`WATCH_NAMESPACE`). Grant them with
   * OperatorRbac's prop of the same name.
   * @default the operator's own namespace (WATCH_NAMESPACE unset)
   */
  readonly watchNamespaces?: WatchNamespaces;
  /** ServiceAccount the pod runs as. */
  readonly serviceAccountName: string;
  /**
   * The operator's container image, as a fully qualified reference: registry host, repository,
   * and a tag or digest, for example `registry.acme.io/platform/website-operator:0.1.0` or
   * `ghcr.io/website-stack/website-operator@sha256:<digest>`. A short name such as
   * `website-operator:0.1.0` would be resolved by each node's container runtime in its own way
   * (Docker Hub for containerd, a search list for CRI-O). Build your own from the Dockerfile, or
   * use the published one.
   * @default DEFAULT_OPERATOR_IMAGE, 'ghcr.io/website-stack/website-operator:0.1.0'
   */
  readonly image?: string;
  /**
   * Pod replicas; more than one needs leader election.
   * @default 1
   */
  readonly replicas?: number;
  /**
   * API group of the Website resource.
   * @default 'web.example.com'
   */
  readonly group?: string;
  /**
   * Whether replicas elect a leader on a Lease; only the leader reconciles.
   * @default true
   */
  readonly leaderElection?: boolean;
  /**
   * Name of the leader-election Lease.
   * @default 'website-operator'
   */
  readonly leaseName?: string;
  /**
   * Base URL of an OTLP/HTTP endpoint (`OTEL_EXPORTER_OTLP_ENDPOINT`) the operator sends its traces to.
   * @default no tracing
   */
  readonly otlpEndpoint?: string;
  /**
   * Websites the operator is sized to hold: sets the memory request and limit and V8's heap cap
   * (OperatorDeployment.resourcesFor), and WEBSITE_CAPACITY, above which the operator logs a warning. With
   * `resources` too, their memory limit must hold this many.
   * @default DEFAULT_OPERATOR_CAPACITY (5000); with `resources` only, what their memory limit holds (capacityFor)
   */
  readonly capacity?: number;
  /**
   * CPU and memory requests and limit.
   * @default OperatorDeployment.resourcesFor(capacity)
   */
  readonly resources?: OperatorResources;
  /**
   * Who fills the conversion webhook's TLS Secret: the operator itself (`WEBHOOK_CERT_MODE=operator`),
   * or cert-manager, in which case the Secret is mounted read-only at /etc/webhook/tls
   * (`WEBHOOK_CERT_MODE=files`).
   * @default 'operator'
   */
  readonly webhookCertificates?: WebhookCertificateMode;
  /**
   * Name of the conversion webhook's TLS Secret.
   * @default 'website-operator-webhook-tls'
   */
  readonly webhookSecretName?: string;
  /**
   * Name of the webhook Service, whose DNS names the built-in certificate covers.
   * @default 'website-operator-webhook'
   */
  readonly webhookServiceName?: string;
  /**
   * The platform's Gateway the Websites' routes attach to, passed as GATEWAY_* and WEBSITE_DOMAIN
   * (gatewayEnvironment).
   * @default no Gateway: no routes
   */
  readonly gateway?: WebsiteGateway;
}

/** Resources and capacity from either or both props (see OperatorDeploymentProps.capacity). */
function sizing(
  path: string,
  capacity: number | undefined,
  resources: OperatorResources | undefined,
): { resources: OperatorResources; capacity: number } {
  if (!resources) {
    const sized = capacity ?? DEFAULT_OPERATOR_CAPACITY;
    return { resources: operatorResourcesFor(sized), capacity: sized };
  }
  // A limit too small for the process at all says so first; any limit it accepts holds over a thousand Websites.
  nodeOptionsFor(resources.memoryLimit);
  const holds = capacityFor(resources.memoryLimit);
  if (capacity === undefined) return { resources, capacity: holds };
  operatorResourcesFor(capacity); // validates it
  if (holds < capacity)
    throw new Error(
      `OperatorDeployment at '${path}': memory limit ${resources.memoryLimit} holds about ${holds} Websites, not the capacity ${capacity}: give it at least ${operatorResourcesFor(capacity).memoryLimit}, or leave resources out to have them sized for the capacity`,
    );
  return { resources, capacity };
}

/** The operator's Deployment: one pod by default, Pod Security `restricted`, probes and ports named. */
export class OperatorDeployment extends Construct {
  /**
   * Requests and limit for an operator holding `capacity` Websites (docs/operate/capacity.md): the
   * memory limit V8's heap cap needs for them plus what the process needs outside it, the request
   * the RSS of such a process.
   */
  public static resourcesFor(capacity: number): OperatorResources {
    return operatorResourcesFor(capacity);
  }

  /** The Websites an operator with this memory limit holds: the inverse of resourcesFor. */
  public static capacityFor(memoryLimit: string): number {
    return capacityFor(memoryLimit);
  }

  public readonly deployment: k8s.KubeDeployment;

  constructor(scope: Construct, id: string, props: OperatorDeploymentProps) {
    super(scope, id);
    const replicas = props.replicas ?? 1;
    const leaderElection = props.leaderElection ?? true;
    if (!Number.isInteger(replicas) || replicas < 1) {
      throw new Error(
        `OperatorDeployment at '${this.node.path}': replicas must be a positive integer, got ${replicas}`,
      );
    }
    if (replicas > 1 && !leaderElection) {
      throw new Error(
        `OperatorDeployment at '${this.node.path}': ${replicas} replicas without leader election would reconcile ` +
          'the same Websites concurrently; enable leaderElection or run 1 replica',
      );
    }
    const { resources, capacity } = sizing(this.node.path, props.capacity, props.resources);
    const labels = operatorLabels('controller');
    const selector = { 'app.kubernetes.io/name': OPERATOR_NAME, 'app.kubernetes.io/component': 'controller' };
    const q = k8s.Quantity.fromString;
    const port = (name: keyof typeof OPERATOR_PORTS) => k8s.IntOrString.fromString(name);
    const fromFiles = props.webhookCertificates === 'cert-manager';
    const webhookSecretName = props.webhookSecretName ?? WEBHOOK_SECRET_NAME;
    const env: k8s.EnvVar[] = [
      { name: 'WEBSITE_GROUP', value: props.group ?? DEFAULT_GROUP },
      { name: 'OPERATOR_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
      ...(props.watchNamespaces ? [{ name: 'WATCH_NAMESPACE', value: props.watchNamespaces.environmentValue }] : []),
      { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
      { name: 'LEADER_ELECTION', value: String(leaderElection) },
      { name: 'LEASE_NAME', value: props.leaseName ?? LEASE_NAME },
      { name: 'NODE_OPTIONS', value: nodeOptionsFor(resources.memoryLimit) },
      { name: 'MALLOC_ARENA_MAX', value: OPERATOR_MALLOC_ARENA_MAX },
      { name: 'WEBSITE_CAPACITY', value: String(capacity) },
      ...(props.gateway ? gatewayEnvironment(props.gateway) : []),
      ...(props.otlpEndpoint
        ? [
            { name: 'OTEL_SERVICE_NAME', value: OPERATOR_NAME },
            { name: 'OTEL_EXPORTER_OTLP_ENDPOINT', value: props.otlpEndpoint },
          ]
        : []),
      ...(fromFiles
        ? [
            { name: 'WEBHOOK_CERT_MODE', value: 'files' },
            { name: 'WEBHOOK_CERT_DIR', value: WEBHOOK_CERT_DIR },
            { name: 'WEBHOOK_SECRET_NAME', value: webhookSecretName },
          ]
        : [
            { name: 'WEBHOOK_CERT_MODE', value: 'operator' },
            { name: 'WEBHOOK_SECRET_NAME', value: webhookSecretName },
            { name: 'WEBHOOK_SERVICE_NAME', value: props.webhookServiceName ?? WEBHOOK_SERVICE_NAME },
          ]),
    ];
    // A whole-Secret volume (not subPath, which the kubelet never refreshes), so renewals reach
    // the files; group-readable by the pod's fsGroup, not world-readable.
    const volumes: k8s.Volume[] = fromFiles
      ? [
          {
            name: 'webhook-tls',
            secret: {
              secretName: webhookSecretName,
              defaultMode: 0o440,
              items: [
                { key: 'tls.crt', path: 'tls.crt' },
                { key: 'tls.key', path: 'tls.key' },
              ],
            },
          },
        ]
      : [];
    const volumeMounts: k8s.VolumeMount[] = fromFiles
      ? [{ name: 'webhook-tls', mountPath: WEBHOOK_CERT_DIR, readOnly: true }]
      : [];

    const lint: LintExemption[] = [
      ...WORKLOAD_LINT_EXEMPTIONS,
      {
        polaris: 'automountServiceAccountToken',
        reason: 'The operator calls the API server as its ServiceAccount: the token is what it authenticates with.',
      },
      {
        kubeLinter: 'env-var-secret',
        polaris: 'sensitiveContainerEnvVar',
        reason: 'WEBHOOK_SECRET_NAME holds the name of the Secret with the webhook certificate, not a secret.',
      },
      ...(replicas === 1
        ? singlePodLintExemptions(
            'One replica (spec: the operator runs as one pod); with leader election, more replicas are stand-bys.',
          )
        : []),
    ];

    this.deployment = new k8s.KubeDeployment(this, 'Resource', {
      metadata: { name: OPERATOR_NAME, namespace: props.namespace, labels, annotations: lintAnnotations(lint) },
      spec: {
        replicas,
        selector: { matchLabels: selector },
        template: {
          metadata: { labels },
          spec: {
            // Stand-by replicas on other nodes and zones than the leader, to take over when it goes with its node.
            ...(replicas > 1 ? replicaSpread(selector) : {}),
            serviceAccountName: props.serviceAccountName,
            automountServiceAccountToken: true,
            securityContext: restrictedPodSecurityContext(),
            terminationGracePeriodSeconds: 30,
            ...(volumes.length > 0 ? { volumes } : {}),
            containers: [
              {
                name: 'operator',
                image: props.image ?? DEFAULT_OPERATOR_IMAGE,
                imagePullPolicy: 'IfNotPresent',
                env,
                ports: Object.entries(OPERATOR_PORTS).map(([name, containerPort]) => ({
                  name,
                  containerPort,
                  protocol: 'TCP',
                })),
                livenessProbe: {
                  httpGet: { path: '/healthz', port: port('health') },
                  periodSeconds: 10,
                  failureThreshold: 3,
                },
                readinessProbe: {
                  httpGet: { path: '/readyz', port: port('health') },
                  periodSeconds: 5,
                  failureThreshold: 3,
                },
                resources: {
                  requests: { cpu: q(resources.cpuRequest), memory: q(resources.memoryRequest) },
                  limits: { memory: q(resources.memoryLimit) },
                },
                securityContext: restrictedContainerSecurityContext(),
                ...(volumeMounts.length > 0 ? { volumeMounts } : {}),
              },
            ],
          },
        },
      },
    });
  }
}
