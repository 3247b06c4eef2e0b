// What the operator's figures are divided by: the same cluster doing the same amount of work
// without the operator, measured in the same run (these machines are too noisy for absolute
// numbers to mean much from one run to the next).
import { spawn } from 'node:child_process';
import type { WebsiteSpec } from '../harness/cluster/website.ts';
import { type Histogram, parseHistogram } from '../harness/process/metrics.ts';
import { eventually } from '../harness/process/poll.ts';
import { inPool } from '../harness/process/pool.ts';
import { rssBytes } from '../harness/process/proc.ts';
import { isNotFound } from '../operator/src/controller/api-error.ts';
import { sleep } from '../operator/src/controller/backoff.ts';
import { Informer } from '../operator/src/controller/informer.ts';
import { DEPLOYMENTS, type KubeObject } from '../operator/src/controller/kube-api.ts';
import { WorkQueue } from '../operator/src/controller/work-queue.ts';
import { OperatorMetrics } from '../operator/src/observability/metrics.ts';
import { renderedKind, renderWorkload } from '../operator/src/reconciler/render.ts';
import {
  BENCH_SELECTOR,
  type BenchCluster,
  CONFIGMAPS,
  CREATE_CONCURRENCY,
  deploymentAvailable,
  emptyNamespace,
  ensureNamespace,
  Watcher,
} from './cluster.ts';
import type { ChurnTarget } from './phases/churn.ts';
import { specFor } from './phases/plan.ts';

/** Where the baselines run: not the operator's namespace, which it watches. */
export const BASELINE_NS = 'bench-baseline';

export interface EchoResult {
  /** Source ConfigMap create sent → child ConfigMap seen by this process's watch, per object (ms). */
  readonly createToChildMs: number[];
  /** Source ConfigMap create sent → the source seen by the watch: one API write and one watch event (ms). */
  readonly createToSeenMs: number[];
  /** First create sent → last child seen (ms). */
  readonly allChildrenMs: number;
  /** API requests the controller made per source. */
  readonly requestsPerSource: number;
}

/**
 * The least any operator can do: an "echo controller" in this process that watches source
 * ConfigMaps and keeps a child ConfigMap for each, level-triggered (a worker reads the source from
 * the informer cache: present, one server-side apply of the child with the source's data; gone,
 * one delete), through the operator's own Informer and WorkQueue with `workers` workers and no
 * client-side rate limit. Sources are created, edited and deleted exactly as Websites are (same
 * client, same concurrency, same churn), and a source's latency is measured exactly as a
 * Website's: create sent → child seen by a watch. Its queue wait is the operator's own histogram
 * (`workqueue_queue_duration_seconds`, in a registry of its own). What a controller adds on top
 * (finalizer, rendering, more requests, events, a rate limit) is the ratio.
 */
export class EchoController implements ChurnTarget {
  private readonly cluster: BenchCluster;
  private readonly metrics = new OperatorMetrics({ processMetrics: false });
  private readonly stopping = new AbortController();
  private readonly watcher: Watcher;
  private readonly informer: Informer<KubeObject>;
  private readonly queue: WorkQueue;
  private running?: Promise<unknown>;
  private requests = 0;

  constructor(cluster: BenchCluster, workers: number) {
    this.cluster = cluster;
    const { admin } = cluster;
    this.watcher = new Watcher(admin, CONFIGMAPS, BASELINE_NS, { labelSelector: BENCH_SELECTOR });
    this.informer = new Informer<KubeObject>({
      client: admin,
      type: CONFIGMAPS,
      namespace: BASELINE_NS,
      labelSelector: `${BENCH_SELECTOR},echo=source`,
      resyncMs: Number.POSITIVE_INFINITY,
    });
    this.queue = new WorkQueue({ name: 'echo', concurrency: workers, metrics: this.metrics });
    this.informer.on((event, source) => {
      if (event !== 'resync') this.queue.add(source.metadata!.name!);
    });
  }

  /** Starts with an empty namespace; resolves once its caches are synced. */
  static async start(cluster: BenchCluster, workers: number): Promise<EchoController> {
    await ensureNamespace(cluster, BASELINE_NS);
    await emptyNamespace(cluster, BASELINE_NS);
    const echo = new EchoController(cluster, workers);
    echo.running = Promise.all([
      echo.informer.run(echo.stopping.signal),
      echo.queue.run(async (name) => {
        const source = echo.informer.get(`${BASELINE_NS}/${name}`);
        echo.requests += 1;
        if (source) {
          await echo.cluster.admin.apply(
            CONFIGMAPS,
            {
              apiVersion: 'v1',
              kind: 'ConfigMap',
              metadata: { name: `child-${name}`, namespace: BASELINE_NS, labels: { ...LABELS, echo: 'child' } },
              data: (source as { data?: Record<string, string> }).data ?? {},
            },
            'echo',
          );
        } else {
          await echo.cluster.admin
            .delete(CONFIGMAPS, { namespace: BASELINE_NS, name: `child-${name}` })
            .catch((error) => {
              if (!isNotFound(error)) throw error;
            });
        }
      }, echo.stopping.signal),
    ]);
    await Promise.all([echo.watcher.synced(), echo.informer.waitForSync()]);
    return echo;
  }

