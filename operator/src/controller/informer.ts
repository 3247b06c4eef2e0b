import type { Logger } from '../observability/logger.ts';
import type { OperatorMetrics } from '../observability/metrics.ts';
import { ApiError, isForbidden, isGone, isNotFound } from './api-error.ts';
import { type BackoffOptions, backoffDelay, sleep } from './backoff.ts';
import type { KubeApi, KubeObject, ResourceType } from './kube-api.ts';

/**
 * A client-side cache of one resource type: list, then watch from the list's resourceVersion,
 * calling handlers on every change. client-node ships an informer, but it restarts by itself only
 * on 410 and timeouts (other errors stop it for good) and may or may not re-emit existing objects
 * after a restart; this one handles every way a watch ends:
 * - 410 Gone (resourceVersion too old) or an ERROR event: list again, and emit the difference;
 * - the server closing the watch (its timeout): watch again from the last resourceVersion;
 * - a network error or a refused request: back off exponentially, then watch again (list again if
 *   the watch is refused as expired); a forbidden one (RBAC) is logged as an error, with the fix;
 * - silence: bookmarks arrive about once a minute, so a watch quiet for `inactivityTimeoutMs` is
 *   stalled and restarted;
 * and emits every cached object again every `resyncMs` (periodic resync, level triggering).
 * Objects are cached without their `managedFields` (controller-runtime's default transform): half
 * of a Deployment as the API server returns it, and nothing here reads them; `transform` cuts them
 * further (./projection.ts).
 */

export type InformerEvent = 'add' | 'update' | 'delete' | 'resync';

/** The annotation of the bookmark that ends a streaming list's initial events. */
const INITIAL_EVENTS_END = 'k8s.io/initial-events-end';

/** The ApiError of a watch's ERROR event, whose object is the API server's Status. */
function watchError(object: KubeObject, what: string): ApiError {
  const status = object as unknown as { code?: number; message?: string };
  return new ApiError(status.code ?? 500, 'WatchError', `${what}: ${status.message ?? 'error event'}`);
}

/** Why a watch ended, when not by an error: the server closed it, 410 Gone, silence, or the stop. */
type WatchEnd = 'closed' | 'expired' | 'stalled' | 'stopped';

/** What a list returns: the objects by key, as cached, and the resourceVersion to watch from. */
interface Listed<T> {
  readonly objects: Map<string, T>;
  readonly resourceVersion: string;
}
/**
 * `initialList` is true for the adds of the first list: objects that existed before this process
 * started, which a controller may serve after new changes (controller-runtime's priority queue).
 * `previous` is the cached object an update replaces (client-go's OnUpdate(old, new)).
 */
export type InformerHandler<T> = (event: InformerEvent, object: T, initialList: boolean, previous?: T) => void;

/** Drops `metadata.managedFields`, in place: the transform every Informer applies at insert. */
function stripManagedFields(object: KubeObject): KubeObject {
  if (object.metadata && 'managedFields' in object.metadata) delete object.metadata.managedFields;
  return object;
}

/** What a reconciler reads from an informer: its cache, and whether the first list has filled it. */
export interface Cache<T> {
  get(key: string): T | undefined;
  /** True once the first list has filled the cache (of a multi-namespace cache: the part that holds `key`). */
  hasSynced(key?: string): boolean;
}

