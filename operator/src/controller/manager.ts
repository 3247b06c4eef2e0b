import { HealthServer, MetricsServer } from '../observability/http-servers.ts';
import type { Logger } from '../observability/logger.ts';
import type { OperatorMetrics } from '../observability/metrics.ts';
import { sleep } from './backoff.ts';
import { EventRecorder } from './event-recorder.ts';
import { FencedKubeApi } from './fenced-kube-api.ts';
import type { KubeApi, KubeObject, ResourceType } from './kube-api.ts';
import { LeaderElector } from './leader-election.ts';
import { MultiNamespaceInformer } from './multi-namespace-informer.ts';

/**
 * The operator process, as controller-runtime's Manager: the informers (its cache) over the
 * watched namespaces, the metrics and probe endpoints, leader election, and the controllers
 * (controller.ts) that reconcile while this replica leads. Every replica keeps its caches warm;
 * only the leader reconciles.
 */

export interface ManagerConfig {
  /**
   * Namespaces watched, each with informers of its own (a Role grants each), or `*`: all
   * namespaces, with cluster-wide informers (a ClusterRole grants them).
   */
  readonly watchNamespaces: readonly string[] | '*';
  /** Namespace of the Lease. */
  readonly operatorNamespace: string;
  /** This replica's identity in the Lease and its Events: the pod name. */
  readonly identity: string;
  readonly leaderElection: boolean;
  readonly leaseName: string;
  readonly leaseDurationMs: number;
  readonly renewDeadlineMs: number;
  readonly retryPeriodMs: number;
  /** Every cached object is handed to the controllers again this often (informers asked for it). */
  readonly resyncMs: number;
  /** Informers fill their caches from streaming lists (InformerOptions.watchList). */
  readonly watchList: boolean;
  /**
   * How long reconciling waits for caches that have neither synced nor been refused as forbidden
   * (a slow API server, say). After that it starts anyway (a reconciler reads uncached objects
   * with a GET), so a missing permission shows up where the reconciler reports failures instead
   * of as a silent stall.
   */
  readonly cacheSyncTimeoutMs: number;
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

export interface ManagerDependencies {
  readonly client: KubeApi;
  readonly logger: Logger;
  readonly metrics: OperatorMetrics;
  readonly components?: Component[];
}

export interface InformerRequest {
  /**
   * The namespaces to watch.
   * @default the manager's watchNamespaces
   */
  readonly namespaces?: readonly string[];
  /**
   * Only objects matching this label selector.
   * @default every object
   */
  readonly labelSelector?: string;
  /**
   * Whether the cached objects are handed to the handlers every `resyncMs` (a controller's
   * primary type); owned objects reach their owner's reconcile anyway.
   * @default true
   */
  readonly resync?: boolean;
  /** What to do when list or watch in `namespace` (undefined: all namespaces) is forbidden. */
  readonly forbiddenFix?: (namespace: string | undefined) => string;
  /** What to do when the API server does not serve the resource (InformerOptions.notFoundFix). */
  readonly notFoundFix?: string;
  /** What of each object the cache keeps (InformerOptions.transform). */
  readonly transform?: (object: KubeObject) => KubeObject;
}

/** What the Manager runs while this replica leads: a controller's workers. */
export interface Runnable {
  /** Reconciles until `signal` aborts; `lease` aborting (the Lease lost) aborts the work in flight. */
  run(signal: AbortSignal, lease?: AbortSignal): Promise<void>;
  /** Ends what the runnable keeps besides its workers (watches of single objects). */
  stop(): void;
}

/** What the Manager needs of each informer, whatever its object type: running it, and its sync state per namespace. */
type ManagedInformer = Pick<MultiNamespaceInformer<KubeObject>, 'run' | 'hasSynced' | 'waitUntilSyncedOrForbidden'> & {
  readonly informers: ReadonlyMap<string, { hasSynced(): boolean; waitForSync(): Promise<void> }>;
};

export class Manager {
  readonly metricsServer: MetricsServer;
  readonly healthServer: HealthServer;
  /**
   * The client for reconcilers' writes. With leader election, writes go out only on a fresh
   * Lease (LeaderElector.fence): a replica resumed from a pause writes nothing beside the new leader.
   */
  readonly writer: KubeApi;
  readonly config: ManagerConfig;
  readonly deps: ManagerDependencies;
  private readonly informers: ManagedInformer[] = [];
  private readonly recorders: EventRecorder[] = [];
  private readonly runnables: Runnable[] = [];
  private readonly elector?: LeaderElector;
  private readonly stopping = new AbortController();
  private running: Promise<unknown> = Promise.resolve();

