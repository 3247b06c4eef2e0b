// A controller under test, described by a small adapter: everything `npm run bench` needs to know to
// give any controller that turns a Website into a Deployment the same phases and figures (burst,
// steady state, sustained churn, memory, CPU, API requests). The website operator
// (bench/operator.ts) and kro (bench/kro.ts) are two; docs/measure/benchmarks.md ("Adding a controller") says
// how to write another.

import type { WebsiteSpec } from '../harness/cluster/website.ts';
import type { KubeObject, ResourceType } from '../operator/src/controller/kube-api.ts';
import type { BenchCluster } from './cluster.ts';

/** A running controller, as the benchmark observes it from outside. */
export interface PeerProcess {
  /** Its operating-system process: RSS and CPU time are read from /proc/<pid>. */
  readonly pid: number;
  /** Its Prometheus endpoint, e.g. "http://127.0.0.1:8078/metrics": the queue wait histogram is read there. */
  readonly metricsUrl: string;
  /** SIGTERM, and resolves once it has exited (SIGKILL if it has not after a while). */
  stop(): Promise<void>;
  /** Node peers: V8 heap in use right after a full garbage collection, in bytes (bench/inspector.ts). */
  heapAfterGc?(): Promise<number>;
}

/** Where and how the benchmark asks a peer to run. */
export interface PeerContext {
  readonly cluster: BenchCluster;
  readonly log: (message: string) => void;
}

export interface Peer {
  /** Column title, e.g. "website-operator" or "kro v0.9.4". */
  readonly title: string;
  /** Said under the report's table: how it runs (binary, version, flags, settings). */
  readonly description: string;
  /** The Website resource the controller reconciles. */
  readonly websites: ResourceType;
  /**
   * The namespace Websites are created in: the controller must watch it, and the benchmark
   * empties it (Websites, Deployments, ReplicaSets, Services, Pods, Events) between runs.
   */
  readonly namespace: string;
  /**
   * The user the controller authenticates as, as the API server's audit log names it, e.g.
   * "system:serviceaccount:website-system:website-operator". API requests per Website are counted
   * from the audit log by this name, so it must be a ServiceAccount (the bench cluster's audit
   * policy logs ServiceAccounts' requests only) that nothing else uses.
   */
  readonly user: string;
  /**
   * The controller's work-queue wait histogram (the name without `_bucket`), and the labels that
   * select the Website controller's queue: controller-runtime and the website operator both call
   * it `workqueue_queue_duration_seconds`, labelled `name`.
   */
  readonly queueWait: { readonly metric: string; readonly labels?: Readonly<Record<string, string>> };
  /** Once per cluster, before anything else: CRDs, RBAC, definitions; waits until they are in effect. */
  install(context: PeerContext): Promise<void>;
  /** Starts the controller; resolves once it is ready to reconcile (caches synced, leading if it elects). */
  start(context: PeerContext): Promise<PeerProcess>;
  /** A new Website, in `namespace`, for the benchmark to create. */
  website(name: string, spec: WebsiteSpec): KubeObject;
  /** A JSON merge patch that changes an existing Website to `spec` (the churn's edits). */
  edit(spec: WebsiteSpec): Record<string, unknown>;
  /** The name of the Deployment the Website `name` gets (in the same namespace). */
  deploymentName(website: string): string;
  /** Whether the Website, as the API returns it, is Ready for its current spec. */
  ready(website: KubeObject): boolean;
}

/** The audit log's name for a ServiceAccount. */
export function serviceAccountUser(namespace: string, name: string): string {
  return `system:serviceaccount:${namespace}:${name}`;
}
