import { objectKey } from '../controller/informer.ts';
import type { KubeObject } from '../controller/kube-api.ts';
import { type WebsiteGateway, type WebsiteV1, websiteHost, websiteHostProblem } from '../library.ts';

/** One Website's claim on a host: when it was created, to tell which asked first. */
interface Claim {
  readonly key: string;
  readonly created: string;
}

/**
 * Which Website holds each host under the operator's Gateway, of the Websites that ask for it (an
 * allowed host: websiteHostProblem): the one whose HTTPRoute already routes it, so that a Website
 * asking later never takes a host from one that serves it; when none does, the one created first,
 * then by namespace/name. Kept from the informers' events (Websites, and the routes), so that a
 * reconcile asks in O(Websites asking for that host), and the Websites that wait for a host are
 * told when its holder lets it go (update's return value).
 */
export class HostClaims {
  private readonly claims = new Map<string, Map<string, Claim>>();
  private readonly hostOf = new Map<string, string>();
  /** The host of each route, by the route's key. */
  private readonly routeHost = new Map<string, string>();
  /** By host: the routes that route it, each to the key of the Website that controls it. */
  private readonly routesOf = new Map<string, Map<string, string>>();

  private readonly gateway: WebsiteGateway;

  constructor(gateway: WebsiteGateway) {
    this.gateway = gateway;
  }

  /** The host a Website asks for and may have, or undefined when its spec.host is not allowed. */
  hostFor(website: Pick<WebsiteV1, 'metadata' | 'spec'>): string | undefined {
    return websiteHostProblem(website, this.gateway) === undefined ? websiteHost(website, this.gateway) : undefined;
  }

  /**
   * Records the Website's claim as it now stands (gone when `website` is undefined); returns the
   * keys of the other Websites asking for a host it claimed before and no longer does: one of them
   * may hold it now.
   */
  update(key: string, website: (WebsiteV1 & KubeObject) | undefined): string[] {
    const before = this.hostOf.get(key);
    const after = website ? this.hostFor(website) : undefined;
    if (before === after) return [];
    if (before !== undefined) {
      removeFrom(this.claims, before, key);
      this.hostOf.delete(key);
    }
    if (after !== undefined && website) {
      addTo(this.claims, after, key, {
        key,
        created: (website.metadata.creationTimestamp as string | undefined) ?? '',
      });
      this.hostOf.set(key, after);
    }
    return before === undefined ? [] : [...(this.claims.get(before)?.keys() ?? [])];
  }

  /** Records a route as it now stands (gone when `route` is undefined): its host, and the Website controlling it. */
  updateRoute(key: string, route: KubeObject | undefined): void {
    const before = this.routeHost.get(key);
    if (before !== undefined) {
      removeFrom(this.routesOf, before, key);
      this.routeHost.delete(key);
    }
    const host = (route?.spec as { hostnames?: string[] } | undefined)?.hostnames?.[0];
    const owner = route?.metadata?.ownerReferences?.find((ref) => ref.controller && ref.kind === 'Website');
    if (host === undefined || !owner) return;
    addTo(this.routesOf, host, key, `${route!.metadata!.namespace}/${owner.name}`);
    this.routeHost.set(key, host);
  }

  /** The key of the Website that holds `host`: the one routing it, else the first to ask for it. */
  holder(host: string): string | undefined {
    const claimants = [...(this.claims.get(host)?.values() ?? [])];
    const routing = new Set(this.routesOf.get(host)?.values() ?? []);
    const routed = claimants.filter((claim) => routing.has(claim.key));
    let first: Claim | undefined;
    for (const claim of routed.length > 0 ? routed : claimants) {
      if (!first || claim.created < first.created || (claim.created === first.created && claim.key < first.key))
        first = claim;
    }
    return first?.key;
  }
}

/** Sets `index[host][key]`. */
function addTo<V>(index: Map<string, Map<string, V>>, host: string, key: string, value: V): void {
  const entries = index.get(host) ?? new Map<string, V>();
  entries.set(key, value);
  index.set(host, entries);
}

/** Deletes `index[host][key]`, and the host's entry once empty. */
function removeFrom<V>(index: Map<string, Map<string, V>>, host: string, key: string): void {
  const entries = index.get(host);
  entries?.delete(key);
  if (entries?.size === 0) index.delete(host);
}

type Watchable<T> = { on(handler: (event: string, object: T) => void): void };

/**
 * Keeps `claims` from the informers of Websites and of their routes, and enqueues the Websites that
 * may hold a host another let go.
 */
export function trackHostClaims(
  claims: HostClaims,
  websites: Watchable<WebsiteV1 & KubeObject>,
  routes: Watchable<KubeObject>,
  enqueue: (key: string) => void,
): void {
  websites.on((event, website) => {
    for (const waiting of claims.update(objectKey(website), event === 'delete' ? undefined : website)) enqueue(waiting);
  });
  routes.on((event, route) => claims.updateRoute(objectKey(route), event === 'delete' ? undefined : route));
}
