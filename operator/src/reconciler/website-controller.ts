import { jsonEqual } from '../controller/apply.ts';
import { Controller } from '../controller/controller.ts';
import { type InformerHandler, objectKey } from '../controller/informer.ts';
import type { KubeObject } from '../controller/kube-api.ts';
import type { Manager, ManagerConfig } from '../controller/manager.ts';
import { type FieldMask, fieldMask, METADATA_MASK, projection } from '../controller/projection.ts';
import {
  GATEWAY_API_GROUP,
  MANAGED_BY,
  type WebsiteGateway,
  type WebsiteV1,
  type WebsiteWorkloadResources,
  websiteOwns,
} from '../library.ts';
import { HostClaims, trackHostClaims } from './host-claims.ts';
import { renderWorkload } from './render.ts';
import { finalizerName, traceparentAnnotationName, WebsiteReconciler, websitesType } from './website.ts';

/** The Website controller: for Websites, owning every kind of websiteOwns (Deployments and Services, and HTTPRoutes with a Gateway). */

export interface OperatorConfig extends ManagerConfig {
  /** API group of the Website resource. */
  readonly group: string;
  /** Websites reconciled at once. */
  readonly concurrency: number;
  readonly fieldManager: string;
  readonly clusterDomain: string;
  readonly webImage?: string;
  readonly webResources?: WebsiteWorkloadResources;
  /**
   * The platform's Gateway: each Website gets an HTTPRoute attached to it, and `status.url` its
   * address there once the Gateway accepts the route. Undefined: no routes.
   */
  readonly gateway?: WebsiteGateway;
  /**
   * Websites the operator's memory was sized for (the Deployment sets it with its limit); holding
   * more is logged as a warning. Undefined: not checked.
   */
  readonly capacity?: number;
}

export function setupWebsiteController(manager: Manager, config: OperatorConfig): Controller<WebsiteV1 & KubeObject> {
  const websites = manager.informer<WebsiteV1 & KubeObject>(websitesType(config.group), {
    forbiddenFix,
    notFoundFix: `install the Website CRD (websites.${config.group}) first: kubectl apply -f dist/website-operator/, or the WebsiteCrd construct's manifest`,
  });
  // Only the children the operator labels: a watch of every Deployment would cache the cluster's.
  const owned = { labelSelector: `app.kubernetes.io/managed-by=${MANAGED_BY}`, resync: false, forbiddenFix };
  const masks = childMasks(config);
  const children = new Map(
    websiteOwns(config.gateway !== undefined).map((type) => [
      type.kind,
      manager.informer(type, {
        ...owned,
        transform: projection(masks.get(type.kind)!),
        ...(type.gatewayOnly ? { notFoundFix: GATEWAY_API_FIX } : {}),
      }),
    ]),
  );
  const gateway = config.gateway;
  // The Gateway's namespace only, for its listeners (http or https): the route's own status says
  // whether the Gateway accepted it.
  const gateways =
    gateway &&
    manager.informer(
      { group: GATEWAY_API_GROUP, version: 'v1', resource: 'gateways' },
      {
        namespaces: [gateway.namespace],
        resync: false,
        notFoundFix: GATEWAY_API_FIX,
        forbiddenFix: () =>
          `grant this ServiceAccount get, list and watch on gateways in namespace ${gateway.namespace} (the WebsiteOperator construct's gateway prop creates that Role)`,
      },
    );
  const hosts = gateway && new HostClaims(gateway);
  const reconciler = new WebsiteReconciler({
    client: manager.writer,
    group: config.group,
    websites,
    children,
    recorder: manager.eventRecorder(MANAGED_BY),
    fieldManager: config.fieldManager,
    clusterDomain: config.clusterDomain,
    render: { image: config.webImage, resources: config.webResources },
    gateway: gateway && hosts && gateways ? { gateway, hosts, gateways } : undefined,
    // A child's name taken by another owner ends the reconcile with a TerminalError: no retries,
    // which could not help. What brings the Website back is a change to it (its informer), the
    // periodic resync, or a change to that object: the child informers hold only objects with
    // our managed-by label, so a watch of that one object by name (under the same Role) does.
    onForeignChild: (website, type, child) => controller.watchUntilChanged(objectKey(website), type, child),
    logger: manager.deps.logger,
  });
  const finalizer = finalizerName(config.group);
  if (config.capacity !== undefined) watchCapacity(websites, config.capacity, manager);
  const controller = new Controller(manager, {
    name: 'website',
    for: {
      kind: 'Website',
      group: config.group,
      informer: websites,
      update: (previous, current) => !onlyOwnWrites(previous, current, finalizer),
    },
    owns: [...children.values()],
    reconciler,
    concurrency: config.concurrency,
    traceparentAnnotation: traceparentAnnotationName(config.group),
  });
  // A Website waiting for a host another held is reconciled again when that one lets it go.
  if (hosts) trackHostClaims(hosts, websites, children.get('HTTPRoute')!, (key) => controller.queue.add(key));
  return controller;
}

