import { isAlreadyExists, isConflict, isNotFound } from '../controller/api-error.ts';
import { firstDifference, jsonEqual, needsApply, withHash } from '../controller/apply.ts';
import type { EventRecorder } from '../controller/event-recorder.ts';
import { type Cache, objectKey } from '../controller/informer.ts';
import type { CallOptions, KubeApi, KubeObject, ResourceType } from '../controller/kube-api.ts';
import { TerminalError } from '../controller/terminal-error.ts';
import type { HandlerResult } from '../controller/work-queue.ts';
import {
  type GatewayListener,
  MANAGED_BY,
  type OwnedKind,
  type RouteParentStatus,
  routeScheme,
  routeState,
  type WebsiteGateway,
  type WebsiteRoute,
  type WebsiteStatus,
  type WebsiteV1,
  websiteHost,
  websiteHostProblem,
  websiteOwns,
  websiteUrl,
  workloadName,
} from '../library.ts';
import type { Logger } from '../observability/logger.ts';
import { inSyncSpan } from '../observability/tracing.ts';
import type { HostClaims } from './host-claims.ts';
import { type RenderedChild, type RenderOptions, renderWorkload } from './render.ts';
import { failedCondition, nextStatus, READY_REASONS, readyCondition, routeCondition } from './status.ts';

/**
 * The Website reconciler: spec §4 operator rules 2–4 and the finalizer workflow of §3. It reads
 * every object from the informers' caches and writes only what would change, as early as it can:
 * the finalizer and both children go out together; a child the synced cache does not have is
 * created without reading it first; events are written in the background. Its only state is the
 * status it last wrote to each Website (see writeStatus); any restart converges.
 */

export function websitesType(group: string): ResourceType {
  return { group, version: 'v1', resource: 'websites' };
}

/** Websites whose rendered children WebsiteReconciler keeps: a burst's recent ones (about 4 KiB each). */
export const RENDER_MEMO_SIZE = 256;

export function finalizerName(group: string): string {
  return `websites.${group}/cleanup`;
}

/**
 * The annotation a writer of a Website may set to the W3C `traceparent` of the span that wrote it
 * (a CI job's deploy step): the reconciles of that Website link to that span
 * (docs/use/control-plane-tracing.md).
 */
export function traceparentAnnotationName(group: string): string {
  return `websites.${group}/traceparent`;
}

export interface WebsiteReconcilerOptions {
  readonly client: KubeApi;
  readonly group: string;
  readonly websites: Cache<WebsiteV1 & KubeObject>;
  /**
   * One cache per kind a Website owns (websiteOwns), by kind. They hold only children with the managed-by
   * label: anything else of their names is not seen.
   */
  readonly children: ReadonlyMap<string, Cache<KubeObject>>;
  readonly recorder: EventRecorder;
  /** Server-side apply field manager of the children. */
  readonly fieldManager: string;
  /** Cluster DNS domain of `status.url`. */
  readonly clusterDomain: string;
  /** Web server image and resources of the children. */
  readonly render?: Omit<RenderOptions, 'group' | 'route'>;
  /**
   * The platform's Gateway: each Website gets an HTTPRoute attached to it (then a kind of
   * `children` too), and `status.url` its address once the Gateway accepts the route.
   * @default no routes: `status.url` is the Service's in-cluster address
   */
  readonly gateway?: WebsiteRouting;
  /**
   * Told of a child's name taken by an object the Website does not own (the reconcile then ends
   * with a TerminalError, not retried): whoever reconciles must requeue the Website when that
   * object changes, since the label-selected caches do not see it.
   */
  readonly onForeignChild?: (website: WebsiteV1 & KubeObject, type: ResourceType, child: KubeObject) => void;
  readonly logger?: Logger;
}

/** What the reconciler needs to route Websites through the platform's Gateway. */
export interface WebsiteRouting {
  readonly gateway: WebsiteGateway;
  /** Which Website holds each host (kept from the Website and route informers). */
  readonly hosts: HostClaims;
  /** The Gateways of the Gateway's namespace, by key: its listeners tell http from https. */
  readonly gateways: Cache<KubeObject>;
}

/** Why a Website gets no route: its host is not allowed, or another Website holds it. */
interface RouteWithheld {
  readonly reason: 'HostNotAllowed' | 'HostConflict';
  readonly message: string;
}

/** What ensuring one child did. */
interface ChildOutcome {
  readonly kind: string;
  readonly name: string;
  /** The child as stored after this reconcile. */
  readonly object: KubeObject;
  readonly change?: 'Created' | 'Updated';
}

