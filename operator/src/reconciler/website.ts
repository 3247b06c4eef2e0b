import { firstDifference, jsonEqual, needsApply, withHash } from '../controller/apply.ts';
import type { EventRecorder } from '../controller/event-recorder.ts';
import type { Informer } from '../controller/informer.ts';
import { DEPLOYMENTS, type KubeClient, type KubeObject, type ResourceType, SERVICES, isNotFound } from '../controller/kube-client.ts';
import type { HandlerResult } from '../controller/work-queue.ts';
import type { Logger } from '../observability/logger.ts';
import { MANAGED_BY, type WebsiteStatus, websiteUrl, type WebsiteV1, workloadName } from '../library.ts';
import { type RenderOptions, renderWorkload } from './render.ts';
import { failedCondition, nextStatus, readyCondition } from './status.ts';

/**
 * The Website reconciler: spec §4 operator rules 2–4 and the finalizer workflow of §3. It reads
 * every object from the informers' caches (falling back to a GET when a child is not cached yet),
 * writes only when something would change, and keeps no state of its own: any restart converges.
 */

export function websitesType(group: string): ResourceType {
  return { group, version: 'v1', resource: 'websites' };
}

export function finalizerName(group: string): string {
  return `websites.${group}/cleanup`;
}

export interface WebsiteReconcilerOptions {
  readonly client: KubeClient;
  readonly group: string;
  readonly websites: Informer<WebsiteV1 & KubeObject>;
  readonly deployments: Informer<KubeObject>;
  readonly services: Informer<KubeObject>;
  readonly recorder: EventRecorder;
  /** Server-side apply field manager of the children. */
  readonly fieldManager: string;
  /** Cluster DNS domain of `status.url`. */
  readonly clusterDomain: string;
  /** Web server image and resources of the children. */
  readonly render?: Omit<RenderOptions, 'group'>;
  readonly logger?: Logger;
}

export class WebsiteReconciler {
  private readonly options: WebsiteReconcilerOptions;
  private readonly type: ResourceType;
  private readonly finalizer: string;
  private readonly hashAnnotation: string;

  constructor(options: WebsiteReconcilerOptions) {
    this.options = options;
    this.type = websitesType(options.group);
    this.finalizer = finalizerName(options.group);
    this.hashAnnotation = `websites.${options.group}/applied-hash`;
  }

  /** Reconciles the Website `namespace/name`; throws to be retried with backoff. */
  async reconcile(key: string): Promise<HandlerResult | void> {
    // 1. Fetch the Website. Not found: it is gone, and owner references take its children along.
    const website = this.options.websites.get(key);
    if (!website) return;
    if (website.metadata.deletionTimestamp) return this.finalize(website);
    try {
      await this.ensureFinalizer(website);
      // 2. and 3. Create or update the Deployment and the Service.
      const { deployment, service } = renderWorkload(website, { ...this.options.render, group: this.options.group });
      const currentDeployment = await this.ensureChild(website, DEPLOYMENTS, 'Deployment', deployment, this.options.deployments);
      await this.ensureChild(website, SERVICES, 'Service', service, this.options.services);
      // 4. Update the Website status.
      const availableReplicas = (currentDeployment.status as { availableReplicas?: number } | undefined)?.availableReplicas ?? 0;
      await this.writeStatus(
        website,
        nextStatus(
          website,
          {
            availableReplicas,
            url: websiteUrl(website.metadata.name!, website.metadata.namespace!, this.options.clusterDomain),
            observedGeneration: website.metadata.generation,
          },
          readyCondition(website, currentDeployment),
        ),
      );
    } catch (error) {
      const message = (error as Error).message;
      await this.options.recorder.record(website, 'Warning', 'ReconcileFailed', message);
      await this.writeStatus(website, nextStatus(website, {}, failedCondition(website, message))).catch((statusError: Error) =>
        this.options.logger?.warn({ website: key, error: statusError.message }, 'could not record the failure in status'),
      );
      throw error;
    }
  }