export interface InformerOptions {
  readonly client: KubeApi;
  readonly type: ResourceType;
  /**
   * Namespace to watch.
   * @default all namespaces
   */
  readonly namespace?: string;
  /**
   * Only objects matching this label selector.
   * @default every object
   */
  readonly labelSelector?: string;
  /**
   * Every cached object is handed to the handlers again this often.
   * @default 600000 (10 minutes, with up to 10 % jitter)
   */
  readonly resyncMs?: number;
  /**
   * A watch that receives nothing (not even a bookmark) this long is restarted.
   * @default 150000
   */
  readonly inactivityTimeoutMs?: number;
  /**
   * Delays between failed attempts.
   * @default 500 ms doubling up to 30 s
   */
  readonly backoff?: BackoffOptions;
  /**
   * Page size of the initial and every later list.
   * @default 500
   */
  readonly pageSize?: number;
  /**
   * Fill the cache from a streaming list (KEP 3157, client-go's WatchListClient): one watch with
   * `sendInitialEvents`, whose ADDED events are the objects, and which goes on as the watch after
   * its bookmark marked `k8s.io/initial-events-end`; the objects arrive one event at a time
   * instead of a page at a time. A server that refuses it (400 or 422: the
   * WatchList feature off, or a server before 1.27) is listed in pages from then on.
   * @default false: pages of `pageSize`
   */
  readonly watchList?: boolean;
  /**
   * What to do when list or watch is forbidden (403), which retrying alone cannot fix: logged
   * with the error at every retry.
   * @default the API server's message alone
   */
  readonly forbiddenFix?: string;
  /**
   * What to do when the API server does not serve the resource (404 on its list: a custom
   * resource whose CRD is not installed), which retrying alone cannot fix: logged at error level
   * with the error at every retry.
   * @default a warning with the API server's message alone
   */
  readonly notFoundFix?: string;
  /**
   * Applied to every object before it is cached and handed to the handlers (client-go's
   * TransformFunc): a cache of only the fields the controller reads.
   * @default the object as listed or watched, without managedFields
   */
  readonly transform?: (object: KubeObject) => KubeObject;
  readonly logger?: Logger;
  readonly metrics?: OperatorMetrics;
}

/** `namespace/name`, or `name` for cluster-scoped objects: the key of caches and work queues. */
export function objectKey(object: KubeObject): string {
  const { namespace, name } = object.metadata ?? {};
  return namespace ? `${namespace}/${name}` : `${name}`;
}

export class Informer<T extends KubeObject> implements Cache<T> {
  private readonly store = new Map<string, T>();
  private readonly handlers: InformerHandler<T>[] = [];
  private resourceVersion = '';
  /** The cache must be listed again before the next watch: at the start, and after 410 Gone. */
  private mustList = true;
  private synced = false;
  private syncWaiters: Array<() => void> = [];
  private refused = false;
  /** The server refused a streaming list: list in pages from now on. */
  private watchListRefused = false;
  private settleWaiters: Array<() => void> = [];
  private currentWatch?: AbortController;

  private readonly options: InformerOptions;

  constructor(options: InformerOptions) {
    this.options = options;
  }

  /** Registers a handler; call before start(). */
  on(handler: InformerHandler<T>): void {
    this.handlers.push(handler);
  }

  get(key: string): T | undefined {
    return this.store.get(key);
  }

  /** An object as listed or watched, as it is cached: without managedFields, then transformed. */
  private cacheable(object: KubeObject): T {
    const stripped = stripManagedFields(object);
    return (this.options.transform ? this.options.transform(stripped) : stripped) as T;
  }

  list(): T[] {
    return [...this.store.values()];
  }

  /** Objects in the cache. */
  get size(): number {
    return this.store.size;
  }

  /** True once the first list has filled the cache. */
  hasSynced(): boolean {
    return this.synced;
  }

