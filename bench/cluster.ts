// The benchmark's own local cluster (scripts/cluster.sh, in .cluster/bench) and what every
// measurement needs from it: an administrator client, the CRD and the operator's RBAC from dist/,
// watches that timestamp what they see, and emptying a namespace between runs.
import { cpus, loadavg, release, totalmem } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { KubeConfig } from '@kubernetes/client-node';
import { AUDIT_POLICY } from '../harness/cluster/audit.ts';
import { type ClusterAccess, kubectlOk } from '../harness/cluster/kubectl.ts';
import { operatorRbacManifests } from '../harness/operator/operator-manifests.ts';
import { eventually } from '../harness/process/poll.ts';
import { inPool } from '../harness/process/pool.ts';
import { runScript } from '../harness/process/processes.ts';
import { isNotFound } from '../operator/src/controller/api-error.ts';
import { Informer } from '../operator/src/controller/informer.ts';
import {
  DEPLOYMENTS,
  EVENTS,
  type KubeObject,
  type ResourceType,
  SERVICES,
} from '../operator/src/controller/kube-api.ts';
import { KubeClient } from '../operator/src/controller/kube-client.ts';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** Creates in flight at once, for Websites and for the baselines' objects alike. */
export const CREATE_CONCURRENCY = 8;

export const CONFIGMAPS: ResourceType = { group: '', version: 'v1', resource: 'configmaps' };
export const PODS: ResourceType = { group: '', version: 'v1', resource: 'pods' };
export const REPLICASETS: ResourceType = { group: 'apps', version: 'v1', resource: 'replicasets' };
export const NAMESPACES: ResourceType = { group: '', version: 'v1', resource: 'namespaces' };

/** The benchmark's cluster: how kubectl and the administrator client reach it. */
export interface BenchCluster extends ClusterAccess {
  /** Administrator client without a meaningful client-side rate limit. */
  readonly admin: KubeClient;
  /** What scripts/cluster.sh was started with, for the report. */
  readonly description: string;
}

export interface ClusterOptions {
  /** Pods the cluster must be able to run at once (kwok nodes hold 110 each). */
  readonly pods: number;
  /** Extra component flags for kwokctl (`--extra-args component=flag=value`). */
  readonly extraArgs: readonly string[];
  readonly log: (message: string) => void;
}

/** The local cluster's controller manager and scheduler, raised above their 20 QPS defaults so they are not what the figures measure. */
export const CLUSTER_ARGS = [
  'kube-controller-manager=kube-api-qps=500',
  'kube-controller-manager=kube-api-burst=1000',
  'kube-scheduler=kube-api-qps=500',
  'kube-scheduler=kube-api-burst=1000',
];

const DIR = join(ROOT, '.cluster', 'bench');
const NAME = 'website-stack-bench';
const PODS_PER_NODE = 110;
/** Where the API server logs the requests harness/cluster/audit-policy.yaml selects: every ServiceAccount's but kube-system's. */
export const AUDIT_LOG = join(DIR, 'kwok', 'clusters', NAME, 'logs', 'audit.log');

export function clusterEnv(nodes?: number, extraArgs: readonly string[] = []): NodeJS.ProcessEnv {
  return {
    ...process.env,
    WEBSITE_STACK_CLUSTER_DIR: DIR,
    WEBSITE_STACK_CLUSTER_NAME: NAME,
    WEBSITE_STACK_CLUSTER_AUDIT_POLICY: AUDIT_POLICY,
    ...(nodes ? { WEBSITE_STACK_CLUSTER_NODES: String(nodes) } : {}),
    WEBSITE_STACK_CLUSTER_EXTRA_ARGS: extraArgs.map((a) => `--extra-args ${a}`).join(' '),
  };
}

/** `scripts/cluster.sh up` or `down`, its progress shown as it comes. */
async function clusterScript(command: 'up' | 'down', env: NodeJS.ProcessEnv): Promise<void> {
  await runScript('cluster', [command], env, { progress: true });
}

function adminClient(kubeconfig: string): KubeClient {
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfig);
  return new KubeClient(kc, { qps: 100_000, burst: 100_000, userAgent: 'website-stack-bench', timeoutMs: 120_000 });
}