export class WebsiteReconciler {
  private readonly options: WebsiteReconcilerOptions;
  private readonly type: ResourceType;
  private readonly finalizer: string;
  private readonly hashAnnotation: string;
  /**
   * The status this process last wrote to each Website, until the cache shows it. Until then the
   * cached status is older than the stored one (the Website's watch lags, or is silent until its
   * inactivity timeout), and the cache catching up reconciles nothing (a status-only change is the
   * reconciler's own write): so the cache alone cannot tell that a write is unneeded. `unknown`:
   * the last write failed, and may or may not have landed.
   */
  private readonly statusUnseen = new Map<string, WebsiteStatus | 'unknown'>();
  /**
   * The children last rendered (with their hash) for the most recent Websites, while their uid and
   * generation hold (what a render reads of a Website: its name, namespace, uid and spec). A new
   * Website's reconcile is followed within moments by reconciles for its children's events
   * (created, then available), each of which would render and hash the same objects again (cdk8s
   * resolves and copies every field; about 0.1 ms a render in the benchmark). The newest
   * RENDER_MEMO_SIZE only, so that memory does not grow with the Websites held. Reads refresh.
   */
  private readonly renders = new Map<
    string,
    { uid: string; generation: number; host: string | undefined; children: RenderedChild[] }
  >();
  /** Every kind a Website owns under this operator: with a Gateway, its HTTPRoute too. */
  private readonly owns: readonly OwnedKind[];

  constructor(options: WebsiteReconcilerOptions) {
    this.options = options;
    this.type = websitesType(options.group);
    this.finalizer = finalizerName(options.group);
    this.hashAnnotation = `websites.${options.group}/applied-hash`;
    this.owns = websiteOwns(options.gateway !== undefined);
  }

  /**
   * Reconciles the Website `namespace/name`; throws to be retried with backoff, or a TerminalError
   * when only a person can fix what failed (a child's name taken by another owner).
   */
  // biome-ignore lint/suspicious/noConfusingVoidType: a handler that asks for nothing returns nothing, as most do.
  async reconcile(key: string, signal?: AbortSignal): Promise<HandlerResult | void> {
    // 1. Fetch the Website. Not found: it is gone, and owner references take its children along.
    const website = this.options.websites.get(key);
    if (!website) {
      this.statusUnseen.delete(key);
      this.renders.delete(key);
      return;
    }
    // `signal` aborts every request of this reconcile: its writes must not land once the Lease
    // may have passed to another replica.
    const call = { signal };
    if (website.metadata.deletionTimestamp) return this.finalize(website, call);
    try {
      // With a Gateway: the Website's route, or why it gets none (a condition, not an error:
      // retrying cannot help until the Website, or the one holding its host, changes).
      const { route, withheld } = this.route(key, website);
      // 2. and 3. Create or update every child (the Deployment, the Service, the route); add the
      // finalizer; delete a route the Website may no longer have. These writes do not depend on
      // each other, so they go out together.
      const rendered = this.render(key, website, route);
      const absent = this.owns.filter((owned) => !rendered.some((child) => child.owned === owned));
      // Every write is waited for, so none is left running when the reconcile fails, and the
      // children that were written get their event either way.
      const [finalizerResult, ...childResults] = await Promise.allSettled([
        this.ensureFinalizer(website, call),
        ...rendered.map((child) => this.ensureChild(website, child, call)),
        ...absent.map((owned) => this.deleteChild(website, owned, call).then(() => undefined)),
      ]);
      const outcomes = childResults.flatMap((r) =>
        r.status === 'fulfilled' && r.value ? [r.value as ChildOutcome] : [],
      );
      recordChanges(website, this.options.recorder, outcomes);
      for (const result of [finalizerResult, ...childResults]) if (result.status === 'rejected') throw result.reason;
      // 4. Update the Website status, from its Deployment and its route.
      const currentDeployment = outcomes.find((o) => o.kind === 'Deployment')!.object;
      const availableReplicas =
        (currentDeployment.status as { availableReplicas?: number } | undefined)?.availableReplicas ?? 0;
      let url = websiteUrl(website.metadata.name!, website.metadata.namespace!, this.options.clusterDomain);
      let condition = readyCondition(website, currentDeployment);
      const routing = this.options.gateway;
      if (routing && withheld) {
        condition = routeCondition(website, withheld.reason, withheld.message);
        // Told once, as the condition turns to it: the reconciles that follow change nothing.
        const current = website.status?.conditions?.find((c) => c.type === 'Ready');
        if (current?.reason !== withheld.reason || current.message !== withheld.message)
          this.options.recorder.record(website, 'Warning', withheld.reason, withheld.message);
      } else if (routing && route) {
        const stored = outcomes.find((o) => o.kind === 'HTTPRoute')!.object;
        const parents = (stored.status as { parents?: RouteParentStatus[] } | undefined)?.parents;
        const state = routeState(parents, routing.gateway, website.metadata.namespace!);
        const routeName = `HTTPRoute ${stored.metadata!.name}`;
        const gatewayName = `Gateway ${routing.gateway.namespace}/${routing.gateway.name}`;
        if (state.state === 'serving') {
          url = `${this.scheme(routing, route.host)}://${route.host}/`;
        } else if (state.state === 'refused') {
          condition = routeCondition(
            website,
            READY_REASONS.routeNotAccepted,
            `${gatewayName} does not serve ${routeName}: ${state.reason}${state.message ? `: ${state.message}` : ''}`,
          );
        } else if (condition.status === 'True') {
          condition = routeCondition(
            website,
            READY_REASONS.routePending,
            `${condition.message}; waiting for ${gatewayName} to accept ${routeName} for ${route.host}`,
          );
        }
      }
      await this.writeStatus(
        website,
        nextStatus(website, { availableReplicas, url, observedGeneration: website.metadata.generation }, condition),
        call,
      );
    } catch (error) {
      // The Website changed since the cache saw it (the finalizer patch carries its
      // resourceVersion): routine, and the change is already queued. Retry; nothing to tell.
      if (isConflict(error) && !isAlreadyExists(error)) throw error;
      // Aborted: this replica may no longer hold the Lease, so it writes nothing more, not even the failure.
      if (signal?.aborted) throw error;
      const message = (error as Error).message;
      this.options.recorder.record(website, 'Warning', 'ReconcileFailed', message);
      await this.writeStatus(website, nextStatus(website, {}, failedCondition(website, message)), call).catch(
        (statusError: Error) =>
          this.options.logger?.warn(
            { website: key, error: statusError.message },
            'could not record the failure in status',
          ),
      );
      throw error;
    }
  }

