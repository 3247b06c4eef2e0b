import { randomUUID } from 'node:crypto';
import { ApiError } from '../controller/api-error.ts';
import { jsonEqual } from '../controller/apply.ts';
import type {
  DeleteOptions,
  KubeApi,
  KubeList,
  KubeObject,
  ObjectRef,
  PatchType,
  ResourceType,
} from '../controller/kube-api.ts';

/**
 * An in-memory API server for unit tests of the runtime (reconciler, informer, leader elector,
 * event recorder), in the manner of controller-runtime's fake client: objects get a uid,
 * resourceVersion, generation and creationTimestamp; writes are conditional on a resourceVersion
 * they carry; a delete of an object with finalizers only sets its deletionTimestamp, and removing
 * the last finalizer removes it; the garbage collector deletes dependents whose controller owner is
 * gone (unless the owner was deleted with the orphan policy); watches stream ADDED, MODIFIED and
 * DELETED, end after `inactivityTimeoutMs` without an event, and are answered 410 Gone from a
 * resourceVersion older than the last compaction; a watch with `sendInitialEvents` (a streaming list)
 * starts with every object as ADDED and a bookmark marked `k8s.io/initial-events-end`. Tests can make changes no watch sees, send
 * watches an event of their choosing (an ERROR), and stall them. Every request is recorded, with the code it was answered with, so tests can assert
 * request budgets. It is no API server: no schema validation, no admission, and server-side apply
 * is a deep merge of the applied object into the stored one (lists replaced).
 */

/** One request as the fake saw it. `verb` uses the operator's metric verbs (GET, LIST, CREATE, UPDATE, PATCH, APPLY, DELETE, WATCH). */
export interface RecordedRequest {
  readonly verb: string;
  readonly resource: string;
  readonly namespace?: string;
  readonly name?: string;
  readonly subresource?: string;
  readonly code: number;
}

interface Watcher {
  readonly type: ResourceType;
  readonly namespace?: string;
  readonly selector: Record<string, string>;
  /** From a `metadata.name=<name>` field selector (the only field selector the fake knows). */
  readonly name?: string;
  readonly onEvent: (type: string, object: KubeObject) => void;
  readonly onDone: (error: unknown) => void;
  readonly controller: AbortController;
  /** Ends the watch as stalled once nothing has arrived for `inactivityTimeoutMs`. */
  inactivity?: NodeJS.Timeout;
  /** A stalled watch stays open but receives nothing. */
  stalled: boolean;
}

/** A failure to answer instead of doing the request: tests of error paths. */
export interface InjectedFailure {
  readonly match: (request: Omit<RecordedRequest, 'code'>) => boolean;
  readonly error: ApiError;
  /** How many matching requests fail. @default 1 */
  times?: number;
}

const clone = <T>(value: T): T => structuredClone(value);

function typeKey(type: ResourceType): string {
  return `${type.group}/${type.resource}`;
}

function parseSelector(selector: unknown): Record<string, string> {
  if (typeof selector !== 'string' || selector === '') return {};
  return Object.fromEntries(
    selector.split(',').map((term) => {
      const [key, value] = term.split('=');
      return [key.trim(), (value ?? '').trim()];
    }),
  );
}

function nameOfFieldSelector(selector: unknown): string | undefined {
  if (typeof selector !== 'string' || selector === '') return undefined;
  const match = /^metadata\.name=([^,]+)$/.exec(selector);
  if (!match) throw new Error(`FakeKubeApi supports only the field selector metadata.name=<name>, not ${selector}`);
  return match[1];
}

/**
 * Finalizers that hold a deleted object. The garbage collector's `orphan` finalizer is handled at
 * removal here (dependents are orphaned then), not before, as the real one may be.
 */
function pendingFinalizers(object: KubeObject): string[] {
  return (object.metadata?.finalizers ?? []).filter((f) => f !== 'orphan');
}

function matches(object: KubeObject, selector: Record<string, string>): boolean {
  const labels = object.metadata?.labels ?? {};
  return Object.entries(selector).every(([key, value]) => labels[key] === value);
}