/** Starts (or reuses) the benchmark's cluster; recreates it when it has too few nodes for `pods`. */
export async function clusterUp(options: ClusterOptions): Promise<BenchCluster> {
  const nodes = Math.max(2, Math.ceil(options.pods / (PODS_PER_NODE - 10)));
  const env = clusterEnv(nodes, options.extraArgs);
  await clusterScript('up', env);
  const access = { kubeconfig: join(DIR, 'kubeconfig'), kubectl: join(DIR, 'bin', 'kubectl') };
  let admin = adminClient(access.kubeconfig);
  const capacity = async () =>
    (await admin.list<KubeObject>({ group: '', version: 'v1', resource: 'nodes' }, undefined)).items.reduce(
      (sum, node) =>
        sum + Number((node.status as { allocatable?: { pods?: string } } | undefined)?.allocatable?.pods ?? 0),
      0,
    );
  if ((await capacity()) < options.pods) {
    options.log(`the running bench cluster holds fewer than ${options.pods} pods: recreating it with ${nodes} nodes`);
    await clusterScript('down', env);
    await clusterScript('up', env);
    admin = adminClient(access.kubeconfig);
  }
  return {
    ...access,
    admin,
    description: `${nodes} kwok nodes (${await capacity()} pods); ${options.extraArgs.join(', ') || 'stock component flags'}`,
  };
}

export function clusterDown(): Promise<void> {
  return clusterScript('down', clusterEnv());
}

/**
 * A run's hold on the bench cluster: `release()` stops the cluster unless `keep`; on SIGINT or
 * SIGTERM before that, `stopProcesses` runs first (a controller left running would retry against a
 * cluster that is gone), then the cluster stops and the process exits 130.
 */
export function holdCluster(
  keep: boolean,
  stopProcesses: () => Promise<unknown>,
  log: (message: string) => void,
): { release(): Promise<void> } {
  let stopCluster = !keep;
  const interrupted = () => {
    log('interrupted');
    void stopProcesses()
      .then(() => (stopCluster ? clusterDown() : undefined))
      .finally(() => process.exit(130));
  };
  process.once('SIGINT', interrupted);
  process.once('SIGTERM', interrupted);
  return {
    async release() {
      process.off('SIGINT', interrupted);
      process.off('SIGTERM', interrupted);
      if (stopCluster) {
        stopCluster = false;
        await clusterDown();
      }
    },
  };
}

/** dist/website-operator/website-crd.yaml, and the RBAC objects of dist/website-operator/website-operator.yaml (not its Deployment). */
export async function installOperatorObjects(cluster: BenchCluster): Promise<void> {
  const crd = join(ROOT, 'dist/website-operator/website-crd.yaml');
  await kubectlOk(cluster, ['apply', '--server-side', '--force-conflicts', '-f', crd]);
  await kubectlOk(cluster, ['wait', '--for=condition=Established', '--timeout=60s', '-f', crd]);
  const rbac = operatorRbacManifests();
  await kubectlOk(cluster, ['apply', '--server-side', '--force-conflicts', '-f', '-'], {
    input: rbac.map((m) => JSON.stringify(m)).join('\n'),
  });
}

/**
 * An informer in this process that timestamps (performance.now()) the first time it sees each
 * object, and the first time `reached` holds for it.
 */
export class Watcher<T extends KubeObject = KubeObject> {
  readonly firstSeen = new Map<string, number>();
  readonly reachedAt = new Map<string, number>();
  private readonly informer: Informer<T>;
  private readonly stopping = new AbortController();
  private readonly running: Promise<void>;

  constructor(
    client: KubeClient,
    type: ResourceType,
    namespace: string,
    { labelSelector, reached }: { labelSelector?: string; reached?: (object: T) => boolean } = {},
  ) {
    this.informer = new Informer<T>({ client, type, namespace, labelSelector, resyncMs: Number.POSITIVE_INFINITY });
    this.informer.on((event, object) => {
      if (event === 'delete') return;
      const now = performance.now();
      const name = object.metadata!.name!;
      if (!this.firstSeen.has(name)) this.firstSeen.set(name, now);
      if (reached && !this.reachedAt.has(name) && reached(object)) this.reachedAt.set(name, now);
    });
    this.running = this.informer.run(this.stopping.signal);
  }

  synced(): Promise<void> {
    return this.informer.waitForSync();
  }

  list(): T[] {
    return this.informer.list();
  }

  async stop(): Promise<void> {
    this.stopping.abort();
    await this.running;
  }
}

/** A Deployment that has rolled out its template with every replica available. */
export function deploymentAvailable(deployment: KubeObject): boolean {
  const spec = deployment.spec as { replicas?: number } | undefined;
  const status = (deployment.status ?? {}) as {
    observedGeneration?: number;
    availableReplicas?: number;
    updatedReplicas?: number;
  };
  const wanted = spec?.replicas ?? 1;
  return (
    (status.observedGeneration ?? 0) >= (deployment.metadata?.generation ?? 1) &&
    (status.availableReplicas ?? 0) >= wanted &&
    (status.updatedReplicas ?? 0) >= wanted
  );
}