  /**
   * With a Gateway: the route the Website gets (the Gateway, and its host), or why it gets none.
   * Without one: neither.
   */
  private route(key: string, website: WebsiteV1): { route?: WebsiteRoute; withheld?: RouteWithheld } {
    const routing = this.options.gateway;
    if (!routing) return {};
    const { gateway, hosts } = routing;
    const problem = websiteHostProblem(website, gateway);
    if (problem) return { withheld: { reason: 'HostNotAllowed', message: problem } };
    const host = websiteHost(website, gateway);
    const holder = hosts.holder(host);
    if (holder !== undefined && holder !== key)
      return {
        withheld: {
          reason: 'HostConflict',
          message: `host ${host} is already served for Website ${holder}, which asked for it first: set another spec.host`,
        },
      };
    return { route: { gateway, host } };
  }

  /** `https` when the Gateway's listeners that take the route terminate TLS (routeScheme). */
  private scheme(routing: WebsiteRouting, host: string): 'http' | 'https' {
    const gateway = routing.gateways.get(`${routing.gateway.namespace}/${routing.gateway.name}`);
    const listeners = (gateway?.spec as { listeners?: GatewayListener[] } | undefined)?.listeners ?? [];
    return routeScheme(listeners, routing.gateway, host);
  }

  /** The children `website` should have, each carrying its hash annotation: from the memo, or rendered. */
  private render(key: string, website: WebsiteV1 & KubeObject, route: WebsiteRoute | undefined): RenderedChild[] {
    const { uid = '', generation = 0 } = website.metadata;
    const host = route?.host;
    const memo = this.renders.get(key);
    this.renders.delete(key);
    const children =
      memo?.uid === uid && memo.generation === generation && memo.host === host
        ? memo.children
        : inSyncSpan('render Website', {}, () =>
            renderWorkload(website, { ...this.options.render, group: this.options.group, route }).map(
              ({ owned, object }) => ({ owned, object: withHash(object, this.hashAnnotation) }),
            ),
          );
    this.renders.set(key, { uid, generation, host, children });
    if (this.renders.size > RENDER_MEMO_SIZE) this.renders.delete(this.renders.keys().next().value!);
    return children;
  }

