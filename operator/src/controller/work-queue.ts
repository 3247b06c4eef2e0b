import type { Logger } from '../observability/logger.ts';
import type { OperatorMetrics } from '../observability/metrics.ts';
import { type BackoffOptions, backoffDelay } from './backoff.ts';

/**
 * The controller work queue of client-go, which client-node lacks. Keys (namespace/name) are
 * deduplicated: a key added while queued is queued once; a key added while being processed is
 * processed again afterwards, never by two workers at once. A failed key comes back after a
 * per-key exponential backoff; a success forgets its failures.
 *
 * Keys have a priority, as in controller-runtime's priority queue: `high` (the default) for new
 * and changed objects, `low` for periodic resyncs and the objects of the first list, so a change
 * made while thousands of unchanged objects are being resynced waits for none of them. Within a
 * priority, first in first out; a key added again with a higher priority moves up.
 */

export type Priority = 'high' | 'low';

export interface WorkQueueOptions {
  /** Label of the queue's metrics. */
  readonly name: string;
  /**
   * Keys processed at once (each key by one worker at a time).
   * @default 4
   */
  readonly concurrency?: number;
  /**
   * Per-key backoff after failures.
   * @default 5 ms doubling up to 300 s (controller-runtime caps at 1000 s; a Website broken by a
   * missing permission should recover within minutes of the fix, not a quarter of an hour)
   */
  readonly backoff?: BackoffOptions;
  readonly metrics?: OperatorMetrics;
  readonly logger?: Logger;
}

/** What a handler may ask for after a success: come back later even if nothing changes. */
export interface HandlerResult {
  readonly requeueAfterMs?: number;
}

export type KeyHandler = (key: string) => Promise<HandlerResult | void>;

export class WorkQueue {
  /** Keys in arrival order per priority; an entry whose key moved up or left is skipped when reached. */
  private readonly queues: Record<Priority, string[]> = { high: [], low: [] };
  private readonly queued = new Map<string, Priority>();
  private readonly processing = new Set<string>();
  /** Added while processing: goes back into the queue when its worker finishes. */
  private readonly dirty = new Map<string, Priority>();
  private readonly delayed = new Map<string, { at: number; timer: NodeJS.Timeout }>();
  private readonly failures = new Map<string, number>();
  private readonly enqueuedAt = new Map<string, number>();
  private wake: Array<() => void> = [];
  private shuttingDown = false;

  private readonly options: WorkQueueOptions;

  constructor(options: WorkQueueOptions) {
    this.options = options;
  }

  get length(): number {
    return this.queued.size;
  }

  /** Keys queued or being processed (not those waiting out a delay). */
  get active(): number {
    return this.queued.size + this.processing.size;
  }

  /** Keys in any state: queued, processing, or waiting out a delay. */
  get pending(): number {
    return new Set([...this.queued.keys(), ...this.processing, ...this.delayed.keys()]).size;
  }

  add(key: string, priority: Priority = 'high'): void {
    if (this.shuttingDown) return;
    if (this.processing.has(key)) {
      if (this.dirty.get(key) !== 'high') this.dirty.set(key, priority);
      return;
    }
    const queuedAs = this.queued.get(key);
    if (queuedAs === 'high' || queuedAs === priority) return;
    this.queued.set(key, priority);
    this.queues[priority].push(key);
    if (queuedAs === undefined) {
      this.enqueuedAt.set(key, performance.now());
      this.options.metrics?.queueAdds.inc({ name: this.options.name });
      this.depthChanged();
      this.wake.shift()?.();
    }
  }

  /** Adds the key after `ms`; an earlier pending delay for the same key wins. */
  addAfter(key: string, ms: number): void {
    if (this.shuttingDown) return;
    if (ms <= 0) return this.add(key);
    const at = Date.now() + ms;
    const existing = this.delayed.get(key);
    if (existing && existing.at <= at) return;
    if (existing) clearTimeout(existing.timer);
    const timer = setTimeout(() => {
      this.delayed.delete(key);
      this.add(key);
    }, ms);
    timer.unref();
    this.delayed.set(key, { at, timer });
  }

  /** Adds the key after its backoff, which doubles with each consecutive failure. */
  addRateLimited(key: string): number {
    const failures = (this.failures.get(key) ?? 0) + 1;
    this.failures.set(key, failures);
    const delay = backoffDelay(failures, this.options.backoff ?? { baseMs: 5, maxMs: 300_000 });
    this.options.metrics?.queueRetries.inc({ name: this.options.name });
    this.addAfter(key, delay);
    return delay;
  }

  /** Clears the key's failure count (after a success). */
  forget(key: string): void {
    this.failures.delete(key);
  }

  failuresOf(key: string): number {
    return this.failures.get(key) ?? 0;
  }

  /**
   * Runs `concurrency` workers until `signal` aborts, then lets keys in flight finish (queued keys
   * stay queued; the next leader or process picks them up from the cluster state anyway).
   */
  async run(handler: KeyHandler, signal: AbortSignal): Promise<void> {
    const stop = () => {
      for (const resolve of this.wake.splice(0)) resolve();
    };
    signal.addEventListener('abort', stop, { once: true });
    const workers = Array.from({ length: this.options.concurrency ?? 4 }, () => this.worker(handler, signal));
    await Promise.all(workers);
    signal.removeEventListener('abort', stop);
  }

  /** No more adds; pending delays are cancelled. */
  shutDown(): void {
    this.shuttingDown = true;
    for (const { timer } of this.delayed.values()) clearTimeout(timer);
    this.delayed.clear();
    for (const resolve of this.wake.splice(0)) resolve();
  }

  /** The next key: high before low, oldest first; skips entries left behind by a move up. */
  private next(): string | undefined {
    for (const priority of ['high', 'low'] as const) {
      const queue = this.queues[priority];
      while (queue.length > 0) {
        const key = queue.shift()!;
        if (this.queued.get(key) === priority) return key;
      }
    }
    return undefined;
  }

  private async worker(handler: KeyHandler, signal: AbortSignal): Promise<void> {
    while (!signal.aborted && !this.shuttingDown) {
      const key = this.next();
      if (key === undefined) {
        await new Promise<void>((resolve) => this.wake.push(resolve));
        continue;
      }
      this.queued.delete(key);
      this.processing.add(key);
      const waited = performance.now() - (this.enqueuedAt.get(key) ?? performance.now());
      this.enqueuedAt.delete(key);
      this.options.metrics?.queueWait.observe({ name: this.options.name }, waited / 1000);
      this.depthChanged();
      try {
        const result = await handler(key);
        this.forget(key);
        if (result?.requeueAfterMs !== undefined) this.addAfter(key, result.requeueAfterMs);
      } catch (error) {
        const delay = this.addRateLimited(key);
        this.options.logger?.debug({ key, error: (error as Error).message, retryInMs: delay }, 'requeued with backoff');
      } finally {
        this.processing.delete(key);
        const again = this.dirty.get(key);
        if (again) {
          this.dirty.delete(key);
          this.add(key, again);
        }
      }
    }
  }

  private depthChanged(): void {
    this.options.metrics?.queueDepth.set({ name: this.options.name }, this.queued.size);
  }
}