/** RFC 7386 merge patch: null deletes, objects merge, everything else replaces. */
function mergePatch(target: unknown, patch: unknown): unknown {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return clone(patch);
  const result: Record<string, unknown> =
    target && typeof target === 'object' && !Array.isArray(target) ? { ...(target as Record<string, unknown>) } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete result[key];
    else result[key] = mergePatch(result[key], value);
  }
  return result;
}

export class FakeKubeApi implements KubeApi {
  /** Every request in order. */
  readonly requests: RecordedRequest[] = [];
  private readonly objects = new Map<string, Map<string, KubeObject>>();
  private readonly watchers = new Set<Watcher>();
  private readonly failures: InjectedFailure[] = [];
  /** Every change, for watches that start from an earlier resourceVersion. */
  private readonly history: Array<{ type: ResourceType; event: string; object: KubeObject }> = [];
  private revision = 1;
  /** Watches from an older resourceVersion are answered 410 Gone: the history before it is gone. */
  private compactedAt = 0;
  /** While true (unobserved), changes reach neither the watches nor the history. */
  private silent = false;

  /** Makes matching requests fail with `error` (once, or `times` times). */
  failWith(match: InjectedFailure['match'], error: ApiError, times = 1): void {
    this.failures.push({ match, error, times });
  }

  /** Requests recorded since `mark` (an index into `requests`), as "VERB resource[/subresource] code" lines. */
  since(mark: number): string[] {
    return this.requests
      .slice(mark)
      .map((r) => `${r.verb} ${r.resource}${r.subresource ? `/${r.subresource}` : ''} ${r.code}`);
  }

  /** The stored object, as a copy (undefined when absent); records no request. */
  peek<T extends KubeObject>(type: ResourceType, namespace: string | undefined, name: string): T | undefined {
    const object = this.table(type).get(`${namespace ?? ''}/${name}`);
    return object ? (clone(object) as T) : undefined;
  }

  /** Changes a stored object as another client would (a controller writing status): no request recorded. */
  modify(
    type: ResourceType,
    namespace: string | undefined,
    name: string,
    change: (object: KubeObject) => void,
  ): KubeObject {
    const current = this.peek(type, namespace, name);
    if (!current) throw new Error(`no ${type.resource} ${namespace}/${name}`);
    change(current);
    return this.store(type, current, 'MODIFIED');
  }

  async get<T extends KubeObject>(type: ResourceType, ref: ObjectRef): Promise<T | undefined> {
    const object = this.table(type).get(`${ref.namespace ?? ''}/${ref.name}`);
    this.answer('GET', type, ref, object ? 200 : 404);
    return object ? (clone(object) as T) : undefined;
  }

  async list<T extends KubeObject>(
    type: ResourceType,
    namespace: string | undefined,
    query: Record<string, string | number | boolean | undefined> = {},
  ): Promise<KubeList<T>> {
    this.answer('LIST', type, { namespace }, 200);
    const selector = parseSelector(query.labelSelector);
    const items = [...this.table(type).values()].filter(
      (o) => (!namespace || o.metadata?.namespace === namespace) && matches(o, selector),
    );
    return { items: clone(items) as T[], metadata: { resourceVersion: String(this.revision) } };
  }

  async create<T extends KubeObject>(type: ResourceType, object: T): Promise<T> {
    const { namespace } = object.metadata ?? {};
    let name = object.metadata?.name;
    if (!name && typeof object.metadata?.generateName === 'string')
      name = `${object.metadata.generateName}${randomUUID().slice(0, 5)}`;
    const ref = { namespace, name };
    if (this.table(type).has(`${namespace ?? ''}/${name}`)) {
      throw this.fail(
        'CREATE',
        type,
        ref,
        new ApiError(409, 'AlreadyExists', `${type.resource} "${name}" already exists`),
      );
    }
    this.answer('CREATE', type, ref, 201);
    const created = clone(object) as KubeObject;
    created.metadata = {
      ...created.metadata,
      name,
      uid: randomUUID(),
      generation: 1,
      creationTimestamp: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    };
    return this.store(type, created, 'ADDED') as T;
  }

  async update<T extends KubeObject>(type: ResourceType, object: T, subresource?: string): Promise<T> {
    const ref = { namespace: object.metadata?.namespace, name: object.metadata?.name, subresource };
    const current = this.existing(type, ref, 'UPDATE', object.metadata?.resourceVersion);
    this.answer('UPDATE', type, ref, 200);
    const next =
      subresource === 'status'
        ? { ...current, status: clone(object.status) }
        : { ...clone(object), status: current.status, metadata: { ...object.metadata, uid: current.metadata!.uid } };
    return this.write(type, current, next) as T;
  }