  constructor(config: ManagerConfig, deps: ManagerDependencies) {
    this.config = config;
    this.deps = deps;
    const { client, logger, metrics } = deps;
    this.writer = config.leaderElection ? new FencedKubeApi(client, () => this.elector?.fence()) : client;
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
      ...this.namespaceKeys().map((namespace) => ({
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
  }

  /** An informer of `type` over the watched namespaces; call before start(). */
  informer<T extends KubeObject = KubeObject>(
    type: ResourceType,
    request: InformerRequest = {},
  ): MultiNamespaceInformer<T> {
    const { client, logger, metrics } = this.deps;
    const namespaces =
      request.namespaces ?? (this.config.watchNamespaces === '*' ? undefined : this.config.watchNamespaces);
    // Infinity: no periodic resync.
    const resyncMs = request.resync === false ? Number.POSITIVE_INFINITY : this.config.resyncMs;
    const informer = new MultiNamespaceInformer<T>({
      client,
      namespaces,
      type,
      labelSelector: request.labelSelector,
      resyncMs,
      watchList: this.config.watchList,
      forbiddenFix: request.forbiddenFix,
      notFoundFix: request.notFoundFix,
      transform: request.transform,
      logger,
      metrics,
    });
    this.informers.push(informer);
    return informer;
  }

  /** An EventRecorder writing through `writer`, flushed while the Lease is still held. */
  eventRecorder(component: string): EventRecorder {
    const recorder = new EventRecorder({
      client: this.writer,
      component,
      instance: this.config.identity,
      logger: this.deps.logger,
    });
    this.recorders.push(recorder);
    return recorder;
  }

  /** Runs `runnable` while this replica leads; call before start(). */
  add(runnable: Runnable): void {
    this.runnables.push(runnable);
  }

  isLeader(): boolean {
    return this.elector ? this.elector.isLeader() : true;
  }

  /**
   * Whether every cache (of `namespace` only, or `*` for the cluster-wide ones) has synced. An
   * informer of other namespaces (the Gateway's) has nothing there to wait for.
   */
  synced(namespace?: string): boolean {
    return this.informers.every((informer) =>
      namespace === undefined ? informer.hasSynced() : (informer.informers.get(namespace)?.hasSynced() ?? true),
    );
  }

  /** Starts serving, caching and (once leader) reconciling; resolves when the endpoints listen. */
  async start(): Promise<void> {
    const { logger, metrics } = this.deps;
    const signal = this.stopping.signal;
    await this.metricsServer.start(this.config.metricsPort);
    await this.healthServer.start(this.config.healthPort);
    for (const component of this.deps.components ?? []) await component.start(signal);
    for (const namespace of this.namespaceKeys()) {
      metrics.namespaceSynced.set({ namespace }, 0);
      const caches = this.informers.map((informer) => informer.informers.get(namespace)?.waitForSync());
      void Promise.all(caches).then(() => metrics.namespaceSynced.set({ namespace }, 1));
    }
    const informers = this.informers.map((informer) => informer.run(signal));
    const reconciling = (async () => {
      // Each namespace's caches sync on their own, and one the operator may not list (not granted)
      // must not hold up the others: reconciling starts once every cache has synced or been
      // refused, or after the timeout; a late namespace's objects are reconciled once it syncs.
      const caches = this.informers.map((informer) => informer.waitUntilSyncedOrForbidden());
      await Promise.race([Promise.all(caches), sleep(this.config.cacheSyncTimeoutMs, signal)]);
      if (signal.aborted) return;
      const namespaces = this.config.watchNamespaces;
      const unsynced = this.namespaceKeys().filter((namespace) => !this.synced(namespace));
      if (unsynced.length === 0) logger.info({ namespaces }, 'caches synced');
      else
        logger.warn(
          { timeoutMs: this.config.cacheSyncTimeoutMs, unsynced },
          'caches not synced (see the list/watch errors); reconciling without them',
        );
      if (this.elector) await this.elector.run(signal, (leadership, lease) => this.reconcileWhile(leadership, lease));
      else await this.reconcileWhile(signal);
    })();
    this.running = Promise.all([...informers, reconciling]);
    logger.info(
      {
        metricsPort: this.metricsServer.port,
        healthPort: this.healthServer.port,
        leaderElection: this.config.leaderElection,
        identity: this.config.identity,
      },
      'operator started',
    );
  }

  /** Graceful stop: reconciles in flight finish, their events are written, the Lease is released, then the endpoints close. */
  async stop(): Promise<void> {
    this.stopping.abort();
    for (const runnable of this.runnables) runnable.stop();
    await this.running;
    await this.flushEvents();
    for (const component of [...(this.deps.components ?? [])].reverse()) await component.stop();
    await this.healthServer.stop();
    await this.metricsServer.stop();
  }

  private async reconcileWhile(signal: AbortSignal, lease?: AbortSignal): Promise<void> {
    await Promise.all(this.runnables.map((runnable) => runnable.run(signal, lease)));
    // The reconciles' Events go out while the Lease is still held (renewals go on until this
    // returns); once it is released or lost, the fence refuses them.
    await this.flushEvents();
    this.deps.logger.info('stopped reconciling');
  }

  private async flushEvents(): Promise<void> {
    await Promise.all(this.recorders.map((recorder) => recorder.flush()));
  }

  /** The keys of the per-namespace informers: the watched namespaces, or `*`. */
  private namespaceKeys(): string[] {
    return this.config.watchNamespaces === '*' ? ['*'] : [...this.config.watchNamespaces];
  }

  /** The leader-election line of /readyz: "leading", or for how long not, held by whom, or why. */
  private leaderElectionDetail(): string {
    if (!this.elector) return 'off (LEADER_ELECTION=false): this replica reconciles';
    const status = this.elector.status();
    if (status.leading) return `leading: Lease ${status.lease}`;
    if (status.notLeadingSince === undefined)
      return `not campaigning yet (waiting for the caches): Lease ${status.lease}`;
    const seconds = Math.round((Date.now() - status.notLeadingSince) / 1000);
    if (status.error) return `not leading for ${seconds} s: Lease ${status.lease}: ${status.error}`;
    return `standing by for ${seconds} s: Lease ${status.lease} held by ${status.holder ?? 'no one yet'}`;
  }
}