  /** N sources created at CREATE_CONCURRENCY, until every child is seen. */
  async burst(n: number): Promise<EchoResult> {
    const names = Array.from({ length: n }, (_, i) => `echo-${String(i).padStart(5, '0')}`);
    const sentAt = new Map<string, number>();
    const requestsBefore = this.requests;
    const first = performance.now();
    await inPool(names, CREATE_CONCURRENCY, async (name, i) => {
      sentAt.set(name, performance.now());
      await this.create(name, specFor(i, 1));
    });
    await eventually('every echo child', () => names.every((name) => this.childSeenAt(name) !== undefined), {
      timeoutMs: 120_000 + n * 200,
      intervalMs: 100,
      progress: () => `${names.filter((name) => this.childSeenAt(name) !== undefined).length} of ${n}`,
    });
    return {
      createToChildMs: names.map((name) => this.childSeenAt(name)! - sentAt.get(name)!),
      createToSeenMs: names.map((name) => this.watcher.firstSeen.get(name)! - sentAt.get(name)!),
      allChildrenMs: Math.max(...names.map((name) => this.childSeenAt(name)!)) - first,
      requestsPerSource: (this.requests - requestsBefore) / n,
    };
  }

  childSeenAt(name: string): number | undefined {
    return this.watcher.firstSeen.get(`child-${name}`);
  }

  create(name: string, spec: WebsiteSpec): Promise<unknown> {
    return this.cluster.admin.create(CONFIGMAPS, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name, namespace: BASELINE_NS, labels: { ...LABELS, echo: 'source' } },
      data: specData(spec),
    });
  }

  edit(name: string, spec: WebsiteSpec): Promise<unknown> {
    return this.cluster.admin.patch(CONFIGMAPS, { namespace: BASELINE_NS, name }, 'merge', { data: specData(spec) });
  }

  remove(name: string): Promise<unknown> {
    return this.cluster.admin.delete(CONFIGMAPS, { namespace: BASELINE_NS, name });
  }

  async queueWait(): Promise<Histogram> {
    return parseHistogram(await this.metrics.registry.metrics(), 'workqueue_queue_duration_seconds', { name: 'echo' });
  }

  /** Stops the controller and empties its namespace. */
  async stop(): Promise<void> {
    this.stopping.abort();
    this.queue.shutDown();
    await this.running;
    await this.watcher.stop();
    await emptyNamespace(this.cluster, BASELINE_NS);
  }
}

const LABELS = { 'app.kubernetes.io/name': 'website' };
const specData = (spec: WebsiteSpec) => ({ title: spec.title, replicas: String(spec.replicas), color: spec.color });

export interface DirectDeploymentsResult {
  /** First create sent → last Deployment available (ms). */
  readonly allAvailableMs: number;
  /** Create sent → that Deployment available, per Deployment (ms). */
  readonly createToAvailableMs: number[];
}

/**
 * The cluster's own time to run N Websites' Deployments: the very Deployments the operator would
 * render (renderWorkload, one replica, without the owner reference), created directly at the pace
 * Websites are, until each is available (the controller manager, scheduler and kwok at work).
 */
export async function directDeploymentsBaseline(
  cluster: BenchCluster,
  n: number,
  replicas: number,
): Promise<DirectDeploymentsResult> {
  const { admin } = cluster;
  await ensureNamespace(cluster, BASELINE_NS, { 'pod-security.kubernetes.io/enforce': 'restricted' });
  await emptyNamespace(cluster, BASELINE_NS);
  const watcher = new Watcher(admin, DEPLOYMENTS, BASELINE_NS, {
    labelSelector: BENCH_SELECTOR,
    reached: deploymentAvailable,
  });
  try {
    await watcher.synced();
    const names = Array.from({ length: n }, (_, i) => `direct-${String(i).padStart(5, '0')}`);
    const sentAt = new Map<string, number>();
    const first = performance.now();
    await inPool(names, CREATE_CONCURRENCY, async (name, i) => {
      const deployment = renderedKind(
        renderWorkload({
          apiVersion: 'web.example.com/v1',
          kind: 'Website',
          metadata: { name, namespace: BASELINE_NS, uid: `00000000-0000-0000-0000-${String(i).padStart(12, '0')}` },
          spec: { title: `Website ${name}`, replicas },
        }),
        'Deployment',
      );
      delete deployment.metadata!.ownerReferences;
      sentAt.set(`website-${name}`, performance.now());
      await admin.create(DEPLOYMENTS, deployment);
    });
    await eventually('every direct Deployment to be available', () => watcher.reachedAt.size >= n, {
      timeoutMs: 600_000 + n * 1000,
      intervalMs: 100,
      progress: () => `${watcher.reachedAt.size} of ${n}`,
    });
    const deployments = [...sentAt.keys()];
    return {
      allAvailableMs: Math.max(...deployments.map((d) => watcher.reachedAt.get(d)!)) - first,
      createToAvailableMs: deployments.map((d) => watcher.reachedAt.get(d)! - sentAt.get(d)!),
    };
  } finally {
    await watcher.stop();
    await emptyNamespace(cluster, BASELINE_NS);
  }
}

/** RSS of a Node process (the same binary as the operator's) that only runs a timer. */
export async function idleNodeRss(): Promise<number> {
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
  try {
    await sleep(1500);
    return await rssBytes(child.pid!);
  } finally {
    child.kill();
  }
}