  async apply<T extends KubeObject>(
    type: ResourceType,
    object: T,
    _fieldManager: string,
    { subresource }: { force?: boolean; subresource?: string } = {},
  ): Promise<T> {
    const ref = { namespace: object.metadata?.namespace, name: object.metadata?.name, subresource };
    const current = this.table(type).get(`${ref.namespace ?? ''}/${ref.name}`);
    if (!current) {
      this.answer('APPLY', type, ref, 201);
      const created = clone(object) as KubeObject;
      created.metadata = { ...created.metadata, uid: randomUUID(), generation: 1 };
      return this.store(type, created, 'ADDED') as T;
    }
    this.precondition('APPLY', type, ref, current, object.metadata?.resourceVersion);
    this.answer('APPLY', type, ref, 200);
    // Lists are replaced whole: enough for the objects the operator renders.
    return this.write(type, current, mergePatch(current, clone(object)) as KubeObject) as T;
  }

  async patch<T extends KubeObject>(
    type: ResourceType,
    ref: ObjectRef,
    patchType: Exclude<PatchType, 'apply'>,
    body: unknown,
  ): Promise<T> {
    if (patchType !== 'merge') throw new Error(`FakeKubeApi supports merge patches only, not ${patchType}`);
    const patchMeta = (body as KubeObject).metadata;
    const current = this.existing(type, ref, 'PATCH', patchMeta?.resourceVersion);
    this.answer('PATCH', type, ref, 200);
    let next: KubeObject;
    if (ref.subresource === 'status')
      next = { ...current, status: mergePatch(current.status, (body as KubeObject).status) };
    else
      next = {
        ...(mergePatch(current, { ...(body as object), status: undefined }) as KubeObject),
        status: current.status,
      };
    return this.write(type, current, next) as T;
  }

  async delete(type: ResourceType, ref: ObjectRef, body: DeleteOptions = {}): Promise<void> {
    const current = this.existing(type, ref, 'DELETE');
    if (body.preconditions?.uid && body.preconditions.uid !== current.metadata?.uid) {
      throw this.fail(
        'DELETE',
        type,
        ref,
        new ApiError(
          409,
          'Conflict',
          `precondition failed: uid in precondition: ${body.preconditions.uid}, uid in object meta: ${current.metadata?.uid}`,
        ),
      );
    }
    this.answer('DELETE', type, ref, 200);
    if (body.propagationPolicy === 'Orphan') {
      current.metadata = { ...current.metadata, finalizers: [...(current.metadata?.finalizers ?? []), 'orphan'] };
    }
    if (pendingFinalizers(current).length > 0) {
      if (!current.metadata?.deletionTimestamp)
        this.write(type, current, {
          ...current,
          metadata: { ...current.metadata, deletionTimestamp: new Date().toISOString() },
        });
      return;
    }
    this.remove(type, current);
  }

