import { createHash } from 'node:crypto';
import { Yaml } from 'cdk8s';
import { k8s } from 'cdk8s-plus-34';
import { Construct } from 'constructs';
import { type LintExemption, lintAnnotations, WORKLOAD_LINT_EXEMPTIONS } from '../lint.ts';
import { type ReplicaSpread, replicaSpread } from '../scheduling.ts';
import { restrictedContainerSecurityContext, restrictedPodSecurityContext } from '../security.ts';
import { tracingLabels } from './names.ts';

/** CPU and memory of one container, as Kubernetes quantities; no CPU limit, so bursts are not throttled. */
export interface TracingResources {
  readonly cpuRequest: string;
  readonly memoryRequest: string;
  readonly memoryLimit: string;
}

/** A Secret mounted as files (TLS material, password files): read-only, readable by the pod's group only. */
export interface SecretMount {
  readonly secretName: string;
  readonly mountPath: string;
  /** Keys to mount; every key when omitted. */
  readonly keys?: string[];
}

/** A YAML configuration file of a TracingWorkload. */
export interface WorkloadConfigFile {
  readonly fileName: string;
  /** The document, written as YAML. */
  readonly document: Record<string, unknown>;
  /** Where the ConfigMap is mounted. */
  readonly dir: string;
}

/** A volume and where the main container mounts it. */
export interface WorkloadVolume {
  readonly volume: k8s.Volume;
  readonly mountPath: string;
}

/** Readiness and liveness: HTTP GET of `path` on a named port, or a TCP connect when there is no path. */
export interface WorkloadHealth {
  /** @default a TCP connect */
  readonly path?: string;
  /** Name of the container port. */
  readonly port: string;
}

export interface TracingWorkloadProps {
  readonly namespace: string;
  /** Name of the Deployment, Service and ConfigMap. */
  readonly name: string;
  /** `app.kubernetes.io/component`: what the workload is (collector, query, all-in-one, ...). */
  readonly component: string;
  readonly image: string;
  /** Arguments of the main container, after `--config` when there is a `config`. @default none */
  readonly args?: string[];
  /** Container ports by name; every one is also a Service port unless `servicePorts` says otherwise. */
  readonly ports: Record<string, number>;
  /** Names of the ports the Service exposes. @default every port */
  readonly servicePorts?: string[];
  /**
   * A YAML configuration file in a ConfigMap named like the workload, mounted at `dir` and passed
   * as `--config=<dir>/<fileName>` (how both Jaeger and the Collector take theirs).
   */
  readonly config?: WorkloadConfigFile;
  readonly env?: k8s.EnvVar[];
  readonly secretMounts?: SecretMount[];
  /** Extra volumes and their mounts in the main container (a PersistentVolumeClaim, an emptyDir). */
  readonly volumes?: WorkloadVolume[];
  /** Readiness and liveness. @default none */
  readonly health?: WorkloadHealth;
  readonly resources: TracingResources;
  /** @default 1 */
  readonly replicas?: number;
  /** Extra containers in the pod (an authenticating proxy). */
  readonly sidecars?: k8s.Container[];
  /** Volumes that the sidecars mount (each sidecar names its own mounts). */
  readonly sidecarVolumes?: k8s.Volume[];
  /** Ports of the sidecars, by name, that the Service exposes too. */
  readonly sidecarPorts?: Record<string, number>;
  /** Deployment strategy, `RollingUpdate` or `Recreate` (for a single-writer volume). @default 'RollingUpdate' */
  readonly strategy?: string;
  /** How replicas spread over nodes and zones; for a workload that may run more than one pod. @default no spreading rules */
  readonly spread?: ReplicaSpread;
  /**
   * Linter findings the Deployment keeps on purpose, besides WORKLOAD_LINT_EXEMPTIONS (which
   * every workload has), as annotations on it.
   * @default none
   */
  readonly lint?: LintExemption[];
}

/**
 * A Deployment and its Service, and the ConfigMap holding its configuration: the shape every
 * trace-stack component shares. Pods pass Pod Security `restricted` with a read-only root; a
 * changed configuration rolls the pods (its hash is a pod annotation).
 */
export class TracingWorkload extends Construct {
  public readonly configMap?: k8s.KubeConfigMap;
  public readonly deployment: k8s.KubeDeployment;
  public readonly service: k8s.KubeService;
  /** The configuration file's text, exactly as the ConfigMap holds it. */
  public readonly configText?: string;
  /** The Deployment's selector: labels of exactly its pods. */
  public readonly selector: Record<string, string>;
  /** Every container port of the pod (sidecars' too), by name. */
  public readonly ports: Record<string, number>;

