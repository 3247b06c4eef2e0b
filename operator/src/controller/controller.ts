import type { Logger } from '../observability/logger.ts';
import { traceparentLink } from '../observability/tracing.ts';
import { objectKey } from './informer.ts';
import type { KubeObject, ResourceType } from './kube-api.ts';
import type { Manager, Runnable } from './manager.ts';
import type { MultiNamespaceInformer } from './multi-namespace-informer.ts';
import { ObjectWatches } from './object-watch.ts';
import { type HandlerResult, WorkQueue } from './work-queue.ts';

/**
 * A controller, as controller-runtime's builder makes one: it is `for` one primary type, `owns`
 * child types, and feeds the keys of changed primaries (and of the owners of changed children) to
 * a work queue whose workers call the Reconciler. Level-triggered: the reconciler reads the whole
 * current state, so a key stands for "look at this object again", never for one change. What an
 * outcome means (span, metrics, log line, requeue, terminal errors) is the work queue's one
 * decision. It runs on a Manager (manager.ts), which starts it while this replica leads.
 */

/** Reconciles the object `namespace/name`; throws to be retried, or a TerminalError when retrying cannot help. */
export interface Reconciler {
  // biome-ignore lint/suspicious/noConfusingVoidType: a handler that asks for nothing returns nothing, as most do.
  reconcile(key: string, abort: AbortSignal): Promise<HandlerResult | void>;
}

/**
 * Whether an update of a primary object is a change to reconcile (controller-runtime's
 * predicate): false for writes whose result the reconcile that made them already had.
 */
export type UpdatePredicate<T> = (previous: T, current: T) => boolean;

export interface ControllerOptions<T extends KubeObject> {
  /** Label of the work queue's and the reconcile metrics, the log field holding the key, and the span attributes' prefix. */
  readonly name: string;
  /** The primary type: its kind and API group name the owner of a child, and its informer enqueues each change. */
  readonly for: {
    readonly kind: string;
    readonly group: string;
    readonly informer: MultiNamespaceInformer<T>;
    readonly update?: UpdatePredicate<T>;
  };
  /** Informers of children: each change enqueues the child's controller owner of the primary kind. */
  readonly owns: ReadonlyArray<MultiNamespaceInformer<KubeObject>>;
  readonly reconciler: Reconciler;
  /** Keys reconciled at once. */
  readonly concurrency: number;
  /**
   * An annotation of the primary holding a W3C `traceparent` (set by whoever wrote the object, from
   * the span that wrote it): each reconcile's span links to that span, so a pipeline's trace leads
   * to the reconciles its write caused. Which write set it, not which event woke the reconcile.
   * @default no links
   */
  readonly traceparentAnnotation?: string;
}

/** The key of `child`'s controller owner when that owner is of `kind` in `group`. */
export function ownerKey(child: KubeObject, kind: string, group: string): string | undefined {
  const owner = child.metadata?.ownerReferences?.find(
    (ref) => ref.controller && ref.kind === kind && ref.apiVersion.startsWith(`${group}/`),
  );
  return owner ? `${child.metadata!.namespace}/${owner.name}` : undefined;
}

export class Controller<T extends KubeObject> implements Runnable {
  readonly queue: WorkQueue;
  private readonly options: ControllerOptions<T>;
  private readonly objectWatches: ObjectWatches;
  private readonly logger: Logger;

  constructor(manager: Manager, options: ControllerOptions<T>) {
    this.options = options;
    const { logger, metrics } = manager.deps;
    this.logger = logger;
    const { name, for: primary } = options;
    this.queue = new WorkQueue({
      name,
      concurrency: options.concurrency,
      span: (key, failures) => {
        const [namespace, objectName] = key.split('/');
        // The version the reconcile starts from: the API server's spans of the write that made it
        // carry no resourceVersion, but its audit log and the object's history do.
        const cached = primary.informer.get(key)?.metadata;
        const annotation = options.traceparentAnnotation;
        return {
          name: `reconcile ${primary.kind}`,
          attributes: {
            'k8s.namespace.name': namespace,
            [`${name}.name`]: objectName,
            [`${name}.retries`]: failures,
            ...(cached?.resourceVersion ? { [`${name}.resource_version`]: cached.resourceVersion } : {}),
          },
          links: annotation ? traceparentLink(cached?.annotations?.[annotation]) : undefined,
        };
      },
      metrics,
      logger,
    });
    this.objectWatches = new ObjectWatches({ client: manager.deps.client, logger });
    // Periodic resyncs and the objects of the first list wait behind new and changed ones.
    primary.informer.on((event, object, initialList, previous) => {
      if (event === 'update' && previous && primary.update && !primary.update(previous, object)) return;
      this.queue.add(objectKey(object), event === 'resync' || initialList ? 'low' : 'high');
    });
    for (const informer of options.owns) {
      informer.on((_, child) => {
        const key = ownerKey(child, primary.kind, primary.group);
        if (key) this.queue.add(key);
      });
    }
    manager.add(this);
  }

  /**
   * Enqueues `key` once `object` changes (its first change after the version read), for objects
   * no informer caches: one the reconcile of `key` failed on for good (controller-runtime's Watches).
   */
  watchUntilChanged(key: string, type: ResourceType, object: KubeObject): void {
    this.objectWatches.watch(`${key} ${type.resource}`, type, object, () => this.queue.add(key));
  }

  /** Objects watched by watchUntilChanged until they change. */
  get objectWatchCount(): number {
    return this.objectWatches.size;
  }

  /** Runs the queue's workers until `signal` aborts; starts by enqueuing every cached primary object. */
  async run(signal: AbortSignal, lease?: AbortSignal): Promise<void> {
    const { name, for: primary, reconciler } = this.options;
    const objects = primary.informer.list();
    for (const object of objects) this.queue.add(objectKey(object), 'low');
    this.logger.info({ controller: name, objects: objects.length }, 'reconciling');
    await this.queue.run((key, abort) => reconciler.reconcile(key, abort), signal, lease);
  }

  stop(): void {
    this.objectWatches.stop();
  }
}
