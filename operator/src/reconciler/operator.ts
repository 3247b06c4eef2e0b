import { jsonEqual } from '../controller/apply.ts';
import { sleep } from '../controller/backoff.ts';
import { EventRecorder } from '../controller/event-recorder.ts';
import { objectKey } from '../controller/informer.ts';
import { DEPLOYMENTS, type KubeApi, type KubeObject, SERVICES } from '../controller/kube-client.ts';
import { FencedKubeApi } from '../controller/fenced-kube-api.ts';
import { LeaderElector } from '../controller/leader-election.ts';
import { MultiNamespaceInformer } from '../controller/multi-namespace-informer.ts';
import { ObjectWatches } from '../controller/object-watch.ts';
import { WorkQueue } from '../controller/work-queue.ts';
import { HealthServer, MetricsServer } from '../observability/http-servers.ts';
import type { Logger } from '../observability/logger.ts';
import type { OperatorMetrics } from '../observability/metrics.ts';
import { inSpan } from '../observability/tracing.ts';
import { ALL_NAMESPACES, MANAGED_BY, type WebsiteV1, type WebsiteWorkloadResources } from '../library.ts';
import { WebsiteReconciler, finalizerName, websitesType } from './website.ts';

/**
 * The operator process: informers on Websites and on the Deployments and Services it manages,
 * a work queue feeding the Website reconciler, leader election around the queue's workers, and
 * the metrics and probe endpoints. Every replica keeps its caches warm; only the leader reconciles.
 */

export interface OperatorConfig {
  /** API group of the Website resource. */
  readonly group: string;
  /**
   * Namespaces whose Websites are reconciled, each with informers of its own (a Role grants each),
   * or `*`: all namespaces, with cluster-wide informers (a ClusterRole grants them).
   */
  readonly watchNamespaces: readonly string[] | typeof ALL_NAMESPACES;
  /** Namespace of the Lease. */
  readonly operatorNamespace: string;
  /** This replica's identity in the Lease: the pod name. */
  readonly identity: string;
  readonly leaderElection: boolean;
  readonly leaseName: string;
  readonly leaseDurationMs: number;
  readonly renewDeadlineMs: number;
  readonly retryPeriodMs: number;
  /** Websites reconciled at once. */
  readonly concurrency: number;
  /** Every cached Website is reconciled again this often. */
  readonly resyncMs: number;
  /**
   * How long reconciling waits for caches that have neither synced nor been refused as forbidden
   * (a slow API server, say). After that it starts anyway (the reconciler reads uncached children
   * with a GET), so a missing permission shows up as a Warning event and a condition on each
   * Website instead of a silent stall.
   */
  readonly cacheSyncTimeoutMs: number;
  readonly fieldManager: string;
  readonly clusterDomain: string;
  readonly webImage?: string;
  readonly webResources?: WebsiteWorkloadResources;
  /** 0 picks a free port (tests). */
  readonly metricsPort: number;
  readonly healthPort: number;
}

/** Something else the process runs (the conversion webhook): started first, stopped last, part of readiness. */
export interface Component {
  readonly name: string;
  start(signal: AbortSignal): Promise<void>;
  stop(): Promise<void>;
  ready(): boolean;
}

export interface OperatorDependencies {
  readonly client: KubeApi;
  readonly logger: Logger;
  readonly metrics: OperatorMetrics;
  readonly components?: Component[];
}

const CONTROLLER = 'website';

/** What to do when the Website rules are missing where the operator watches. */
function forbiddenFix(namespace: string | undefined): string {
  return namespace
    ? `grant this ServiceAccount the Website rules in namespace ${namespace} (the WebsiteOperator construct's watchNamespaces creates its Role and RoleBinding; the namespace must exist), or remove ${namespace} from WATCH_NAMESPACE`
    : `grant this ServiceAccount the Website rules in all namespaces (the WebsiteOperator construct's WatchNamespaces.all() creates the ClusterRole and ClusterRoleBinding), or set WATCH_NAMESPACE to the namespaces it is granted`;
}

export class Operator {
  readonly metricsServer: MetricsServer;
  readonly healthServer: HealthServer;
  readonly websites: MultiNamespaceInformer<WebsiteV1 & KubeObject>;
  readonly queue: WorkQueue;
  private readonly deployments: MultiNamespaceInformer<KubeObject>;
  private readonly services: MultiNamespaceInformer<KubeObject>;
  private readonly elector?: LeaderElector;
  private readonly reconciler: WebsiteReconciler;
  private readonly recorder: EventRecorder;
  private readonly foreignChildren: ObjectWatches;
  private readonly config: OperatorConfig;
  private readonly deps: OperatorDependencies;
  private readonly stopping = new AbortController();
  private running: Promise<unknown> = Promise.resolve();

