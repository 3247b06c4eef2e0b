// The vocabulary every part of the operator's runtime speaks: resource types and object shapes,
// and KubeApi, the operations the reconciler, informers, leader elector and event recorder depend
// on. KubeClient (./kube-client.ts) implements it against an API server; FakeKubeApi
// (../fake/fake-kube-api.ts) in memory, for unit tests.
import type { ObjectMeta } from '../library.ts';

/** A resource type: `{ group: 'apps', version: 'v1', resource: 'deployments' }`; group '' is core. */
export interface ResourceType {
  readonly group: string;
  readonly version: string;
  readonly resource: string;
}

export const DEPLOYMENTS: ResourceType = { group: 'apps', version: 'v1', resource: 'deployments' };
export const SERVICES: ResourceType = { group: '', version: 'v1', resource: 'services' };
export const EVENTS: ResourceType = { group: '', version: 'v1', resource: 'events' };
export const SECRETS: ResourceType = { group: '', version: 'v1', resource: 'secrets' };
export const LEASES: ResourceType = { group: 'coordination.k8s.io', version: 'v1', resource: 'leases' };
export const CRDS: ResourceType = {
  group: 'apiextensions.k8s.io',
  version: 'v1',
  resource: 'customresourcedefinitions',
};
export const ENDPOINT_SLICES: ResourceType = { group: 'discovery.k8s.io', version: 'v1', resource: 'endpointslices' };

/** Where one object (or collection) lives. Leave namespace out for cluster-scoped or all-namespace requests. */
export interface ObjectRef {
  readonly namespace?: string;
  readonly name?: string;
  readonly subresource?: string;
}

export function resourcePath(type: ResourceType, ref: ObjectRef = {}): string {
  const base = type.group === '' ? `/api/${type.version}` : `/apis/${type.group}/${type.version}`;
  const ns = ref.namespace ? `/namespaces/${encodeURIComponent(ref.namespace)}` : '';
  const name = ref.name ? `/${encodeURIComponent(ref.name)}` : '';
  const sub = ref.name && ref.subresource ? `/${ref.subresource}` : '';
  return `${base}${ns}/${type.resource}${name}${sub}`;
}

/** Minimal object shape the client needs; its metadata is the library's ObjectMeta, the Website's too. */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata?: ObjectMeta;
  [key: string]: unknown;
}

export interface KubeList<T> {
  apiVersion?: string;
  kind?: string;
  items: T[];
  metadata: { resourceVersion?: string; continue?: string };
}

/**
 * The API operations the operator's runtime uses: the reconciler, the informers, the leader
 * elector and the event recorder depend on this interface, not on the HTTP client, as
 * controller-runtime's and client-go's do on theirs. `KubeClient` implements it against an API
 * server; `FakeKubeApi` (fake-kube-api.ts) in memory, for unit tests. Implementations restate these
 * signatures on purpose: `implements` keeps them in step, and a generic method's signature cannot
 * be derived (`Parameters<>` drops its type parameter).
 */
export interface KubeApi {
  /** The object, or undefined when the API server answers 404. */
  get<T extends KubeObject>(type: ResourceType, ref: ObjectRef, options?: CallOptions): Promise<T | undefined>;
  list<T extends KubeObject>(
    type: ResourceType,
    namespace: string | undefined,
    query?: Record<string, string | number | boolean | undefined>,
    options?: CallOptions,
  ): Promise<KubeList<T>>;
  /** POST; an object that exists already fails with 409 AlreadyExists. */
  create<T extends KubeObject>(
    type: ResourceType,
    object: T,
    options?: { fieldManager?: string } & CallOptions,
  ): Promise<T>;
  /** PUT: replace the object (or a subresource); metadata.resourceVersion makes it conditional. */
  update<T extends KubeObject>(type: ResourceType, object: T, subresource?: string, options?: CallOptions): Promise<T>;
  /** Server-side apply as `fieldManager`. */
  apply<T extends KubeObject>(
    type: ResourceType,
    object: T,
    fieldManager: string,
    options?: { force?: boolean; subresource?: string } & CallOptions,
  ): Promise<T>;
  patch<T extends KubeObject>(
    type: ResourceType,
    ref: ObjectRef,
    patchType: Exclude<PatchType, 'apply'>,
    body: unknown,
    fieldManager?: string,
    options?: CallOptions,
  ): Promise<T>;
  delete(type: ResourceType, ref: ObjectRef, body?: DeleteOptions, options?: CallOptions): Promise<void>;
  /**
   * Starts a watch; events arrive on `onEvent` until `onDone` (called exactly once, with the
   * error if there was one). Returns the AbortController that stops it once the watch has
   * started; `options.signal` stops it at any time, also while its request waits for an answer.
   * `inactivityTimeoutMs` aborts a watch that received nothing for that long (a silent stall).
   */
  watch(
    type: ResourceType,
    namespace: string | undefined,
    query: Record<string, string | number | boolean | undefined>,
    onEvent: (type: string, object: KubeObject) => void,
    onDone: (error: unknown) => void,
    inactivityTimeoutMs: number,
    options?: CallOptions,
  ): Promise<AbortController>;
}

/** What a caller may pass to any request: an AbortSignal that cancels it (shutdown). */
export interface CallOptions {
  readonly signal?: AbortSignal;
}

export interface DeleteOptions {
  readonly propagationPolicy?: 'Foreground' | 'Background' | 'Orphan';
  readonly preconditions?: { uid?: string; resourceVersion?: string };
}

export type PatchType = 'merge' | 'json' | 'apply';