  constructor(scope: Construct, id: string, props: TracingWorkloadProps) {
    super(scope, id);
    if (props.strategy !== undefined && !['RollingUpdate', 'Recreate'].includes(props.strategy))
      throw new Error(
        `TracingWorkload at '${this.node.path}': strategy '${props.strategy}' is neither RollingUpdate nor Recreate`,
      );
    const labels = tracingLabels(props.name, props.component);
    const selector = { 'app.kubernetes.io/name': props.name, 'app.kubernetes.io/component': props.component };
    this.selector = selector;
    const metadata = { name: props.name, namespace: props.namespace, labels };
    const q = k8s.Quantity.fromString;

    const volumes: k8s.Volume[] = [{ name: 'tmp', emptyDir: { sizeLimit: q('64Mi') } }];
    const mounts: k8s.VolumeMount[] = [{ name: 'tmp', mountPath: '/tmp' }];
    const annotations: Record<string, string> = {};
    if (props.config) {
      this.configText = Yaml.stringify(props.config.document);
      this.configMap = new k8s.KubeConfigMap(this, 'Config', {
        metadata,
        data: { [props.config.fileName]: this.configText },
      });
      volumes.push({ name: 'config', configMap: { name: props.name } });
      mounts.push({ name: 'config', mountPath: props.config.dir, readOnly: true });
      annotations['website-stack.dev/config-hash'] = createHash('sha256')
        .update(this.configText)
        .digest('hex')
        .slice(0, 16);
    }
    props.secretMounts?.forEach((mount, i) => {
      const name = `secret-${i}`;
      const items = mount.keys?.map((key) => ({ key, path: key }));
      // A whole-Secret volume (not subPath, which the kubelet never refreshes), so rotations reach the files.
      volumes.push({ name, secret: { secretName: mount.secretName, defaultMode: 0o440, ...(items ? { items } : {}) } });
      mounts.push({ name, mountPath: mount.mountPath, readOnly: true });
    });
    props.volumes?.forEach(({ volume, mountPath }) => {
      volumes.push(volume);
      mounts.push({ name: volume.name, mountPath });
    });
    volumes.push(...(props.sidecarVolumes ?? []));

    const args = [
      ...(props.config ? [`--config=${props.config.dir}/${props.config.fileName}`] : []),
      ...(props.args ?? []),
    ];

    const probe = (initialDelaySeconds: number): k8s.Probe | undefined => {
      if (!props.health) return undefined;
      const port = k8s.IntOrString.fromString(props.health.port);
      const check =
        props.health.path === undefined ? { tcpSocket: { port } } : { httpGet: { path: props.health.path, port } };
      return { ...check, initialDelaySeconds, periodSeconds: 10, failureThreshold: 3 };
    };

    this.deployment = new k8s.KubeDeployment(this, 'Deployment', {
      metadata: { ...metadata, annotations: lintAnnotations([...WORKLOAD_LINT_EXEMPTIONS, ...(props.lint ?? [])]) },
      spec: {
        replicas: props.replicas ?? 1,
        selector: { matchLabels: selector },
        strategy: { type: props.strategy ?? 'RollingUpdate' },
        template: {
          metadata: { labels, ...(Object.keys(annotations).length > 0 ? { annotations } : {}) },
          spec: {
            ...(props.spread ? replicaSpread(selector, props.spread) : {}),
            automountServiceAccountToken: false,
            securityContext: restrictedPodSecurityContext(),
            volumes,
            containers: [
              {
                name: props.component,
                image: props.image,
                imagePullPolicy: 'IfNotPresent',
                ...(args.length > 0 ? { args } : {}),
                ...(props.env && props.env.length > 0 ? { env: [...props.env] } : {}),
                ports: Object.entries(props.ports).map(([name, containerPort]) => ({
                  name,
                  containerPort,
                  protocol: portProtocol(name),
                })),
                ...(props.health ? { readinessProbe: probe(0), livenessProbe: probe(10) } : {}),
                resources: {
                  requests: { cpu: q(props.resources.cpuRequest), memory: q(props.resources.memoryRequest) },
                  limits: { memory: q(props.resources.memoryLimit) },
                },
                securityContext: restrictedContainerSecurityContext(),
                volumeMounts: mounts,
              },
              ...(props.sidecars ?? []),
            ],
          },
        },
      },
    });

    const allPorts = { ...props.ports, ...props.sidecarPorts };
    this.ports = allPorts;
    const exposed = [...(props.servicePorts ?? Object.keys(props.ports)), ...Object.keys(props.sidecarPorts ?? {})];
    for (const name of exposed) {
      if (!(name in allPorts))
        throw new Error(
          `TracingWorkload at '${this.node.path}': servicePorts names '${name}', which is not one of its ports (${Object.keys(allPorts).join(', ')})`,
        );
    }
    this.service = new k8s.KubeService(this, 'Service', {
      metadata,
      spec: {
        selector,
        ports: exposed.map((name) => ({
          name,
          port: allPorts[name],
          targetPort: k8s.IntOrString.fromString(name),
          protocol: portProtocol(name),
        })),
      },
    });
  }
}

/** Jaeger's Thrift compact and binary receivers are UDP; every other port is TCP. */
export function portProtocol(name: string): 'TCP' | 'UDP' {
  return /^thrift-(compact|binary)$/.test(name) ? 'UDP' : 'TCP';
}