  /** Finalizer workflow (spec §3): clean up, then patch the finalizer out; the API server removes the Website. */
  private async finalize(website: WebsiteV1 & KubeObject): Promise<void> {
    const finalizers = website.metadata.finalizers ?? [];
    if (!finalizers.includes(this.finalizer)) return;
    // `kubectl delete --cascade=orphan` asks to keep the children: the garbage collector's
    // orphan finalizer frees them, so deleting them here would defeat the request.
    if (!finalizers.includes('orphan')) {
      for (const type of [DEPLOYMENTS, SERVICES]) {
        const name = workloadName(website.metadata.name!);
        const child = await this.options.client.get(type, { namespace: website.metadata.namespace, name });
        if (child && controlledBy(child, website)) {
          await this.options.client
            .delete(type, { namespace: website.metadata.namespace, name }, { propagationPolicy: 'Background', preconditions: { uid: child.metadata!.uid } })
            .catch((error) => {
              if (!isNotFound(error)) throw error;
            });
        }
      }
    }
    await this.options.recorder.record(website, 'Normal', 'Deleted', `Deleted Deployment and Service ${workloadName(website.metadata.name!)}; removing finalizer ${this.finalizer}`);
    await this.setFinalizers(website, finalizers.filter((f) => f !== this.finalizer));
  }

  private async ensureFinalizer(website: WebsiteV1 & KubeObject): Promise<void> {
    const finalizers = website.metadata.finalizers ?? [];
    if (!finalizers.includes(this.finalizer)) await this.setFinalizers(website, [...finalizers, this.finalizer]);
  }

  /** A merge patch carrying the resourceVersion read: a concurrent change makes it fail (409) and retry. */
  private async setFinalizers(website: WebsiteV1 & KubeObject, finalizers: string[]): Promise<void> {
    const { namespace, name, resourceVersion } = website.metadata;
    await this.options.client.patch(this.type, { namespace, name }, 'merge', { metadata: { finalizers, resourceVersion } });
  }

  /** Server-side applies `desired` unless the stored object already matches it; returns the stored object. */
  private async ensureChild(website: WebsiteV1 & KubeObject, type: ResourceType, kind: string, rendered: KubeObject, cache: Informer<KubeObject>): Promise<KubeObject> {
    const { client, fieldManager, recorder } = this.options;
    const desired = withHash(rendered, this.hashAnnotation);
    const { namespace, name } = desired.metadata!;
    const actual = cache.get(`${namespace}/${name}`) ?? (await client.get(type, { namespace, name }).catch((error: Error) => {
      throw new Error(`could not read ${kind} ${name}: ${error.message}`, { cause: error });
    }));
    if (actual && !controlledBy(actual, website) && !adoptable(actual, website)) {
      throw new Error(
        `${kind} ${name} already exists and is not owned by Website ${website.metadata.name}: delete or rename that ${kind}, or rename the Website`,
      );
    }
    if (!needsApply(desired, actual)) return actual!;
    this.options.logger?.debug({ website: `${namespace}/${website.metadata.name}`, kind, name, difference: actual ? firstDifference(desired, actual) : 'missing' }, 'applying');
    try {
      const applied = await client.apply(type, desired, fieldManager);
      await recorder.record(website, 'Normal', actual ? 'Updated' : 'Created', `${actual ? 'Updated' : 'Created'} ${kind} ${name}`);
      return applied;
    } catch (error) {
      throw new Error(`could not apply ${kind} ${name}: ${(error as Error).message}`, { cause: error });
    }
  }

  private async writeStatus(website: WebsiteV1 & KubeObject, status: WebsiteStatus): Promise<void> {
    if (jsonEqual(status, website.status ?? {})) return;
    const { namespace, name } = website.metadata;
    this.options.logger?.debug({ website: `${namespace}/${name}`, status }, 'writing status');
    try {
      await this.options.client.patch(this.type, { namespace, name, subresource: 'status' }, 'merge', { status });
    } catch (error) {
      if (!isNotFound(error)) throw error;
    }
  }
}

function controlledBy(child: KubeObject, website: WebsiteV1 & KubeObject): boolean {
  return (child.metadata?.ownerReferences ?? []).some((ref) => ref.controller && ref.uid === website.metadata.uid);
}

/**
 * A child left behind by `kubectl delete website --cascade=orphan` (no controller, our labels for
 * this Website's name) is adopted by a new Website of the same name, as ReplicaSets adopt pods.
 */
function adoptable(child: KubeObject, website: WebsiteV1 & KubeObject): boolean {
  const labels = child.metadata?.labels ?? {};
  const hasController = (child.metadata?.ownerReferences ?? []).some((ref) => ref.controller);
  return !hasController && labels['app.kubernetes.io/managed-by'] === MANAGED_BY && labels['app.kubernetes.io/instance'] === website.metadata.name;
}
