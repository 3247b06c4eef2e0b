import { ApiObject } from 'cdk8s';
import type { k8s } from 'cdk8s-plus-34';
import { Construct } from 'constructs';
import { restrictedContainerSecurityContext, restrictedPodSecurityContext } from '../security.ts';
import { DEFAULT_COLOR, DEFAULT_GROUP, WORKLOAD_PREFIX } from '../website/schema.ts';
import type { WebsiteV1 } from '../website/types.ts';
import { renderNginxConfig, renderPage, START_SCRIPT, WEB_PORT } from './page.ts';
import { GATEWAY_API_GROUP, hostnameProblem, type WebsiteGateway } from './website-route.ts';

/** Unprivileged nginx (runs as uid 101, listens above 1024), pinned by tag. */
export const DEFAULT_WEB_IMAGE = 'nginxinc/nginx-unprivileged:1.28.0-alpine';
/** uid of the nginx user in that image. */
export const WEB_UID = 101;
/** Where the start script writes the page and configuration: an emptyDir, the root FS is read-only. */
export const SITE_DIR = '/tmp/site';

/**
 * A cdk8s-plus-34 `k8s` type as the JSON its `k8s` classes synthesize: there Quantity and
 * IntOrString are classes (shape `{ value }`) that toJson unwraps, here they are their values. A
 * plain `ApiObject` writes what it is given, so this is what it must be given to match. They are
 * told apart as the types a bare `{ value }` satisfies: every other `k8s` type names more fields.
 */
type KubeJson<T> = T extends readonly (infer E)[]
  ? KubeJson<E>[]
  : T extends object
    ? { value: string | number } extends T
      ? string | number
      : { [K in keyof T]: KubeJson<T[K]> }
    : T;

// The same for every Website: built once, not per render.
const NGINX_CONF = renderNginxConfig(WEB_PORT);

/** Value of the managed-by label on everything the operator creates. */
export const MANAGED_BY = 'website-operator';

/** CPU and memory of a Website's web server container. */
export interface WebsiteWorkloadResources {
  readonly cpuRequest: string;
  readonly memoryRequest: string;
  readonly memoryLimit: string;
}

/** Enough for nginx serving one small page; the memory limit contains a runaway worker. */
export const DEFAULT_WORKLOAD_RESOURCES: WebsiteWorkloadResources = {
  cpuRequest: '10m',
  memoryRequest: '16Mi',
  memoryLimit: '64Mi',
};

export interface WebsiteWorkloadProps {
  /** The Website, as read from the API server: metadata.name, namespace and uid are required. */
  readonly website: WebsiteV1;
  /**
   * API group of the Website resource (for the owner reference).
   * @default 'web.example.com'
   */
  readonly group?: string;
  /**
   * Web server image, pinned by tag or digest.
   * @default 'nginxinc/nginx-unprivileged:1.28.0-alpine'
   */
  readonly image?: string;
  /**
   * CPU and memory requests and limit of the web server.
   * @default DEFAULT_WORKLOAD_RESOURCES
   */
  readonly resources?: WebsiteWorkloadResources;
  /**
   * The Website's HTTPRoute: attached to this Gateway (its namespace, name and sectionName), for
   * this host, to the Website's Service. The operator decides the host (website-route.ts).
   * @default no route
   */
  readonly route?: WebsiteRoute;
}

/** Where a Website's HTTPRoute attaches, and the host it routes. */
export interface WebsiteRoute {
  readonly gateway: Pick<WebsiteGateway, 'namespace' | 'name' | 'sectionName'>;
  readonly host: string;
}

/**
 * A kind of object a Website owns: its API group ('' for the core group), version and plural
 * resource name, as RBAC rules and API paths name it.
 */
export interface OwnedKind {
  readonly kind: string;
  readonly group: string;
  readonly version: string;
  readonly resource: string;
  /**
   * The fields of its `status` the operator reads, so that its cache of these objects keeps them
   * (and drops the rest of the status). None: the operator reads none of it.
   */
  readonly statusRead?: string[];
  /**
   * Owned only by an operator given a Gateway (WebsiteGateway): rendered, watched and granted then
   * only, so that a cluster without the Gateway API needs none of it.
   */
  readonly gatewayOnly?: boolean;
}