  /** Resolves once synced, or when `signal` aborts (a stop must not wait for an API server that never answers). */
  waitForSync(signal?: AbortSignal): Promise<void> {
    if (this.synced || signal?.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        signal?.removeEventListener('abort', done);
        resolve();
      };
      this.syncWaiters.push(done);
      signal?.addEventListener('abort', done, { once: true });
    });
  }

  /**
   * Resolves once the cache has synced, or list/watch has been refused as forbidden: retrying
   * cannot sync it until someone grants access, so whoever waits for it should go on without it.
   */
  waitUntilSyncedOrForbidden(): Promise<void> {
    return this.synced || this.refused ? Promise.resolve() : new Promise((resolve) => this.settleWaiters.push(resolve));
  }

  /** Cuts the current watch, as a lost connection would (tests, and `stalled` detection). */
  dropWatch(): void {
    this.currentWatch?.abort();
  }

  /** Runs until `signal` aborts. Never throws: every failure is logged, backed off and retried. */
  async run(signal: AbortSignal): Promise<void> {
    const { resyncMs = 600_000 } = this.options;
    // Infinity: no periodic resync (setInterval would treat it as 1 ms).
    const resync = Number.isFinite(resyncMs)
      ? setInterval(() => this.resync(), resyncMs * (1 + Math.random() * 0.1))
      : undefined;
    resync?.unref();
    const untrack = this.options.metrics?.trackCache(
      this.options.type.resource,
      this.options.namespace ?? '*',
      () => this.size,
    );
    let failures = 0;
    try {
      while (!signal.aborted) {
        try {
          // A streaming list is the start of a watch, which goes on from the end of its initial events.
          const streamList = this.mustList && this.options.watchList === true && !this.watchListRefused;
          if (this.mustList && !streamList) await this.relist(signal);
          let ended: WatchEnd;
          try {
            ended = await this.watchOnce(signal, streamList);
          } catch (error) {
            if (
              !(streamList && this.mustList && error instanceof ApiError && (error.code === 400 || error.code === 422))
            )
              throw error;
            this.watchListRefused = true;
            this.options.logger?.warn(
              { resource: this.options.type.resource, error: error.message },
              'the API server refused a streaming list (sendInitialEvents); listing in pages instead',
            );
            continue;
          }
          this.restarted(ended);
          if (ended === 'expired') this.mustList = true;
          failures = 0;
        } catch (error) {
          if (signal.aborted) break;
          failures += 1;
          if (isGone(error)) this.mustList = true;
          this.restarted('error');
          const delay = backoffDelay(failures, this.options.backoff ?? { baseMs: 500, maxMs: 30_000 });
          const { logger, type, namespace, forbiddenFix, notFoundFix } = this.options;
          const where = {
            resource: type.resource,
            namespace: namespace ?? '*',
            error: (error as Error).message,
            retryInMs: delay,
          };
          if (isForbidden(error)) {
            this.refused = true;
            for (const resolve of this.settleWaiters.splice(0)) resolve();
            logger?.error(
              { ...where, fix: forbiddenFix },
              `list/watch of ${type.resource} ${namespace ? `in namespace ${namespace}` : 'in all namespaces'} is forbidden; retrying`,
            );
          } else if (isNotFound(error) && notFoundFix) {
            logger?.error(
              { ...where, fix: notFoundFix },
              `the API server does not serve ${type.resource}.${type.group}; retrying`,
            );
          } else {
            logger?.warn(where, 'list/watch failed, retrying');
          }
          await sleep(delay, signal);
        }
      }
    } finally {
      clearInterval(resync);
      untrack?.();
    }
  }

  private restarted(reason: string): void {
    this.options.metrics?.informerRestarts.inc({ resource: this.options.type.resource, reason });
  }

  /** Lists every object in pages and replaces the cache with them. */
  private async relist(signal: AbortSignal): Promise<void> {
    const listed = await this.listPages(signal);
    if (listed) this.replace(listed);
  }

  /** Replaces the cache with a list's objects, and emits what changed since the last list. */
  private replace({ objects: fresh, resourceVersion }: Listed<T>): void {
    const previous = new Map(this.store);
    const initialList = !this.synced;
    this.store.clear();
    for (const [key, object] of fresh) {
      this.store.set(key, object);
      const old = previous.get(key);
      if (!old) this.emit('add', object, initialList);
      else if (old.metadata?.resourceVersion !== object.metadata?.resourceVersion)
        this.emit('update', object, false, old);
    }
    for (const [key, object] of previous) {
      if (!fresh.has(key)) this.emit('delete', object);
    }
    this.resourceVersion = resourceVersion;
    this.mustList = false;
    if (!this.synced) {
      this.synced = true;
      for (const resolve of [...this.syncWaiters.splice(0), ...this.settleWaiters.splice(0)]) resolve();
    }
  }

  private async listPages(signal: AbortSignal): Promise<Listed<T> | undefined> {
    const { client, type, namespace, labelSelector, pageSize = 500 } = this.options;
    const fresh = new Map<string, T>();
    let continueToken: string | undefined;
    let resourceVersion = '';
    do {
      const page = await client.list<T>(
        type,
        namespace,
        { labelSelector, limit: pageSize, continue: continueToken },
        { signal },
      );
      // List items carry no apiVersion and kind (the list does); watch events do. Cache one shape.
      const kind = page.kind?.replace(/List$/, '');
      for (const item of page.items)
        fresh.set(
          objectKey(item),
          this.cacheable({ ...item, apiVersion: item.apiVersion ?? page.apiVersion, kind: item.kind ?? kind }),
        );
      continueToken = page.metadata.continue || undefined;
      resourceVersion = page.metadata.resourceVersion ?? '';
      if (signal.aborted) return undefined;
    } while (continueToken);

    return { objects: fresh, resourceVersion };
  }

  /**
   * One watch; resolves with why it ended, rejects on errors. With `streamList`, a streaming list
   * (KEP 3157): the watch asks for `sendInitialEvents` from a consistent read, its ADDED events
   * replace the cache once the bookmark marked `k8s.io/initial-events-end` has come, and it goes on
   * as the watch from that bookmark's resourceVersion, as client-go's reflector does. Ending the
   * stream at the bookmark and opening another would cost a request and an aborted HTTP/2 stream
   * per informer at every start.
   */
  private watchOnce(signal: AbortSignal, streamList: boolean): Promise<WatchEnd> {
    const { client, type, namespace, labelSelector, inactivityTimeoutMs = 150_000 } = this.options;
    // The streaming list's objects until its initial events end; undefined once they have (or without one).
    let initial: Map<string, T> | undefined = streamList ? new Map() : undefined;
    return new Promise((resolve, reject) => {
      let expired = false;
      let ended = false;
      const finish = (error: unknown) => {
        if (ended) return;
        ended = true;
        if (signal.aborted) resolve('stopped');
        else if (initial)
          reject(
            error instanceof Error && !(error instanceof DOMException)
              ? error
              : new Error(`streaming list of ${type.resource}: the watch ended before its initial events`),
          );
        else if (expired) resolve('expired');
        else if (error instanceof DOMException && error.name === 'TimeoutError') resolve('stalled');
        else if (error && !(error instanceof DOMException && error.name === 'AbortError')) reject(error);
        else resolve('closed');
      };
      client
        .watch(
          type,
          namespace,
          {
            ...(streamList
              ? { sendInitialEvents: true, resourceVersionMatch: 'NotOlderThan' }
              : { resourceVersion: this.resourceVersion }),
            allowWatchBookmarks: true,
            labelSelector,
            // The server ends the watch after this; spread reconnects of many clients over time.
            timeoutSeconds: 300 + Math.floor(Math.random() * 300),
          },
          (eventType, object) => {
            const rv = object.metadata?.resourceVersion;
            if (initial && eventType !== 'ERROR') {
              // Only ADDED events and bookmarks come before the initial events' end: the state at one resourceVersion.
              if (eventType === 'ADDED') {
                const cached = this.cacheable(object);
                initial.set(objectKey(cached), cached);
              } else if (eventType === 'BOOKMARK' && object.metadata?.annotations?.[INITIAL_EVENTS_END] === 'true') {
                this.replace({ objects: initial, resourceVersion: rv ?? '' });
                initial = undefined;
              }
              return;
            }
            switch (eventType) {
              case 'ADDED':
              case 'MODIFIED': {
                const cached = this.cacheable(object);
                const key = objectKey(cached);
                const previous = this.store.get(key);
                this.store.set(key, cached);
                this.emit(previous ? 'update' : 'add', cached, false, previous);
                break;
              }
              case 'DELETED':
                this.store.delete(objectKey(object));
                this.emit('delete', this.cacheable(object));
                break;
              case 'BOOKMARK':
                break;
              case 'ERROR': {
                const error = watchError(
                  object,
                  initial ? `streaming list of ${type.resource}` : `watch ${type.resource}`,
                );
                if (error.code === 410 && !initial) expired = true;
                else {
                  ended = true;
                  reject(error);
                }
                this.currentWatch?.abort();
                return;
              }
            }
            if (rv) this.resourceVersion = rv;
          },
          finish,
          inactivityTimeoutMs,
          { signal },
        )
        .then((controller) => {
          this.currentWatch = controller;
          if (ended) controller.abort();
        }, reject);
    });
  }

  private resync(): void {
    for (const object of this.store.values()) this.emit('resync', object);
  }

  private emit(event: InformerEvent, object: T, initialList = false, previous?: T): void {
    for (const handler of this.handlers) {
      try {
        handler(event, object, initialList, previous);
      } catch (error) {
        this.options.logger?.error(
          { resource: this.options.type.resource, error: (error as Error).message },
          'informer handler threw',
        );
      }
    }
  }
}