  constructor(config: OperatorConfig, deps: OperatorDependencies) {
    this.config = config;
    this.deps = deps;
    const { client, logger, metrics } = deps;
    const namespaces = config.watchNamespaces === ALL_NAMESPACES ? undefined : config.watchNamespaces;
    const common = { client, namespaces, resyncMs: config.resyncMs, forbiddenFix, logger, metrics };
    this.websites = new MultiNamespaceInformer({ ...common, type: websitesType(config.group) });
    const managed = `app.kubernetes.io/managed-by=${MANAGED_BY}`;
    this.deployments = new MultiNamespaceInformer({ ...common, type: DEPLOYMENTS, labelSelector: managed, resyncMs: Number.POSITIVE_INFINITY });
    this.services = new MultiNamespaceInformer({ ...common, type: SERVICES, labelSelector: managed, resyncMs: Number.POSITIVE_INFINITY });
    this.queue = new WorkQueue({ name: CONTROLLER, concurrency: config.concurrency, metrics, logger });
    // With leader election, the reconciler's writes and its Events go out only on a fresh Lease
    // (LeaderElector.fence): a replica resumed from a pause writes nothing beside the new leader.
    const writer = config.leaderElection ? new FencedKubeApi(client, () => this.elector?.fence()) : client;
    this.recorder = new EventRecorder({ client: writer, component: MANAGED_BY, instance: config.identity, logger });
    this.foreignChildren = new ObjectWatches({ client, logger });
    this.reconciler = new WebsiteReconciler({
      client: writer,
      group: config.group,
      websites: this.websites,
      deployments: this.deployments,
      services: this.services,
      recorder: this.recorder,
      fieldManager: config.fieldManager,
      clusterDomain: config.clusterDomain,
      render: { image: config.webImage, resources: config.webResources },
      // A child's name taken by another owner ends the reconcile with a TerminalError: no retries,
      // which could not help. What brings the Website back is a change to it (its informer), the
      // periodic resync, or a change to that object: the child informers hold only objects with
      // our managed-by label, so a watch of that one object by name (under the same Role) does.
      onForeignChild: (website, type, child) =>
        this.foreignChildren.watch(`${objectKey(website)} ${type.resource}`, type, child, () => this.queue.add(objectKey(website))),
      logger,
    });
    if (config.leaderElection) {
      this.elector = new LeaderElector({
        client,
        namespace: config.operatorNamespace,
        name: config.leaseName,
        identity: config.identity,
        leaseDurationMs: config.leaseDurationMs,
        renewDeadlineMs: config.renewDeadlineMs,
        retryPeriodMs: config.retryPeriodMs,
        logger,
        metrics,
      });
    }
    this.metricsServer = new MetricsServer(metrics);
    // A readiness check per namespace, so /readyz names the namespace whose caches are missing.
    this.healthServer = new HealthServer([
      ...[...this.websites.informers.keys()].map((namespace) => ({
        name: namespace === '*' ? 'caches' : `caches of namespace ${namespace}`,
        ok: () => this.synced(namespace),
      })),
      // Shown, never failing. Readiness takes a pod out of the webhook Service's endpoints and holds
      // up a rollout; a standby of a 2-replica Deployment is healthy while it stands by, and so is
      // one that cannot read or take the Lease: it still serves conversions and keeps its caches
      // warm, and taking it out would stall the rollout that may carry the fix. client-go's
      // leaderelection.NewLeaderHealthzAdaptor fails only a leader whose renewals are overdue,
      // which this elector never is (it stops leading at renewDeadline). What tells a person is
      // this detail, the error log at each attempt, and leader_election_not_leading_seconds.
      { name: 'leader-election', ok: () => true, detail: () => this.leaderElectionDetail() },
      ...(deps.components ?? []).map((component) => ({ name: component.name, ok: () => component.ready() })),
    ]);

    for (const namespace of this.websites.informers.keys()) {
      metrics.namespaceSynced.set({ namespace }, 0);
      const caches = [this.websites, this.deployments, this.services].map((informer) => informer.informers.get(namespace)!.waitForSync());
      void Promise.all(caches).then(() => metrics.namespaceSynced.set({ namespace }, 1));
    }

    // Level-triggered: every change of a Website, or of a child (mapped to its owner), enqueues
    // the Website's key; the reconciler then reads the whole current state. Periodic resyncs and
    // the Websites of the first list wait behind new and changed ones.
    // The reconciler's own writes to a Website (its status, adding its finalizer) are no change to
    // reconcile: the reconcile that wrote them went on with the rest, so another would only reach
    // the same result (a TerminalError logged twice for one change).
    const finalizer = finalizerName(config.group);
    this.websites.on((event, website, initialList, previous) => {
      if (event === 'update' && previous && onlyOwnWrites(previous, website, finalizer)) return;
      this.queue.add(objectKey(website), event === 'resync' || initialList ? 'low' : 'high');
    });
    const toOwner = (_: string, child: KubeObject) => {
      const owner = child.metadata?.ownerReferences?.find((ref) => ref.controller && ref.kind === 'Website' && ref.apiVersion.startsWith(`${config.group}/`));
      if (owner) this.queue.add(`${child.metadata!.namespace}/${owner.name}`);
    };
    this.deployments.on(toOwner);
    this.services.on(toOwner);
  }

  /** Objects watched because they block a Website's reconcile (see onForeignChild). */
  get foreignChildWatches(): number {
    return this.foreignChildren.size;
  }

  isLeader(): boolean {
    return this.elector ? this.elector.isLeader() : true;
  }