  /** Finalizer workflow (spec §3): clean up, then patch the finalizer out; the API server removes the Website. */
  private async finalize(website: WebsiteV1 & KubeObject, call: CallOptions): Promise<void> {
    const finalizers = website.metadata.finalizers ?? [];
    if (!finalizers.includes(this.finalizer)) return;
    const name = workloadName(website.metadata.name!);
    // `kubectl delete --cascade=orphan` asks to keep the children: the garbage collector's
    // orphan finalizer frees them, so deleting them here would defeat the request.
    const orphan = finalizers.includes('orphan');
    if (!orphan) await Promise.all(this.owns.map((owned) => this.deleteChild(website, owned, call)));
    const kinds = this.owns.map((owned) => owned.kind).join(' and ');
    const done = orphan ? `Kept ${kinds} ${name} (deleted with --cascade=orphan)` : `Deleted ${kinds} ${name}`;
    this.options.recorder.record(website, 'Normal', 'Deleted', `${done}; removing finalizer ${this.finalizer}`);
    try {
      await this.setFinalizers(
        website,
        finalizers.filter((f) => f !== this.finalizer),
        call,
      );
    } catch (error) {
      // Gone already (another replica, or a person, removed the finalizer): done (spec §7).
      if (!isNotFound(error)) throw error;
    }
  }

  /**
   * Deletes the Website's child of one kind, if it has one: only an object it controls, and the
   * one the cache saw (the uid precondition spares an object of the same name created since).
   */
  private async deleteChild(website: WebsiteV1 & KubeObject, owned: OwnedKind, call: CallOptions): Promise<void> {
    const namespace = website.metadata.namespace!;
    const name = workloadName(website.metadata.name!);
    const child = await this.read(owned, this.cache(owned), namespace, name, call);
    if (!child || !controlledBy(child, website)) return;
    await this.options.client
      .delete(
        owned,
        { namespace, name },
        { propagationPolicy: 'Background', preconditions: { uid: child.metadata!.uid } },
        call,
      )
      .catch((error) => {
        if (!isNotFound(error) && !isConflict(error)) throw error;
      });
  }

  private async ensureFinalizer(website: WebsiteV1 & KubeObject, call: CallOptions): Promise<void> {
    const finalizers = website.metadata.finalizers ?? [];
    if (finalizers.includes(this.finalizer)) return;
    try {
      await this.setFinalizers(website, [...finalizers, this.finalizer], call);
    } catch (error) {
      // Deleted since the cache saw it: nothing to do (spec §7), and the garbage collector takes
      // any child created beside this patch, whose owner no longer exists.
      if (!isNotFound(error)) throw error;
    }
  }

  /** A merge patch carrying the resourceVersion read: a concurrent change makes it fail (409) and retry. */
  private async setFinalizers(website: WebsiteV1 & KubeObject, finalizers: string[], call: CallOptions): Promise<void> {
    const { namespace, name, resourceVersion } = website.metadata;
    await this.options.client.patch(
      this.type,
      { namespace, name },
      'merge',
      { metadata: { finalizers, resourceVersion } },
      undefined,
      call,
    );
  }

  /** The child from the cache; a GET only while the cache has not synced (it may not have the child yet). */
  private async read(
    type: ResourceType,
    cache: Cache<KubeObject>,
    namespace: string,
    name: string,
    call: CallOptions,
  ): Promise<KubeObject | undefined> {
    const key = `${namespace}/${name}`;
    const cached = cache.get(key);
    if (cached || cache.hasSynced(key)) return cached;
    return this.options.client.get(type, { namespace, name }, call);
  }

  /** The cache of one owned kind (the controller starts one informer per kind it owns). */
  private cache(owned: OwnedKind): Cache<KubeObject> {
    const cache = this.options.children.get(owned.kind);
    if (!cache) throw new Error(`no cache of ${owned.kind}: the controller watches every kind a Website owns`);
    return cache;
  }