/**
 * What a Website owns, declared once, as controller-runtime's builder declares `Owns(...)`: every
 * kind WebsiteWorkload renders, in the order events name them. The operator watches each (one
 * informer), caches what it renders of each (the projection mask), ensures each on every reconcile
 * and deletes each in its finalizer; the Roles of both operators grant each (websiteRules,
 * shellOperatorRoleRules). A kind rendered but not declared here fails the unit tests
 * (test/unit/website-owns.test.ts), and the operator at run time.
 */
export const WEBSITE_OWNS: readonly OwnedKind[] = [
  {
    kind: 'Deployment',
    group: 'apps',
    version: 'v1',
    resource: 'deployments',
    // The Website's Ready condition and status.availableReplicas (the operator's status.ts).
    statusRead: ['observedGeneration', 'replicas', 'availableReplicas', 'updatedReplicas'],
  },
  { kind: 'Service', group: '', version: 'v1', resource: 'services' },
  {
    kind: 'HTTPRoute',
    group: GATEWAY_API_GROUP,
    version: 'v1',
    resource: 'httproutes',
    // Whether the Gateway has accepted the route: the Website's Ready condition and status.url.
    statusRead: ['parents'],
    gatewayOnly: true,
  },
];

/** What a Website owns under an operator given a Gateway, or not: WEBSITE_OWNS, less the route without one. */
export function websiteOwns(gateway: boolean): readonly OwnedKind[] {
  return gateway ? WEBSITE_OWNS : WEBSITE_OWNS.filter((owned) => !owned.gatewayOnly);
}

/** The `apiVersion` of objects of an owned kind: `apps/v1`, or `v1` for the core group. */
export function ownedApiVersion(owned: OwnedKind): string {
  return owned.group === '' ? owned.version : `${owned.group}/${owned.version}`;
}

/** Labels of a Website's children; the selector uses name and instance, so Websites never share pods. */
export function workloadLabels(websiteName: string): Record<string, string> {
  return {
    'app.kubernetes.io/name': 'website',
    'app.kubernetes.io/instance': websiteName,
    'app.kubernetes.io/managed-by': MANAGED_BY,
  };
}

/** Name of a Website's Deployment and Service. */
export function workloadName(websiteName: string): string {
  return `${WORKLOAD_PREFIX}${websiteName}`;
}

/**
 * What one Website owns: Deployment `website-<name>` running the page and Service `website-<name>`
 * on port 80, and with `route` HTTPRoute `website-<name>` from the Website's host to that Service,
 * all with a controller owner reference to the Website. The operator renders this at
 * run time, once per Website and change; nothing here depends on anything but the Website.
 *
 * Both are plain cdk8s `ApiObject`s rather than cdk8s-plus-34's `k8s.KubeDeployment` and
 * `k8s.KubeService`: the JSON is the same byte for byte, but the `k8s` classes convert every field
 * a second time after cdk8s has resolved it, which made rendering twice as slow, and this construct
 * needs none of cdk8s-plus-34's code at run time. The fields are still checked against its `k8s` types.
 */
export class WebsiteWorkload extends Construct {
  /** Deployment `website-<name>` (`apps/v1`), a plain `ApiObject`: add to it with `addJsonPatch`. */
  public readonly deployment: ApiObject;
  /** Service `website-<name>` (`v1`), a plain `ApiObject`: add to it with `addJsonPatch`. */
  public readonly service: ApiObject;
  /** With `route` only: HTTPRoute `website-<name>` (`gateway.networking.k8s.io/v1`), a plain `ApiObject`. */
  public readonly httpRoute?: ApiObject;

