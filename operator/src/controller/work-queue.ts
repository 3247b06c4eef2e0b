import type { Logger } from '../observability/logger.ts';
import type { OperatorMetrics } from '../observability/metrics.ts';
import { type BackoffOptions, backoffDelay } from './backoff.ts';

/**
 * The controller work queue of client-go, which client-node lacks. Keys (namespace/name) are
 * deduplicated: a key added while queued is queued once; a key added while being processed is
 * processed again afterwards, never by two workers at once. A failed key comes back after a
 * per-key exponential backoff; a success forgets its failures.
 */

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
  private readonly queue: string[] = [];
  private readonly queued = new Set<string>();
  private readonly processing = new Set<string>();
  /** Added while processing: goes back into the queue when its worker finishes. */
  private readonly dirty = new Set<string>();
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
    return this.queue.length;
  }

  /** Keys in any state: queued, processing, or waiting out a delay. */
  get pending(): number {
    return new Set([...this.queued, ...this.processing, ...this.delayed.keys()]).size;
  }

  add(key: string): void {
    if (this.shuttingDown) return;
    if (this.processing.has(key)) {
      this.dirty.add(key);
      return;
    }
    if (this.queued.has(key)) return;
    this.queued.add(key);
    this.queue.push(key);
    this.enqueuedAt.set(key, performance.now());
    this.options.metrics?.queueAdds.inc({ name: this.options.name });
    this.depthChanged();
    this.wake.shift()?.();
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

  private async worker(handler: KeyHandler, signal: AbortSignal): Promise<void> {
    while (!signal.aborted && !this.shuttingDown) {
      const key = this.queue.shift();
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
        if (this.dirty.delete(key)) this.add(key);
      }
    }
  }

  private depthChanged(): void {
    this.options.metrics?.queueDepth.set({ name: this.options.name }, this.queue.length);
  }
}
