import { k8s } from 'cdk8s-plus-34';
import { Construct } from 'constructs';
import { restrictedContainerSecurityContext, restrictedPodSecurityContext } from '../security.ts';
import { DEFAULT_GROUP } from '../website/schema.ts';
import { LEASE_NAME, OPERATOR_NAME, OPERATOR_PORTS, operatorLabels } from './names.ts';

/** CPU and memory of the operator container, as Kubernetes quantities. */
export interface OperatorResources {
  readonly cpuRequest: string;
  readonly memoryRequest: string;
  readonly memoryLimit: string;
}

/**
 * Requests sized for a few thousand Websites on one Node.js process; a memory limit so a leak is
 * contained, and no CPU limit, so reconcile bursts are not throttled (CPU is shared by request).
 */
export const DEFAULT_OPERATOR_RESOURCES: OperatorResources = {
  cpuRequest: '100m',
  memoryRequest: '128Mi',
  memoryLimit: '512Mi',
};

/** Image the README's `docker build` command produces for this package version. */
export const DEFAULT_OPERATOR_IMAGE = 'website-operator:0.1.0';

export interface OperatorDeploymentProps {
  /** Namespace the operator runs in and watches. */
  readonly namespace: string;
  /** ServiceAccount the pod runs as. */
  readonly serviceAccountName: string;
  /**
   * Container image, pinned by tag or digest.
   * @default 'website-operator:0.1.0'
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
   * CPU and memory requests and limit.
   * @default DEFAULT_OPERATOR_RESOURCES
   */
  readonly resources?: OperatorResources;
}

/** The operator's Deployment: one pod by default, Pod Security `restricted`, probes and ports named. */
export class OperatorDeployment extends Construct {
  public readonly deployment: k8s.KubeDeployment;

  constructor(scope: Construct, id: string, props: OperatorDeploymentProps) {
    super(scope, id);
    const replicas = props.replicas ?? 1;
    const leaderElection = props.leaderElection ?? true;
    if (!Number.isInteger(replicas) || replicas < 1) {
      throw new Error(`OperatorDeployment at '${this.node.path}': replicas must be a positive integer, got ${replicas}`);
    }
    if (replicas > 1 && !leaderElection) {
      throw new Error(
        `OperatorDeployment at '${this.node.path}': ${replicas} replicas without leader election would reconcile ` +
          'the same Websites concurrently; enable leaderElection or run 1 replica',
      );
    }
    const resources = props.resources ?? DEFAULT_OPERATOR_RESOURCES;
    const labels = operatorLabels('controller');
    const selector = { 'app.kubernetes.io/name': OPERATOR_NAME, 'app.kubernetes.io/component': 'controller' };
    const q = k8s.Quantity.fromString;
    const port = (name: keyof typeof OPERATOR_PORTS) => k8s.IntOrString.fromString(name);
    const env: k8s.EnvVar[] = [
      { name: 'WEBSITE_GROUP', value: props.group ?? DEFAULT_GROUP },
      { name: 'OPERATOR_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
      { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
      { name: 'LEADER_ELECTION', value: String(leaderElection) },
      { name: 'LEASE_NAME', value: props.leaseName ?? LEASE_NAME },
      ...(props.otlpEndpoint
        ? [
            { name: 'OTEL_SERVICE_NAME', value: OPERATOR_NAME },
            { name: 'OTEL_EXPORTER_OTLP_ENDPOINT', value: props.otlpEndpoint },
          ]
        : []),
    ];

    this.deployment = new k8s.KubeDeployment(this, 'Resource', {
      metadata: { name: OPERATOR_NAME, namespace: props.namespace, labels },
      spec: {
        replicas,
        selector: { matchLabels: selector },
        template: {
          metadata: { labels },
          spec: {
            serviceAccountName: props.serviceAccountName,
            automountServiceAccountToken: true,
            securityContext: restrictedPodSecurityContext(),
            terminationGracePeriodSeconds: 30,
            containers: [
              {
                name: 'operator',
                image: props.image ?? DEFAULT_OPERATOR_IMAGE,
                imagePullPolicy: 'IfNotPresent',
                env,
                ports: Object.entries(OPERATOR_PORTS).map(([name, containerPort]) => ({ name, containerPort, protocol: 'TCP' })),
                livenessProbe: { httpGet: { path: '/healthz', port: port('health') }, periodSeconds: 10, failureThreshold: 3 },
                readinessProbe: { httpGet: { path: '/readyz', port: port('health') }, periodSeconds: 5, failureThreshold: 3 },
                resources: {
                  requests: { cpu: q(resources.cpuRequest), memory: q(resources.memoryRequest) },
                  limits: { memory: q(resources.memoryLimit) },
                },
                securityContext: restrictedContainerSecurityContext(),
              },
            ],
          },
        },
      },
    });
  }
}
