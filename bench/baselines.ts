// What the operator's figures are divided by: the same cluster doing the same amount of work
// without the operator, measured in the same run (these machines are too noisy for absolute
// numbers to mean much from one run to the next).
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { sleep } from '../operator/src/controller/backoff.ts';
import { Informer } from '../operator/src/controller/informer.ts';
import { DEPLOYMENTS, type KubeObject } from '../operator/src/controller/kube-client.ts';
import { WorkQueue } from '../operator/src/controller/work-queue.ts';
import { renderWorkload } from '../operator/src/reconciler/render.ts';
import { BENCH_SELECTOR, type BenchCluster, CONFIGMAPS, Watcher, deploymentAvailable, emptyNamespace, ensureNamespace, inPool, waitFor } from './cluster.ts';

/** Where the baselines run: not the operator's namespace, which it watches. */
export const BASELINE_NS = 'bench-baseline';
/** Creates in flight at once, for Websites and for the baselines' objects alike. */
export const CREATE_CONCURRENCY = 8;

export interface EchoResult {
  /** Source ConfigMap create sent → child ConfigMap seen by this process's watch, per object (ms). */
  readonly createToChildMs: number[];
  /** Source ConfigMap create sent → the source seen by the watch: one API write and one watch event (ms). */
  readonly createToSeenMs: number[];
  /** First create sent → last child seen (ms). */
  readonly allChildrenMs: number;
}

/**
 * The least any operator can do: an "echo controller" in this process that watches ConfigMaps and,
 * for each new source, creates a child through a work queue with `workers` workers and no
 * client-side rate limit. N sources are created exactly as the Websites are (same client, same
 * concurrency), and a source's latency is measured exactly as a Website's: create sent → child
 * seen by a watch. What the operator adds on top (finalizer, rendering, apply, events, its rate
 * limit) is the ratio.
 */
export async function echoBaseline(cluster: BenchCluster, n: number, workers: number): Promise<EchoResult> {
  const { admin } = cluster;
  await ensureNamespace(cluster, BASELINE_NS);
  await emptyNamespace(cluster, BASELINE_NS);
  const labels = { 'app.kubernetes.io/name': 'website' };
  const stopping = new AbortController();
  // Sources and children, timestamped by this process.
  const watcher = new Watcher(admin, CONFIGMAPS, BASELINE_NS, { labelSelector: BENCH_SELECTOR });
  // The controller: the operator's own Informer and WorkQueue classes.
  const informer = new Informer<KubeObject>({ client: admin, type: CONFIGMAPS, namespace: BASELINE_NS, labelSelector: `${BENCH_SELECTOR},echo=source`, resyncMs: Number.POSITIVE_INFINITY });
  const queue = new WorkQueue({ name: 'echo', concurrency: workers });
  informer.on((event, source) => {
    if (event === 'add') queue.add(source.metadata!.name!);
  });
  const running = Promise.all([
    informer.run(stopping.signal),
    queue.run(async (name) => {
      await admin.create(CONFIGMAPS, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `child-${name}`, namespace: BASELINE_NS, labels: { ...labels, echo: 'child' } } });
    }, stopping.signal),
  ]);
  try {
    await Promise.all([watcher.synced(), informer.waitForSync()]);
    const names = Array.from({ length: n }, (_, i) => `echo-${String(i).padStart(5, '0')}`);
    const sentAt = new Map<string, number>();
    const first = performance.now();
    await inPool(names, CREATE_CONCURRENCY, async (name) => {
      sentAt.set(name, performance.now());
      await admin.create(CONFIGMAPS, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: BASELINE_NS, labels: { ...labels, echo: 'source' } } });
    });
    await waitFor('every echo child', () => names.every((name) => watcher.firstSeen.has(`child-${name}`)), 120_000 + n * 200, () => `${names.filter((name) => watcher.firstSeen.has(`child-${name}`)).length} of ${n}`);
    return {
      createToChildMs: names.map((name) => watcher.firstSeen.get(`child-${name}`)! - sentAt.get(name)!),
      createToSeenMs: names.map((name) => watcher.firstSeen.get(name)! - sentAt.get(name)!),
      allChildrenMs: Math.max(...names.map((name) => watcher.firstSeen.get(`child-${name}`)!)) - first,
    };
  } finally {
    stopping.abort();
    queue.shutDown();
    await running;
    await watcher.stop();
    await emptyNamespace(cluster, BASELINE_NS);
  }
}

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
export async function directDeploymentsBaseline(cluster: BenchCluster, n: number, replicas: number): Promise<DirectDeploymentsResult> {
  const { admin } = cluster;
  await ensureNamespace(cluster, BASELINE_NS, { 'pod-security.kubernetes.io/enforce': 'restricted' });
  await emptyNamespace(cluster, BASELINE_NS);
  const watcher = new Watcher(admin, DEPLOYMENTS, BASELINE_NS, { labelSelector: BENCH_SELECTOR, reached: deploymentAvailable });
  try {
    await watcher.synced();
    const names = Array.from({ length: n }, (_, i) => `direct-${String(i).padStart(5, '0')}`);
    const sentAt = new Map<string, number>();
    const first = performance.now();
    await inPool(names, CREATE_CONCURRENCY, async (name, i) => {
      const { deployment } = renderWorkload({
        apiVersion: 'web.example.com/v1',
        kind: 'Website',
        metadata: { name, namespace: BASELINE_NS, uid: `00000000-0000-0000-0000-${String(i).padStart(12, '0')}` },
        spec: { title: `Website ${name}`, replicas },
      });
      delete deployment.metadata!.ownerReferences;
      sentAt.set(`website-${name}`, performance.now());
      await admin.create(DEPLOYMENTS, deployment);
    });
    await waitFor('every direct Deployment to be available', () => watcher.reachedAt.size >= n, 600_000 + n * 1000, () => `${watcher.reachedAt.size} of ${n}`);
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

/** VmRSS of a process, in bytes. */
export async function rssOf(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kib = /^VmRSS:\s+(\d+) kB$/m.exec(status);
  if (!kib) throw new Error(`no VmRSS in /proc/${pid}/status`);
  return Number(kib[1]) * 1024;
}

/** RSS of a Node process (the same binary as the operator's) that only runs a timer. */
export async function idleNodeRss(): Promise<number> {
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
  try {
    await sleep(1500);
    return await rssOf(child.pid!);
  } finally {
    child.kill();
  }
}
