import type {
  CallOptions,
  DeleteOptions,
  KubeApi,
  KubeList,
  KubeObject,
  ObjectRef,
  PatchType,
  ResourceType,
} from './kube-api.ts';

/**
 * A KubeApi whose writes first pass `fence`, which throws to refuse them; reads and watches go
 * straight through. The operator gives its reconciler one fenced by the leader elector, so a
 * replica that lost its Lease without noticing yet (a process paused past its Lease, then resumed
 * with its reconciles mid-way) refuses their next write instead of sending it beside the new
 * leader's. A write already on the wire when the process paused cannot be recalled. Its methods
 * restate KubeApi's generic signatures, which TypeScript cannot derive (see KubeApi).
 */
export class FencedKubeApi implements KubeApi {
  private readonly inner: KubeApi;
  private readonly fence: () => void;

  constructor(inner: KubeApi, fence: () => void) {
    this.inner = inner;
    this.fence = fence;
  }

  get<T extends KubeObject>(type: ResourceType, ref: ObjectRef, options?: CallOptions): Promise<T | undefined> {
    return this.inner.get<T>(type, ref, options);
  }

  list<T extends KubeObject>(
    type: ResourceType,
    namespace: string | undefined,
    query?: Record<string, string | number | boolean | undefined>,
    options?: CallOptions,
  ): Promise<KubeList<T>> {
    return this.inner.list<T>(type, namespace, query, options);
  }

  watch(...args: Parameters<KubeApi['watch']>): ReturnType<KubeApi['watch']> {
    return this.inner.watch(...args);
  }

  async create<T extends KubeObject>(
    type: ResourceType,
    object: T,
    options?: { fieldManager?: string } & CallOptions,
  ): Promise<T> {
    this.fence();
    return this.inner.create<T>(type, object, options);
  }

  async update<T extends KubeObject>(
    type: ResourceType,
    object: T,
    subresource?: string,
    options?: CallOptions,
  ): Promise<T> {
    this.fence();
    return this.inner.update<T>(type, object, subresource, options);
  }

  async apply<T extends KubeObject>(
    type: ResourceType,
    object: T,
    fieldManager: string,
    options?: { force?: boolean; subresource?: string } & CallOptions,
  ): Promise<T> {
    this.fence();
    return this.inner.apply<T>(type, object, fieldManager, options);
  }

  async patch<T extends KubeObject>(
    type: ResourceType,
    ref: ObjectRef,
    patchType: Exclude<PatchType, 'apply'>,
    body: unknown,
    fieldManager?: string,
    options?: CallOptions,
  ): Promise<T> {
    this.fence();
    return this.inner.patch<T>(type, ref, patchType, body, fieldManager, options);
  }

  async delete(type: ResourceType, ref: ObjectRef, body?: DeleteOptions, options?: CallOptions): Promise<void> {
    this.fence();
    return this.inner.delete(type, ref, body, options);
  }
}
