/**
 * A Website's address outside the cluster: an HTTPRoute of the Gateway API attached to the
 * platform's Gateway, for the Website's host. The platform runs the Gateway (any implementation);
 * the operator, given it (WebsiteGateway), renders and owns one route per Website.
 */
import type { k8s } from 'cdk8s-plus-34';
import { HOSTNAME_PATTERN, MAX_HOSTNAME_LENGTH } from '../website/schema.ts';
import type { WebsiteV1 } from '../website/types.ts';

/** API group of the Gateway API's kinds. */
export const GATEWAY_API_GROUP = 'gateway.networking.k8s.io';

/** The platform's Gateway that each Website's HTTPRoute attaches to, and the hosts Websites get under it. */
export interface WebsiteGateway {
  /** Namespace of the Gateway. */
  readonly namespace: string;
  /** Name of the Gateway. */
  readonly name: string;
  /**
   * The Gateway's listener the routes attach to (`parentRefs[].sectionName`).
   * @default every listener of the Gateway that admits them
   */
  readonly sectionName?: string;
  /**
   * The domain under which each Website gets its host, `<name>-<namespace>.<domain>`: for
   * `sites.example.com`, Website `shop` in `team-a` is served at `shop-team-a.sites.example.com`.
   */
  readonly domain: string;
  /**
   * The suffixes under which a Website may ask for a host of its own (`spec.host`): the host must be
   * one of them or end with `.` and one of them. A host under none is refused.
   * @default none: every Website gets its default host, and `spec.host` is refused
   */
  readonly hostSuffixes?: string[];
  /**
   * Where the Gateway's data plane runs (its proxies): WebsiteOperator opens the Websites' web port
   * to these peers in each namespace it watches (WebsiteIngressPolicy), unless its `networkPolicy`
   * is false. The operator itself does not read it.
   * @default every pod of the Gateway's namespace
   */
  readonly dataPlane?: k8s.NetworkPolicyPeer[];
}

const hostname = new RegExp(HOSTNAME_PATTERN);
/** A Kubernetes object name (DNS-1123 subdomain) or, for a section name, a DNS-1123 label. */
const objectName = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const label = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** Why `name` is not a DNS name a route may carry, or undefined when it is one. */
export function hostnameProblem(name: string): string | undefined {
  if (name.length > MAX_HOSTNAME_LENGTH) return `it is longer than ${MAX_HOSTNAME_LENGTH} characters`;
  if (!hostname.test(name))
    return "expected a DNS name of lowercase letters, digits, '-' and '.', such as shop.example.com";
  if (name.split('.').some((part) => part.length > 63)) return 'a part between dots is longer than 63 characters';
  return undefined;
}

/** Every problem of a WebsiteGateway, each naming the field; empty when it is valid. */
export function websiteGatewayProblems(gateway: WebsiteGateway): string[] {
  const problems: string[] = [];
  if (!label.test(gateway.namespace))
    problems.push(`namespace ${JSON.stringify(gateway.namespace)} is not a namespace name`);
  if (!objectName.test(gateway.name) || gateway.name.length > 253)
    problems.push(`name ${JSON.stringify(gateway.name)} is not a Gateway name`);
  if (gateway.sectionName !== undefined && (!label.test(gateway.sectionName) || gateway.sectionName.length > 63))
    problems.push(`sectionName ${JSON.stringify(gateway.sectionName)} is not a listener name (a DNS label)`);
  const domain = hostnameProblem(gateway.domain);
  if (domain) problems.push(`domain ${JSON.stringify(gateway.domain)}: ${domain}`);
  for (const suffix of gateway.hostSuffixes ?? []) {
    const problem = hostnameProblem(suffix);
    if (problem) problems.push(`hostSuffixes entry ${JSON.stringify(suffix)}: ${problem}`);
  }
  return problems;
}

/**
 * The operator's environment for a Gateway (operator/src/bin/config.ts reads it): GATEWAY_NAMESPACE,
 * GATEWAY_NAME, GATEWAY_SECTION_NAME, WEBSITE_DOMAIN and WEBSITE_HOST_SUFFIXES.
 */
export function gatewayEnvironment(gateway: WebsiteGateway): Array<{ name: string; value: string }> {
  return [
    { name: 'GATEWAY_NAMESPACE', value: gateway.namespace },
    { name: 'GATEWAY_NAME', value: gateway.name },
    ...(gateway.sectionName === undefined ? [] : [{ name: 'GATEWAY_SECTION_NAME', value: gateway.sectionName }]),
    { name: 'WEBSITE_DOMAIN', value: gateway.domain },
    ...(gateway.hostSuffixes?.length ? [{ name: 'WEBSITE_HOST_SUFFIXES', value: gateway.hostSuffixes.join(',') }] : []),
  ];
}

/** The host a Website gets when it asks for none: `<name>-<namespace>.<domain>`. */
export function defaultWebsiteHost(website: Pick<WebsiteV1, 'metadata'>, gateway: WebsiteGateway): string {
  return `${website.metadata.name}-${website.metadata.namespace}.${gateway.domain}`;
}

