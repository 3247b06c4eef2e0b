import { type Cache, Informer, type InformerHandler, type InformerOptions } from './informer.ts';
import type { KubeObject } from './kube-api.ts';

/**
 * One Informer per namespace behind the surface of a single one, as controller-runtime's
 * multi-namespace cache does: RBAC can grant a list of namespaces (a Role in each) but then no
 * list or watch across all of them. Each namespace lists, watches, fails and retries on its own, so
 * one that cannot be listed (forbidden, say) holds up none of the others. Without namespaces it is
 * a single Informer over all namespaces.
 */

export interface MultiNamespaceInformerOptions extends Omit<InformerOptions, 'namespace' | 'forbiddenFix'> {
  /** The namespaces to watch; undefined: all namespaces, with one cluster-wide list and watch. */
  readonly namespaces: readonly string[] | undefined;
  /**
   * What to do when list or watch in `namespace` (undefined: all namespaces) is forbidden.
   * @default the API server's message alone
   */
  readonly forbiddenFix?: (namespace: string | undefined) => string;
}

export class MultiNamespaceInformer<T extends KubeObject> implements Cache<T> {
  /** The Informer of each namespace, or of all namespaces under the key `*`. */
  readonly informers: ReadonlyMap<string, Informer<T>>;
  private readonly allNamespaces?: Informer<T>;

  constructor(options: MultiNamespaceInformerOptions) {
    const { namespaces, forbiddenFix, ...common } = options;
    const informer = (namespace?: string) =>
      new Informer<T>({ ...common, namespace, forbiddenFix: forbiddenFix?.(namespace) });
    if (namespaces) {
      this.informers = new Map(namespaces.map((namespace) => [namespace, informer(namespace)]));
    } else {
      this.allNamespaces = informer();
      this.informers = new Map([['*', this.allNamespaces]]);
    }
  }

  /** Registers a handler on every namespace's Informer; call before run(). */
  on(handler: InformerHandler<T>): void {
    for (const informer of this.informers.values()) informer.on(handler);
  }

  get(key: string): T | undefined {
    return this.informerOf(key)?.get(key);
  }

  list(): T[] {
    return [...this.informers.values()].flatMap((informer) => informer.list());
  }

  /** Objects in the caches of every namespace. */
  get size(): number {
    let size = 0;
    for (const informer of this.informers.values()) size += informer.size;
    return size;
  }

  /** With a key: whether its namespace has synced. Without: whether every namespace has. */
  hasSynced(key?: string): boolean {
    if (key !== undefined) return this.informerOf(key)?.hasSynced() ?? false;
    return [...this.informers.values()].every((informer) => informer.hasSynced());
  }

  /** Resolves once every namespace has synced. */
  async waitForSync(signal?: AbortSignal): Promise<void> {
    await Promise.all([...this.informers.values()].map((informer) => informer.waitForSync(signal)));
  }

  /** Resolves once every namespace has synced or been refused as forbidden. */
  async waitUntilSyncedOrForbidden(): Promise<void> {
    await Promise.all([...this.informers.values()].map((informer) => informer.waitUntilSyncedOrForbidden()));
  }

  /** Runs every namespace's Informer until `signal` aborts; never throws. */
  async run(signal: AbortSignal): Promise<void> {
    await Promise.all([...this.informers.values()].map((informer) => informer.run(signal)));
  }

  private informerOf(key: string): Informer<T> | undefined {
    if (this.allNamespaces) return this.allNamespaces;
    const slash = key.indexOf('/');
    return slash < 0 ? undefined : this.informers.get(key.slice(0, slash));
  }
}
