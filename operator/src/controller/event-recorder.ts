import type { Logger } from '../observability/logger.ts';
import { EVENTS, type KubeApi, type KubeObject } from './kube-api.ts';
import { metaTime } from './time.ts';

/**
 * Records core/v1 Events about an object (`kubectl describe` shows them), off the caller's path:
 * `record` returns at once and a background sender writes the events, so a reconcile never waits
 * for an Event between its writes. Like client-go's recorder, it filters before it writes:
 * - an identical event (same object, type, reason and message) is written at most once per
 *   `windowMs`;
 * - similar events (same object, type and reason, other messages) beyond `similarLimit` within
 *   `windowMs` become one event whose message starts "(combined from similar events): ";
 * - each object may spend `burst` events, regaining one every 5 minutes (client-go's spam filter);
 * - at most `maxQueued` events wait to be written; more are dropped with a log line.
 * client-go then PATCHes the count of a repeated event; the operator's Role allows only `create`
 * on events (spec §5), so a repeat within the window is dropped instead. Writing never fails the
 * caller: an event that cannot be written is logged and dropped.
 */

export type EventType = 'Normal' | 'Warning';

export interface EventRecorderOptions {
  readonly client: KubeApi;
  /** `source.component` / `reportingComponent`. */
  readonly component: string;
  /** `reportingInstance`: the pod name. */
  readonly instance: string;
  /**
   * How long an identical event is suppressed, and the window similar events are counted in.
   * @default 600000 (client-go's 10 minutes)
   */
  readonly windowMs?: number;
  /**
   * Similar events (other messages) recorded as they are before they are combined.
   * @default 10 (client-go's maxSimilarEvents)
   */
  readonly similarLimit?: number;
  /**
   * Events an object may spend at once; one more every 5 minutes.
   * @default 25 (client-go's spam filter)
   */
  readonly burst?: number;
  /**
   * Events waiting to be written at most.
   * @default 1000 (client-go's maxQueuedEvents)
   */
  readonly maxQueued?: number;
  /**
   * Events written at once.
   * @default 4
   */
  readonly concurrency?: number;
  readonly logger?: Logger;
}

/** The API server accepts long messages, but `kubectl describe` does not wrap them; keep them readable. */
const MAX_MESSAGE = 1024;
/** The spam filter's refill: one event per object every 5 minutes. */
const REFILL_MS = 300_000;
const COMBINED = '(combined from similar events): ';

export class EventRecorder {
  private readonly options: EventRecorderOptions;
  /** Last time each identical event was written. */
  private readonly identical = new Map<string, number>();
  /** Similar events per object, type and reason: the messages seen in the current window. */
  private readonly similar = new Map<string, { since: number; messages: Set<string> }>();
  /** Spam filter tokens per object. */
  private readonly tokens = new Map<string, { tokens: number; at: number }>();
  private readonly queue: Array<{ event: KubeObject; key: string }> = [];
  private inFlight = 0;
  private idle: Array<() => void> = [];
  private droppedSinceLog = 0;

  constructor(options: EventRecorderOptions) {
    this.options = options;
  }

  /** Queues an event about `object`; returns at once. */
  record(object: KubeObject, type: EventType, reason: string, message: string): void {
    const { windowMs = 600_000, similarLimit = 10, burst = 25, maxQueued = 1000, logger } = this.options;
    const meta = object.metadata ?? {};
    const now = Date.now();
    this.prune(now, windowMs);

    let text = message.length > MAX_MESSAGE ? `${message.slice(0, MAX_MESSAGE - 1)}…` : message;
    const similarKey = `${meta.uid}\0${type}\0${reason}`;
    let group = this.similar.get(similarKey);
    if (!group || now - group.since >= windowMs) {
      group = { since: now, messages: new Set() };
      this.similar.set(similarKey, group);
    }
    group.messages.add(text);
    if (group.messages.size > similarLimit) text = `${COMBINED}${text}`.slice(0, MAX_MESSAGE);

    const identicalKey = `${similarKey}\0${text.startsWith(COMBINED) ? COMBINED : text}`;
    const last = this.identical.get(identicalKey);
    if (last !== undefined && now - last < windowMs) return;

    const bucket = this.tokens.get(`${meta.uid}`) ?? { tokens: burst, at: now };
    bucket.tokens = Math.min(burst, bucket.tokens + (now - bucket.at) / REFILL_MS);
    bucket.at = now;
    this.tokens.set(`${meta.uid}`, bucket);
    if (bucket.tokens < 1) return;
    bucket.tokens -= 1;

    if (this.queue.length >= maxQueued) {
      if (this.droppedSinceLog++ === 0)
        logger?.warn({ maxQueued }, 'too many events waiting to be written; dropping new ones');
      return;
    }
    this.identical.set(identicalKey, now);
    const timestamp = metaTime(new Date(now));
    const event: KubeObject = {
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
      source: { component: this.options.component },
      reportingComponent: this.options.component,
      reportingInstance: this.options.instance,
      firstTimestamp: timestamp,
      lastTimestamp: timestamp,
      count: 1,
    };
    this.queue.push({ event, key: identicalKey });
    this.pump();
  }

  /** Resolves when every queued event has been written (or dropped), or after `timeoutMs`. */
  async flush(timeoutMs = 5_000): Promise<void> {
    if (this.queue.length === 0 && this.inFlight === 0) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      new Promise<void>((resolve) => this.idle.push(resolve)),
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, timeoutMs);
      }),
    ]);
    clearTimeout(timer);
  }

  private pump(): void {
    const { client, concurrency = 4, logger } = this.options;
    while (this.inFlight < concurrency && this.queue.length > 0) {
      const { event, key } = this.queue.shift()!;
      this.inFlight += 1;
      client
        .create(EVENTS, event)
        .catch((error: Error) => {
          // Not written: the next identical event may try again.
          this.identical.delete(key);
          const involved = event.involvedObject as { namespace?: string; name?: string };
          logger?.warn(
            { reason: event.reason, object: `${involved.namespace}/${involved.name}`, error: error.message },
            'could not record event',
          );
        })
        .finally(() => {
          this.inFlight -= 1;
          if (this.queue.length > 0) this.pump();
          else if (this.inFlight === 0) {
            if (this.droppedSinceLog > 1)
              logger?.warn({ dropped: this.droppedSinceLog }, 'events dropped while too many were waiting');
            this.droppedSinceLog = 0;
            for (const resolve of this.idle.splice(0)) resolve();
          }
        });
    }
  }

  private prune(now: number, windowMs: number): void {
    if (this.identical.size + this.similar.size + this.tokens.size < 30_000) return;
    for (const [key, at] of this.identical) if (now - at >= windowMs) this.identical.delete(key);
    for (const [key, group] of this.similar) if (now - group.since >= windowMs) this.similar.delete(key);
    for (const [key, bucket] of this.tokens)
      if (now - bucket.at >= REFILL_MS * (this.options.burst ?? 25)) this.tokens.delete(key);
  }
}