  /** The leader-election line of /readyz: "leading", or for how long not, held by whom, or why. */
  private leaderElectionDetail(): string {
    if (!this.elector) return 'off (LEADER_ELECTION=false): this replica reconciles';
    const status = this.elector.status();
    if (status.leading) return `leading: Lease ${status.lease}`;
    if (status.notLeadingSince === undefined) return `not campaigning yet (waiting for the caches): Lease ${status.lease}`;
    const seconds = Math.round((Date.now() - status.notLeadingSince) / 1000);
    if (status.error) return `not leading for ${seconds} s: Lease ${status.lease}: ${status.error}`;
    return `standing by for ${seconds} s: Lease ${status.lease} held by ${status.holder ?? 'no one yet'}`;
  }

  /** Whether every cache (of `namespace` only, or `*` for the cluster-wide ones) has synced. */
  synced(namespace?: string): boolean {
    return [this.websites, this.deployments, this.services].every((informer) =>
      namespace === undefined ? informer.hasSynced() : informer.informers.get(namespace)?.hasSynced(),
    );
  }

  /** Starts serving, caching and (once leader) reconciling; resolves when the endpoints listen. */
  async start(): Promise<void> {
    const { logger } = this.deps;
    const signal = this.stopping.signal;
    await this.metricsServer.start(this.config.metricsPort);
    await this.healthServer.start(this.config.healthPort);
    for (const component of this.deps.components ?? []) await component.start(signal);
    const informers = [this.websites, this.deployments, this.services].map((informer) => informer.run(signal));
    const reconciling = (async () => {
      // Each namespace's caches sync on their own, and one the operator may not list (not granted)
      // must not hold up the others: reconciling starts once every cache has synced or been
      // refused, or after the timeout; a late namespace's Websites are reconciled once it syncs.
      const caches = [this.websites, this.deployments, this.services].map((informer) => informer.waitUntilSyncedOrForbidden());
      await Promise.race([Promise.all(caches), sleep(this.config.cacheSyncTimeoutMs, signal)]);
      if (signal.aborted) return;
      const namespaces = this.config.watchNamespaces;
      const unsynced = [...this.websites.informers.keys()].filter((namespace) => !this.synced(namespace));
      if (unsynced.length === 0) logger.info({ websites: this.websites.list().length, namespaces }, 'caches synced');
      else logger.warn({ timeoutMs: this.config.cacheSyncTimeoutMs, unsynced }, 'caches not synced (see the list/watch errors); reconciling without them');
      if (this.elector) await this.elector.run(signal, (leadership, lease) => this.reconcileWhile(leadership, lease));
      else await this.reconcileWhile(signal);
    })();
    this.running = Promise.all([...informers, reconciling]);
    logger.info({ metricsPort: this.metricsServer.port, healthPort: this.healthServer.port, leaderElection: this.config.leaderElection, identity: this.config.identity }, 'operator started');
  }

  /** Graceful stop: reconciles in flight finish, their events are written, the Lease is released, then the endpoints close. */
  async stop(): Promise<void> {
    this.stopping.abort();
    this.foreignChildren.stop();
    await this.running;
    await this.recorder.flush();
    for (const component of [...(this.deps.components ?? [])].reverse()) await component.stop();
    await this.healthServer.stop();
    await this.metricsServer.stop();
  }

  /**
   * Runs the queue's workers until `signal` aborts; starts by enqueuing every known Website.
   * `lease` aborting (the Lease lost) aborts the requests of the reconciles in flight.
   */
  private async reconcileWhile(signal: AbortSignal, lease?: AbortSignal): Promise<void> {
    const { logger } = this.deps;
    for (const website of this.websites.list()) this.queue.add(objectKey(website), 'low');
    logger.info({ websites: this.websites.list().length }, 'reconciling');
    // The queue decides what the outcome means (success, retry with backoff, terminal), logs it and counts it.
    await this.queue.run((key, abort) => {
      const [namespace, name] = key.split('/');
      return inSpan('reconcile Website', { attributes: { 'k8s.namespace.name': namespace, 'website.name': name, 'website.retries': this.queue.failuresOf(key) } }, () => this.reconciler.reconcile(key, abort));
    }, signal, lease);
    // The reconciles' Events go out while the Lease is still held (renewals go on until this
    // returns); once it is released or lost, the fence refuses them.
    await this.recorder.flush();
    logger.info('stopped reconciling');
  }
}

/** True when `before` and `after` differ only in status, resourceVersion and `finalizer` added. */
function onlyOwnWrites(before: KubeObject, after: KubeObject, finalizer: string): boolean {
  // Someone else removing it is a change: the Website must get it back.
  if ((before.metadata?.finalizers ?? []).includes(finalizer) && !(after.metadata?.finalizers ?? []).includes(finalizer)) return false;
  const rest = (object: KubeObject) => ({
    ...object,
    status: undefined,
    metadata: { ...object.metadata, resourceVersion: undefined, finalizers: (object.metadata?.finalizers ?? []).filter((f) => f !== finalizer) },
  });
  return jsonEqual(rest(before), rest(after));
}