export async function ensureNamespace(
  cluster: BenchCluster,
  name: string,
  labels: Record<string, string> = {},
): Promise<void> {
  await cluster.admin.apply(
    NAMESPACES,
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels } },
    'website-stack-bench',
  );
}

/** Label of everything a run creates: Websites' children and their pods carry it, and so do the baselines' objects. */
export const BENCH_SELECTOR = 'app.kubernetes.io/name=website';

/**
 * Empties `namespace` of what a run left (Websites without waiting for an operator, their
 * children and pods (labelled BENCH_SELECTOR, or `everything`), the baselines' objects, events), deleting directly rather than through the
 * garbage collector, until the lists are empty, so the next run starts from nothing.
 */
export async function emptyNamespace(
  cluster: BenchCluster,
  namespace: string,
  websites?: ResourceType,
  { everything = false }: { everything?: boolean } = {},
): Promise<void> {
  const { admin } = cluster;
  // A namespace of a controller under test holds nothing else: its children go whatever their labels.
  const labelSelector = everything ? undefined : BENCH_SELECTOR;
  // Not every ConfigMap of a controller's namespace: kube-root-ca.crt comes back as soon as it goes.
  const collections = everything
    ? [DEPLOYMENTS, REPLICASETS, SERVICES, PODS]
    : [DEPLOYMENTS, REPLICASETS, SERVICES, CONFIGMAPS, PODS];
  // A controller that defines its Website API itself (kro, from its ResourceGraphDefinition) may not be serving it yet: then there are none.
  const listWebsites = async (query: { limit?: number } = {}) => {
    try {
      return websites ? (await admin.list<KubeObject>(websites, namespace, query)).items : [];
    } catch (error) {
      if (isNotFound(error)) return [];
      throw error;
    }
  };
  const remaining = async () => {
    let count = (await listWebsites({ limit: 1 })).length;
    for (const type of collections)
      count += (await admin.list(type, namespace, { labelSelector, limit: 1 })).items.length;
    return count;
  };
  // Deleting thousands of objects can outlast the API server's 60 s request timeout (504, or over
  // HTTP/2 a reset stream) or the client's (no response, code 0): the deletion goes on on the
  // server, and the next round deletes what is left. An API server that is down fails the next list.
  const deleteCollection = (type: ResourceType, query: Record<string, string | number | undefined>) =>
    admin.request('DELETE', type, { namespace }, { query }).catch((error: unknown) => {
      const code = (error as { code?: number }).code;
      if (code !== 504 && code !== 0) throw error;
    });
  for (let attempt = 1; ; attempt++) {
    const items = await listWebsites();
    if (websites && items.length) {
      await inPool(items, 16, async (website) => {
        if (!website.metadata?.finalizers?.length) return;
        await admin
          .patch(websites, { namespace, name: website.metadata.name }, 'merge', { metadata: { finalizers: null } })
          .catch(() => undefined);
      });
      await deleteCollection(websites, {});
    }
    // In this order: a ReplicaSet whose Deployment is gone creates no more pods.
    for (const type of collections) {
      await deleteCollection(type, { labelSelector, gracePeriodSeconds: type === PODS ? 0 : undefined });
    }
    await deleteCollection(EVENTS, {});
    try {
      // A controller acting on what it saw just before may create one more object: delete again.
      await eventually(`namespace ${namespace} to be empty`, async () => (await remaining()) === 0, {
        timeoutMs: 15_000,
        intervalMs: 100,
        stopOnError: true,
      });
      return;
    } catch (error) {
      if (attempt === 20) throw error;
    }
  }
}

/** The machine the cluster and the peers share, for latest.json and the report's header line. */
export function describeMachine() {
  const machine = {
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model.trim() ?? 'unknown',
    memoryBytes: totalmem(),
    kernel: `Linux ${release()}`,
    node: process.version,
    loadAverageAtStart: loadavg()[0],
  };
  const machineText = `${machine.cpus} × ${machine.cpuModel}, ${(machine.memoryBytes / 2 ** 30).toFixed(0)} GiB, ${machine.kernel}, Node ${machine.node}, load average ${machine.loadAverageAtStart.toFixed(1)} at the start`;
  return { machine, machineText };
}