  readonly watch: KubeApi['watch'] = async (type, namespace, query, onEvent, onDone, inactivityTimeoutMs, options) => {
    const from = Number(query.resourceVersion ?? 0);
    if (from > 0 && from < this.compactedAt) {
      throw this.fail(
        'WATCH',
        type,
        { namespace },
        new ApiError(410, 'Expired', `too old resource version: ${from} (${this.compactedAt})`),
      );
    }
    // The API server's validation: a streaming list is a consistent read or one not older than a resourceVersion.
    if (query.sendInitialEvents && query.resourceVersionMatch !== 'NotOlderThan')
      throw this.fail(
        'WATCH',
        type,
        { namespace },
        new ApiError(
          422,
          'Invalid',
          'resourceVersionMatch: Unsupported value: must be NotOlderThan with sendInitialEvents',
        ),
      );
    this.answer('WATCH', type, { namespace }, 200);
    const controller = new AbortController();
    // The caller's signal stops it like its controller; the listener goes once the watch has ended.
    const stop = () => controller.abort();
    const ended = (error: unknown) => {
      options?.signal?.removeEventListener('abort', stop);
      onDone(error);
    };
    // Every event delivered restarts the inactivity timer.
    const delivered = (eventType: string, object: KubeObject) => {
      idle();
      onEvent(eventType, object);
    };
    const watcher: Watcher = {
      type,
      namespace,
      selector: parseSelector(query.labelSelector),
      name: nameOfFieldSelector(query.fieldSelector),
      onEvent: delivered,
      onDone: ended,
      controller,
      stalled: false,
    };
    const idle = () => {
      clearTimeout(watcher.inactivity);
      watcher.inactivity = setTimeout(() => {
        if (this.watchers.delete(watcher))
          ended(new DOMException('The operation was aborted due to timeout', 'TimeoutError'));
      }, inactivityTimeoutMs);
      watcher.inactivity.unref();
    };
    idle();
    // A streaming list: every object as ADDED, then the bookmark that ends the initial events.
    if (query.sendInitialEvents) {
      for (const object of this.table(type).values()) this.deliver(watcher, type, 'ADDED', object);
      watcher.onEvent('BOOKMARK', {
        metadata: { resourceVersion: String(this.revision), annotations: { 'k8s.io/initial-events-end': 'true' } },
      });
    } else if (from > 0) {
      // Changes after the resourceVersion the watch starts from, as the API server replays them.
      for (const change of this.history) {
        if (Number(change.object.metadata?.resourceVersion) > from)
          this.deliver(watcher, change.type, change.event, change.object);
      }
    }
    this.watchers.add(watcher);
    controller.signal.addEventListener('abort', () => {
      clearTimeout(watcher.inactivity);
      if (this.watchers.delete(watcher)) ended(undefined);
    });
    options?.signal?.addEventListener('abort', stop, { once: true });
    if (options?.signal?.aborted) controller.abort();
    return controller;
  };

  /** Makes the changes of `change` as no watch sees them: missed, and gone from the history (compaction). */
  async unobserved(change: () => Promise<unknown> | unknown): Promise<void> {
    this.silent = true;
    try {
      await change();
    } finally {
      this.silent = false;
    }
  }

  /** Compacts the history, as etcd does: a watch from an older resourceVersion is answered 410 Gone. */
  compact(): void {
    this.compactedAt = this.revision;
    this.history.length = 0;
  }

  /** Sends every open watch (not stalled) this event as it is: an ERROR with a Status, say. */
  sendToWatches(eventType: string, object: Record<string, unknown>): void {
    for (const watcher of [...this.watchers])
      if (!watcher.stalled) watcher.onEvent(eventType, clone(object) as KubeObject);
  }

  /** Open watches (of `type`, or all) stay open but receive nothing more, as a connection that went silent. */
  stallWatches(type?: ResourceType): void {
    for (const watcher of this.watchers) if (!type || typeKey(watcher.type) === typeKey(type)) watcher.stalled = true;
  }

  /** Ends every open watch as the API server closing them would. */
  closeWatches(): void {
    for (const watcher of [...this.watchers]) watcher.controller.abort();
  }

  private table(type: ResourceType): Map<string, KubeObject> {
    let table = this.objects.get(typeKey(type));
    if (!table) {
      table = new Map();
      this.objects.set(typeKey(type), table);
    }
    return table;
  }

  private existing(type: ResourceType, ref: ObjectRef, verb: string, resourceVersion?: string): KubeObject {
    const current = this.table(type).get(`${ref.namespace ?? ''}/${ref.name}`);
    if (!current)
      throw this.fail(verb, type, ref, new ApiError(404, 'NotFound', `${type.resource} "${ref.name}" not found`));
    this.precondition(verb, type, ref, current, resourceVersion);
    return clone(current);
  }

  private precondition(
    verb: string,
    type: ResourceType,
    ref: ObjectRef,
    current: KubeObject,
    resourceVersion: string | undefined,
  ): void {
    if (resourceVersion && resourceVersion !== current.metadata?.resourceVersion) {
      throw this.fail(
        verb,
        type,
        ref,
        new ApiError(
          409,
          'Conflict',
          `Operation cannot be fulfilled on ${type.resource} "${ref.name}": the object has been modified; please apply your changes to the latest version and try again`,
        ),
      );
    }
  }

