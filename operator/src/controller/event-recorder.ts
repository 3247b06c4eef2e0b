import type { Logger } from '../observability/logger.ts';
import { EVENTS, type KubeClient, type KubeObject } from './kube-client.ts';
import { metaTime } from './time.ts';

/**
 * Records core/v1 Events about an object (`kubectl describe` shows them). The operator's Role
 * allows only `create` on events (spec §5), so client-go's aggregation (patching the count of a
 * repeated event) is not available; instead an identical event (same object, type, reason and
 * message) is recorded at most once per `dedupeWindowMs`. Recording never fails the caller: an
 * event that cannot be written is logged and dropped.
 */

export type EventType = 'Normal' | 'Warning';

export interface EventRecorderOptions {
  readonly client: KubeClient;
  /** `source.component` / `reportingComponent`. */
  readonly component: string;
  /** `reportingInstance`: the pod name. */
  readonly instance: string;
  /**
   * An identical event is recorded again only after this long.
   * @default 600000
   */
  readonly dedupeWindowMs?: number;
  readonly logger?: Logger;
}

/** The API server accepts long messages, but `kubectl describe` does not wrap them; keep them readable. */
const MAX_MESSAGE = 1024;

export class EventRecorder {
  private readonly recent = new Map<string, number>();

  private readonly options: EventRecorderOptions;

  constructor(options: EventRecorderOptions) {
    this.options = options;
  }

  async record(object: KubeObject, type: EventType, reason: string, message: string): Promise<void> {
    const { client, component, instance, dedupeWindowMs = 600_000, logger } = this.options;
    const meta = object.metadata ?? {};
    const text = message.length > MAX_MESSAGE ? `${message.slice(0, MAX_MESSAGE - 1)}…` : message;
    const key = `${meta.uid}\0${type}\0${reason}\0${text}`;
    const now = Date.now();
    const last = this.recent.get(key);
    if (last !== undefined && now - last < dedupeWindowMs) return;
    this.recent.set(key, now);
    this.prune(now, dedupeWindowMs);
    const timestamp = metaTime(new Date(now));
    try {
      await client.create(EVENTS, {
        apiVersion: 'v1',
        kind: 'Event',
        metadata: { generateName: `${meta.name}.`, namespace: meta.namespace },
        involvedObject: {
          apiVersion: object.apiVersion,
          kind: object.kind,
          name: meta.name,
          namespace: meta.namespace,
          uid: meta.uid,
          resourceVersion: meta.resourceVersion,
        },
        type,
        reason,
        message: text,
        source: { component },
        reportingComponent: component,
        reportingInstance: instance,
        firstTimestamp: timestamp,
        lastTimestamp: timestamp,
        count: 1,
      });
    } catch (error) {
      this.recent.delete(key);
      logger?.warn({ reason, object: `${meta.namespace}/${meta.name}`, error: (error as Error).message }, 'could not record event');
    }
  }

  private prune(now: number, windowMs: number): void {
    if (this.recent.size < 10_000) return;
    for (const [key, at] of this.recent) if (now - at >= windowMs) this.recent.delete(key);
  }
}
