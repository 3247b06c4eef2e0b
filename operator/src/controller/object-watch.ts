import type { Logger } from '../observability/logger.ts';
import { type BackoffOptions, backoffDelay, sleep } from './backoff.ts';
import { type KubeApi, type KubeObject, type ResourceType, resourcePath } from './kube-api.ts';

/**
 * Watches of single objects that no informer caches, each until the object changes once: the
 * trigger of a key whose reconcile ended with a TerminalError because of such an object (a child
 * name taken by an object the operator does not manage, which the label-selected informers never
 * see). A watch with `fieldSelector=metadata.name=<name>` needs only the `watch` verb the
 * informers already hold, and costs one connection per such object, which a person has to fix,
 * so there are few.
 *
 * The object's first change after the version read (an edit, a deletion) calls `onChange` once,
 * and the watch ends. A watch the server closes (its timeout) or that falls silent is resumed from
 * the last version seen; one that fails (a lost connection, a refusal) is resumed after a backoff,
 * as the informers do, never at once: calling back instead would reconcile, fail terminally and
 * watch again in a loop with no backoff at all.
 */

export interface ObjectWatchesOptions {
  readonly client: KubeApi;
  readonly logger?: Logger;
  /**
   * A watch that receives nothing (not even a bookmark) this long is resumed.
   * @default 150000 (as the informers)
   */
  readonly inactivityTimeoutMs?: number;
  /**
   * Delays between failed attempts.
   * @default 500 ms doubling up to 30 s (as the informers)
   */
  readonly backoff?: BackoffOptions;
}

export class ObjectWatches {
  private readonly watches = new Map<string, AbortController>();
  private stopped = false;
  private readonly options: ObjectWatchesOptions;

  constructor(options: ObjectWatchesOptions) {
    this.options = options;
  }

  /** Objects watched right now. */
  get size(): number {
    return this.watches.size;
  }

  /** Watches `object` (as read, with its resourceVersion) under `id`, replacing an earlier watch of that id. */
  watch(id: string, type: ResourceType, object: KubeObject, onChange: () => void): void {
    if (this.stopped) return;
    this.watches.get(id)?.abort();
    const handle = new AbortController();
    this.watches.set(id, handle);
    const { namespace, name } = object.metadata ?? {};
    let resourceVersion = object.metadata?.resourceVersion ?? '';
    const end = () => {
      if (this.watches.get(id) === handle) this.watches.delete(id);
      handle.abort();
    };
    let failures = 0;
    const failed = (error: Error) => {
      failures += 1;
      const retryInMs = backoffDelay(failures, this.options.backoff ?? { baseMs: 500, maxMs: 30_000 });
      this.options.logger?.warn(
        { object: resourcePath(type, { namespace, name }), error: error.message, retryInMs },
        'watch of an object that blocks a reconcile failed, retrying',
      );
      void sleep(retryInMs, handle.signal).then(start);
    };
    const start = () => {
      if (handle.signal.aborted) return;
      let changed = false;
      this.options.client
        .watch(
          type,
          namespace,
          {
            fieldSelector: `metadata.name=${name}`,
            resourceVersion,
            allowWatchBookmarks: true,
            timeoutSeconds: 300 + Math.floor(Math.random() * 300),
          },
          (event, current) => {
            failures = 0;
            if (event === 'BOOKMARK') {
              resourceVersion = current.metadata?.resourceVersion ?? resourceVersion;
              return;
            }
            // ADDED, MODIFIED, DELETED, or ERROR (the version read is too old): read it again.
            if (changed) return;
            changed = true;
            end();
            onChange();
          },
          (error) => {
            if (changed || handle.signal.aborted) return;
            if (error && !(error instanceof DOMException)) return failed(error as Error);
            // Closed by the server, or silent for too long: resume from the last version seen.
            start();
          },
          this.options.inactivityTimeoutMs ?? 150_000,
        )
        .then((controller) => {
          if (handle.signal.aborted) controller.abort();
          else handle.signal.addEventListener('abort', () => controller.abort(), { once: true });
        }, failed);
    };
    start();
  }

  /** Ends every watch (shutdown). */
  stop(): void {
    this.stopped = true;
    for (const handle of this.watches.values()) handle.abort();
    this.watches.clear();
  }
}