  /** Stores `next` in place of `current`: generation moves with the spec; the last finalizer of a deleted object removes it. */
  private write(type: ResourceType, current: KubeObject, next: KubeObject): KubeObject {
    const metadata = {
      ...next.metadata,
      uid: current.metadata?.uid,
      creationTimestamp: current.metadata?.creationTimestamp,
      deletionTimestamp: current.metadata?.deletionTimestamp ?? next.metadata?.deletionTimestamp,
    };
    const specChanged = !jsonEqual(next.spec ?? null, current.spec ?? null);
    metadata.generation = (current.metadata?.generation ?? 1) + (specChanged ? 1 : 0);
    const stored = { ...next, metadata };
    if (metadata.deletionTimestamp && pendingFinalizers(stored).length === 0) {
      this.remove(type, stored);
      return clone(stored);
    }
    // A write that changes nothing is no change: no new resourceVersion, no watch event.
    const withoutVersion = (o: KubeObject) => ({ ...o, metadata: { ...o.metadata, resourceVersion: undefined } });
    if (jsonEqual(withoutVersion(current), withoutVersion(stored))) return clone(current);
    return this.store(type, stored, 'MODIFIED');
  }

  private store(type: ResourceType, object: KubeObject, event: 'ADDED' | 'MODIFIED'): KubeObject {
    object.metadata = { ...object.metadata, resourceVersion: String(++this.revision) };
    const stored = clone(object);
    this.table(type).set(`${object.metadata.namespace ?? ''}/${object.metadata.name}`, stored);
    this.notify(type, event, stored);
    return clone(stored);
  }

  /** Removes the object, then (as the garbage collector) what it controlled, unless it was orphaning them. */
  private remove(type: ResourceType, object: KubeObject): void {
    this.table(type).delete(`${object.metadata?.namespace ?? ''}/${object.metadata?.name}`);
    object.metadata = { ...object.metadata, resourceVersion: String(++this.revision) };
    this.notify(type, 'DELETED', clone(object));
    const orphan = (object.metadata?.finalizers ?? []).includes('orphan');
    for (const [key, table] of this.objects) {
      for (const dependent of [...table.values()]) {
        const refs = dependent.metadata?.ownerReferences ?? [];
        if (!refs.some((ref) => ref.uid === object.metadata?.uid)) continue;
        const [group, resource] = key.split('/');
        const dependentType = { group, version: 'v1', resource };
        if (orphan) {
          this.store(
            dependentType,
            {
              ...dependent,
              metadata: {
                ...dependent.metadata,
                ownerReferences: refs.filter((ref) => ref.uid !== object.metadata?.uid),
              },
            },
            'MODIFIED',
          );
        } else {
          this.remove(dependentType, dependent);
        }
      }
    }
  }

  private notify(type: ResourceType, event: string, object: KubeObject): void {
    if (this.silent) return;
    this.history.push({ type, event, object: clone(object) });
    for (const watcher of this.watchers) this.deliver(watcher, type, event, object);
  }

  private deliver(watcher: Watcher, type: ResourceType, event: string, object: KubeObject): void {
    if (watcher.stalled || typeKey(watcher.type) !== typeKey(type)) return;
    if (watcher.namespace && watcher.namespace !== object.metadata?.namespace) return;
    if (!matches(object, watcher.selector)) return;
    if (watcher.name !== undefined && watcher.name !== object.metadata?.name) return;
    watcher.onEvent(event, clone(object));
  }

  private answer(verb: string, type: ResourceType, ref: ObjectRef, code: number): void {
    const request = {
      verb,
      resource: type.resource,
      namespace: ref.namespace,
      name: ref.name,
      subresource: ref.subresource,
    };
    const failure = this.failures.find((f) => (f.times ?? 1) > 0 && f.match(request));
    if (failure) {
      failure.times = (failure.times ?? 1) - 1;
      this.requests.push({ ...request, code: failure.error.code });
      throw failure.error;
    }
    this.requests.push({ ...request, code });
  }

  private fail(verb: string, type: ResourceType, ref: ObjectRef, error: ApiError): ApiError {
    this.requests.push({
      verb,
      resource: type.resource,
      namespace: ref.namespace,
      name: ref.name,
      subresource: ref.subresource,
      code: error.code,
    });
    return error;
  }
}