  /**
   * Makes the child match `rendered`. Absent from a synced cache: created at once, without a GET
   * (the create carries the field manager, so later applies own the same fields). An
   * AlreadyExists answer means the cache had not seen it, or it is not ours (the caches hold only
   * objects with our managed-by label): then it is read and its owner checked. Present: applied
   * server-side, only when the stored object differs from what we render.
   */
  private async ensureChild(
    website: WebsiteV1 & KubeObject,
    { owned: type, object: desired }: RenderedChild,
    call: CallOptions,
  ): Promise<ChildOutcome> {
    const { client, fieldManager } = this.options;
    const { kind } = type;
    const cache = this.cache(type);
    const { namespace, name } = desired.metadata as { namespace: string; name: string };
    const unreadable = (error: Error): never => {
      throw new Error(`could not read ${kind} ${name}: ${error.message}`, { cause: error });
    };
    let actual = await this.read(type, cache, namespace, name, call).catch(unreadable);
    if (!actual) {
      try {
        return { kind, name, object: await client.create(type, desired, { fieldManager, ...call }), change: 'Created' };
      } catch (error) {
        if (!isAlreadyExists(error))
          throw new Error(`could not create ${kind} ${name}: ${(error as Error).message}`, { cause: error });
      }
      actual = await client.get(type, { namespace, name }, call).catch(unreadable);
      if (!actual) throw new Error(`${kind} ${name} was deleted while it was being created; trying again`);
    }
    if (!controlledBy(actual, website) && !adoptable(actual, website)) {
      this.options.onForeignChild?.(website, type, actual);
      throw new TerminalError(
        `${kind} ${name} already exists and is not owned by Website ${website.metadata.name}: delete or rename that ${kind}, or rename the Website`,
      );
    }
    if (!needsApply(desired, actual)) return { kind, name, object: actual };
    // The difference is worth its walk of both objects only when someone reads debug lines.
    if (this.options.logger?.isLevelEnabled('debug'))
      this.options.logger.debug(
        { website: `${namespace}/${website.metadata.name}`, kind, name, difference: firstDifference(desired, actual) },
        'applying',
      );
    try {
      return { kind, name, object: await client.apply(type, desired, fieldManager, call), change: 'Updated' };
    } catch (error) {
      throw new Error(`could not apply ${kind} ${name}: ${(error as Error).message}`, { cause: error });
    }
  }

  /**
   * Writes `status` unless the cached Website holds it and shows this process's last write. The
   * cache alone would lose an update when it lags behind a write: 0/1 available written, the
   * cache still at 1/1, the Deployment back at 1/1, and 1/1 never written again.
   */
  private async writeStatus(website: WebsiteV1 & KubeObject, status: WebsiteStatus, call: CallOptions): Promise<void> {
    const { namespace, name } = website.metadata;
    const key = objectKey(website);
    const cached = website.status ?? {};
    let unseen = this.statusUnseen.get(key);
    if (unseen !== undefined && unseen !== 'unknown' && jsonEqual(unseen, cached)) {
      this.statusUnseen.delete(key);
      unseen = undefined;
    }
    if (unseen === undefined && jsonEqual(status, cached)) return;
    this.options.logger?.debug({ website: key, status }, 'writing status');
    this.statusUnseen.set(key, 'unknown');
    try {
      await this.options.client.patch(
        this.type,
        { namespace, name, subresource: 'status' },
        'merge',
        { status },
        undefined,
        call,
      );
      this.statusUnseen.set(key, status);
    } catch (error) {
      if (!isNotFound(error)) throw error;
      this.statusUnseen.delete(key);
    }
  }
}

/** One event per reconcile that changed children: "Created Deployment website-a and Service website-a". */
function recordChanges(website: WebsiteV1 & KubeObject, recorder: EventRecorder, outcomes: ChildOutcome[]): void {
  for (const change of ['Created', 'Updated'] as const) {
    const changed = outcomes.filter((o) => o.change === change);
    if (changed.length > 0)
      recorder.record(
        website,
        'Normal',
        change,
        `${change} ${changed.map((o) => `${o.kind} ${o.name}`).join(' and ')}`,
      );
  }
}

function controlledBy(child: KubeObject, website: WebsiteV1 & KubeObject): boolean {
  return (child.metadata?.ownerReferences ?? []).some((ref) => ref.controller && ref.uid === website.metadata.uid);
}

/**
 * A child left behind by `kubectl delete website --cascade=orphan` (no controller, our labels for
 * this Website's name) is adopted by a new Website of the same name, as ReplicaSets adopt pods.
 */
export function adoptable(child: KubeObject, website: WebsiteV1): boolean {
  const labels = child.metadata?.labels ?? {};
  const hasController = (child.metadata?.ownerReferences ?? []).some((ref) => ref.controller);
  return (
    !hasController &&
    labels['app.kubernetes.io/managed-by'] === MANAGED_BY &&
    labels['app.kubernetes.io/instance'] === website.metadata.name
  );
}