/** What to do when the API server does not serve the Gateway API. */
const GATEWAY_API_FIX =
  'install the Gateway API CRDs (standard channel, v1.0 or later) and a Gateway implementation, or run the operator without a Gateway';

/**
 * Reports the capacity as a metric, and warns each time the Websites held rise above it: the
 * operator keeps reconciling them (refusing Websites would lose them), but its memory limit was not
 * sized for them, and the warning says what to change before the kernel's OOM killer decides.
 */
function watchCapacity(
  websites: { on(handler: InformerHandler<KubeObject>): void; readonly size: number },
  capacity: number,
  manager: Manager,
): void {
  const { logger, metrics } = manager.deps;
  metrics.websiteCapacity.set(capacity);
  let above = false;
  websites.on((event) => {
    if (event !== 'add' && event !== 'delete') return;
    const held = websites.size;
    if (held > capacity && !above)
      logger.warn(
        { websites: held, capacity },
        `holding ${held} Websites, more than the ${capacity} this operator's memory limit was sized for: raise the WebsiteOperator's capacity (it sizes the memory limit), or split Websites across operators by namespace`,
      );
    above = held > capacity;
  });
}

/**
 * What the child caches keep of each object, by kind: every path the operator renders (drift
 * detection compares them all; the render's shape is the same for every Website, only its values
 * differ), the metadata it reads, and the status fields the kind's declaration says it reads (of a
 * Deployment, those the Ready condition and `status.availableReplicas` come from: status.ts). The
 * rest of what the API server returns (defaults, other managers' fields, rollout conditions) is not
 * cached.
 */
export function childMasks(
  config: Pick<OperatorConfig, 'group' | 'webImage' | 'webResources' | 'gateway'>,
): ReadonlyMap<string, FieldMask> {
  const sample: WebsiteV1 & KubeObject = {
    apiVersion: `${config.group}/v1`,
    kind: 'Website',
    metadata: { name: 'sample', namespace: 'sample', uid: '00000000-0000-0000-0000-000000000000' },
    spec: { title: 'Sample', replicas: 1, color: '#2196F3' },
  };
  const rendered = renderWorkload(sample, {
    image: config.webImage,
    resources: config.webResources,
    group: config.group,
    route: config.gateway && { gateway: config.gateway, host: 'sample.example.com' },
  });
  return new Map(
    rendered.map(({ owned, object }): [string, FieldMask] => {
      const status: FieldMask[] = owned.statusRead
        ? [{ status: Object.fromEntries(owned.statusRead.map((field) => [field, true])) }]
        : [];
      return [owned.kind, fieldMask([object], METADATA_MASK, ...status)];
    }),
  );
}

/** What to do when the Website rules are missing where the operator watches. */
function forbiddenFix(namespace: string | undefined): string {
  return namespace
    ? `grant this ServiceAccount the Website rules in namespace ${namespace} (the WebsiteOperator construct's watchNamespaces creates its Role and RoleBinding; the namespace must exist), or remove ${namespace} from WATCH_NAMESPACE`
    : `grant this ServiceAccount the Website rules in all namespaces (the WebsiteOperator construct's WatchNamespaces.all() creates the ClusterRole and ClusterRoleBinding), or set WATCH_NAMESPACE to the namespaces it is granted`;
}

/**
 * True when `before` and `after` differ only in status, resourceVersion and `finalizer` added: the
 * reconciler's own writes, no change to reconcile. The reconcile that wrote them went on with the
 * rest, so another would only reach the same result (a TerminalError logged twice for one change).
 */
export function onlyOwnWrites(before: KubeObject, after: KubeObject, finalizer: string): boolean {
  // Someone else removing it is a change: the Website must get it back.
  if (
    (before.metadata?.finalizers ?? []).includes(finalizer) &&
    !(after.metadata?.finalizers ?? []).includes(finalizer)
  )
    return false;
  const rest = (object: KubeObject) => ({
    ...object,
    status: undefined,
    metadata: {
      ...object.metadata,
      resourceVersion: undefined,
      finalizers: (object.metadata?.finalizers ?? []).filter((f) => f !== finalizer),
    },
  });
  return jsonEqual(rest(before), rest(after));
}