  constructor(scope: Construct, id: string, props: WebsiteWorkloadProps) {
    super(scope, id);
    const { metadata, spec } = props.website;
    const fail = (message: string): never => {
      throw new Error(`WebsiteWorkload at '${this.node.path}': ${message}`);
    };
    if (!metadata.name || !metadata.namespace || !metadata.uid) {
      fail('the Website needs metadata.name, metadata.namespace and metadata.uid (read it from the API server)');
    }
    const name = workloadName(metadata.name!);
    const labels = workloadLabels(metadata.name!);
    const selector = { 'app.kubernetes.io/name': 'website', 'app.kubernetes.io/instance': metadata.name! };
    const ownerReferences: k8s.OwnerReference[] = [
      {
        apiVersion: `${props.group ?? DEFAULT_GROUP}/v1`,
        kind: 'Website',
        name: metadata.name!,
        uid: metadata.uid!,
        controller: true,
        blockOwnerDeletion: true,
      },
    ];
    let page = '';
    try {
      page = renderPage(spec.title, spec.color ?? DEFAULT_COLOR);
    } catch (error) {
      fail((error as Error).message);
    }
    const resources = props.resources ?? DEFAULT_WORKLOAD_RESOURCES;

    const deploymentSpec: KubeJson<k8s.DeploymentSpec> = {
      replicas: spec.replicas,
      selector: { matchLabels: selector },
      template: {
        metadata: { labels },
        spec: {
          automountServiceAccountToken: false,
          enableServiceLinks: false,
          securityContext: restrictedPodSecurityContext(WEB_UID),
          containers: [
            {
              name: 'web',
              image: props.image ?? DEFAULT_WEB_IMAGE,
              imagePullPolicy: 'IfNotPresent',
              command: ['/bin/sh', '-c', START_SCRIPT],
              env: [
                { name: 'SITE_DIR', value: SITE_DIR },
                { name: 'WEBSITE_HTML', value: page },
                { name: 'NGINX_CONF', value: NGINX_CONF },
              ],
              ports: [{ name: 'http', containerPort: WEB_PORT, protocol: 'TCP' }],
              readinessProbe: { httpGet: { path: '/', port: 'http' }, periodSeconds: 5 },
              livenessProbe: { httpGet: { path: '/', port: 'http' }, periodSeconds: 10, failureThreshold: 3 },
              resources: {
                requests: { cpu: resources.cpuRequest, memory: resources.memoryRequest },
                limits: { memory: resources.memoryLimit },
              },
              securityContext: restrictedContainerSecurityContext(),
              volumeMounts: [{ name: 'site', mountPath: SITE_DIR }],
            },
          ],
          volumes: [{ name: 'site', emptyDir: { sizeLimit: '16Mi' } }],
        },
      },
    };
    const serviceSpec: KubeJson<k8s.ServiceSpec> = {
      type: 'ClusterIP',
      selector,
      ports: [{ name: 'http', port: 80, targetPort: 'http', protocol: 'TCP' }],
    };
    this.deployment = new ApiObject(this, 'Deployment', {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name, namespace: metadata.namespace, labels, ownerReferences },
      spec: deploymentSpec,
    });
    this.service = new ApiObject(this, 'Service', {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name, namespace: metadata.namespace, labels, ownerReferences },
      spec: serviceSpec,
    });
    if (props.route) {
      const problem = hostnameProblem(props.route.host);
      if (problem) fail(`route host ${JSON.stringify(props.route.host)}: ${problem}`);
      const { namespace: gatewayNamespace, name: gatewayName, sectionName } = props.route.gateway;
      this.httpRoute = new ApiObject(this, 'HTTPRoute', {
        apiVersion: `${GATEWAY_API_GROUP}/v1`,
        kind: 'HTTPRoute',
        metadata: { name, namespace: metadata.namespace, labels, ownerReferences },
        // Every field the API server would default is written out as that default: drift detection
        // compares each rendered field with the stored one.
        spec: {
          parentRefs: [
            {
              group: GATEWAY_API_GROUP,
              kind: 'Gateway',
              namespace: gatewayNamespace,
              name: gatewayName,
              ...(sectionName === undefined ? {} : { sectionName }),
            },
          ],
          hostnames: [props.route.host],
          rules: [
            {
              matches: [{ path: { type: 'PathPrefix', value: '/' } }],
              backendRefs: [{ group: '', kind: 'Service', name, port: 80, weight: 1 }],
            },
          ],
        },
      });
    }
  }
}

/** `status.url` of a Website: its Service's in-cluster address. */
export function websiteUrl(name: string, namespace: string, clusterDomain = 'cluster.local'): string {
  return `http://${workloadName(name)}.${namespace}.svc.${clusterDomain}`;
}