/**
 * The host a Website is served at: its `spec.host`, or `<name>-<namespace>.<domain>`. A name and a
 * namespace joined by '-' can meet another pair's (`a-b` in `c`, `a` in `b-c`): the operator gives
 * such a host to the Website that asked first, as it does any host two Websites ask for.
 */
export function websiteHost(website: Pick<WebsiteV1, 'metadata' | 'spec'>, gateway: WebsiteGateway): string {
  return website.spec.host ?? defaultWebsiteHost(website, gateway);
}

/**
 * Why the Website may not have its host under this Gateway, or undefined when it may: a host of its
 * own must be one of the Gateway's `hostSuffixes` or lie under one; its default host must be a host
 * name (a long name and namespace make a part between dots longer than 63 characters).
 */
export function websiteHostProblem(
  website: Pick<WebsiteV1, 'metadata' | 'spec'>,
  gateway: WebsiteGateway,
): string | undefined {
  const host = website.spec.host;
  const suffixes = gateway.hostSuffixes ?? [];
  if (host === undefined) {
    const fallback = defaultWebsiteHost(website, gateway);
    const unfit = hostnameProblem(fallback);
    if (!unfit) return undefined;
    return `the default host ${fallback} is not a host name (${unfit}): ${
      suffixes.length === 0
        ? 'give the Website a shorter name'
        : `set spec.host to a host under ${suffixes.join(' or ')}, or give the Website a shorter name`
    }`;
  }
  const invalid = hostnameProblem(host);
  if (invalid) return `spec.host ${JSON.stringify(host)} is not a host name: ${invalid}`;
  if (suffixes.some((suffix) => host === suffix || host.endsWith(`.${suffix}`))) return undefined;
  const fix = `remove spec.host for the default host ${defaultWebsiteHost(website, gateway)}`;
  return suffixes.length === 0
    ? `spec.host ${host} is not allowed: this operator allows no host of a Website's own choosing; ${fix}`
    : `spec.host ${host} is not allowed: it must be under ${suffixes.join(' or ')} (the hosts this operator allows); change it, or ${fix}`;
}

/** The parts of an HTTPRoute's `status.parents[]` entry the operator reads (Gateway API v1). */
export interface RouteParentStatus {
  readonly parentRef: {
    readonly group?: string;
    readonly kind?: string;
    readonly namespace?: string;
    readonly name: string;
    readonly sectionName?: string;
  };
  readonly controllerName?: string;
  readonly conditions?: ReadonlyArray<{
    readonly type: string;
    readonly status: string;
    readonly reason?: string;
    readonly message?: string;
  }>;
}

/**
 * What the Gateway says of a Website's route, from the route's `status.parents`: `serving` once it
 * has Accepted the route and resolved its backend (ResolvedRefs); `refused` with the Gateway's
 * reason and message when either condition is False; `pending` while it has said nothing yet.
 */
export type RouteState =
  | { readonly state: 'serving' }
  | { readonly state: 'pending' }
  | { readonly state: 'refused'; readonly reason: string; readonly message: string };

export function routeState(
  parents: readonly RouteParentStatus[] | undefined,
  gateway: WebsiteGateway,
  routeNamespace: string,
): RouteState {
  const ours = (parents ?? []).filter(
    ({ parentRef: ref }) =>
      (ref.group ?? GATEWAY_API_GROUP) === GATEWAY_API_GROUP &&
      (ref.kind ?? 'Gateway') === 'Gateway' &&
      (ref.namespace ?? routeNamespace) === gateway.namespace &&
      ref.name === gateway.name &&
      ref.sectionName === gateway.sectionName,
  );
  let pending = ours.length === 0;
  for (const parent of ours) {
    for (const type of ['Accepted', 'ResolvedRefs']) {
      const condition = parent.conditions?.find((c) => c.type === type);
      if (!condition || condition.status === 'Unknown') pending = true;
      else if (condition.status !== 'True')
        return {
          state: 'refused',
          reason: condition.reason ?? type,
          message: condition.message ?? '',
        };
    }
  }
  return pending ? { state: 'pending' } : { state: 'serving' };
}

/** A Gateway's listener, as the operator reads it to tell http from https. */
export interface GatewayListener {
  readonly name: string;
  readonly protocol: string;
  readonly hostname?: string;
}

/**
 * The scheme the Website is served with: `https` when every listener its route attaches to (the
 * one named by sectionName, or each whose hostname admits the host) terminates TLS, else `http`.
 */
export function routeScheme(
  listeners: readonly GatewayListener[],
  gateway: WebsiteGateway,
  host: string,
): 'http' | 'https' {
  const attached = listeners.filter((listener) =>
    gateway.sectionName !== undefined ? listener.name === gateway.sectionName : admits(listener.hostname, host),
  );
  return attached.length > 0 && attached.every((listener) => listener.protocol === 'HTTPS') ? 'https' : 'http';
}

/** Whether a listener's hostname (none: any; `*.example.com`: one or more labels before it) admits `host`. */
function admits(listenerHostname: string | undefined, host: string): boolean {
  if (listenerHostname === undefined) return true;
  if (listenerHostname.startsWith('*.')) return host.endsWith(listenerHostname.slice(1));
  return listenerHostname === host;
}
