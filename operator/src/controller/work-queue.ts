import type { Attributes, Link } from '@opentelemetry/api';
import type { Logger } from '../observability/logger.ts';
import type { OperatorMetrics } from '../observability/metrics.ts';
import { inSpan } from '../observability/tracing.ts';
import { type BackoffOptions, backoffDelay } from './backoff.ts';
import { isTerminal } from './terminal-error.ts';

/**
 * The controller work queue of client-go, which client-node lacks. Keys (namespace/name) are
 * deduplicated: a key added while queued is queued once; a key added while being processed is
 * processed again afterwards, never by two workers at once.
 *
 * Its workers are the one place that decides what a handler's outcome means, as
 * controller-runtime's reconcileHandler does, with one span (its status the outcome), one log
 * line and the reconcile metrics each:
 * - success: the key's failures are forgotten (and it comes back after `requeueAfterMs` if asked);
 * - an error: the key comes back after a per-key exponential backoff (warn);
 * - a TerminalError (terminal-error.ts): retrying cannot help, so the key is not requeued and its
 *   failures are forgotten (error); a new add (a change, a resync) brings it back.
 *
 * Keys have a priority, as in controller-runtime's priority queue: `high` (the default) for new
 * and changed objects, `low` for periodic resyncs and the objects of the first list, so a change
 * made while thousands of unchanged objects are being resynced waits for none of them. Within a
 * priority, first in first out; a key added again with a higher priority moves up.
 */

export type Priority = 'high' | 'low';

export interface WorkQueueOptions {
  /**
   * Label of the queue's metrics (`name`) and of the reconcile metrics (`controller`); in log
   * lines, `controller` and the field holding the key (`website: "ns/a"`).
   */
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
  /**
   * The span each run of the handler is traced in: its name, attributes and links, given the key
   * and its failures so far; a failure (terminal or not) ends it with an error status. The queue
   * adds `<name>.queue_wait_ms`, how long the key waited for a worker.
   * @default no span
   */
  readonly span?: (
    key: string,
    failures: number,
  ) => { readonly name: string; readonly attributes: Attributes; readonly links?: Link[] };
  readonly metrics?: OperatorMetrics;
  readonly logger?: Logger;
}

/** What a handler may ask for after a success: come back later even if nothing changes. */
export interface HandlerResult {
  readonly requeueAfterMs?: number;
}

/** `abort`: the work must stop at once (see run). */
// biome-ignore lint/suspicious/noConfusingVoidType: a handler that asks for nothing returns nothing, as most do.
export type KeyHandler = (key: string, abort: AbortSignal) => Promise<HandlerResult | void>;

export class WorkQueue {
  /** Keys in arrival order per priority; an entry whose key moved up or left is skipped when reached. */
  private readonly queues: Record<Priority, string[]> = { high: [], low: [] };
  private readonly queued = new Map<string, Priority>();
  private readonly processing = new Set<string>();
  /** Added while processing: goes back into the queue when its worker finishes. */
  private readonly dirty = new Map<string, Priority>();
  private readonly delayed = new Map<string, { at: number; timer: NodeJS.Timeout }>();
  private readonly failures = new Map<string, number>();
  /** The message of each key's last TerminalError, until it succeeds: logged at error level once. */
  private readonly terminal = new Map<string, string>();
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
    if (ms <= 0) {
      this.add(key);
      return;
    }
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
   * stay queued; the next leader or process picks them up from the cluster state anyway). `abort`,
   * handed to every handler, is for work that must not finish: the leader's Lease lost.
   */
  async run(
    handler: KeyHandler,
    signal: AbortSignal,
    abort: AbortSignal = new AbortController().signal,
  ): Promise<void> {
    const stop = () => {
      for (const resolve of this.wake.splice(0)) resolve();
    };
    signal.addEventListener('abort', stop, { once: true });
    const workers = Array.from({ length: this.options.concurrency ?? 4 }, () => this.worker(handler, signal, abort));
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

  private async worker(handler: KeyHandler, signal: AbortSignal, abort: AbortSignal): Promise<void> {
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
      const started = performance.now();
      try {
        const span = this.options.span?.(key, this.failuresOf(key));
        const result = await (span
          ? inSpan(
              span.name,
              {
                attributes: { ...span.attributes, [`${this.options.name}.queue_wait_ms`]: Math.round(waited) },
                links: span.links,
              },
              () => handler(key, abort),
            )
          : handler(key, abort));
        this.outcome(key, started, 'success');
        this.forget(key);
        this.terminal.delete(key);
        if (result?.requeueAfterMs !== undefined) this.addAfter(key, result.requeueAfterMs);
      } catch (error) {
        const { logger } = this.options;
        const message = (error as Error).message;
        this.outcome(key, started, 'error');
        if (isTerminal(error)) {
          this.options.metrics?.terminalReconcileErrors.inc({ controller: this.options.name });
          this.forget(key);
          // Once at error level per key and message: the reconcile's own writes (a child it created
          // beside the one it could not) bring the key back once more, as does every resync.
          const repeated = this.terminal.get(key) === message;
          this.terminal.set(key, message);
          logger?.[repeated ? 'debug' : 'error'](
            { controller: this.options.name, [this.options.name]: key, error: message },
            'reconcile failed and retrying cannot help; waiting for a change',
          );
        } else {
          const failures = this.failuresOf(key) + 1;
          const delay = this.addRateLimited(key);
          logger?.warn(
            { controller: this.options.name, [this.options.name]: key, error: message, failures, retryInMs: delay },
            'reconcile failed, retrying with backoff',
          );
        }
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

  /** The reconcile metrics of one outcome (controller-runtime counts a terminal error as an error too). */
  private outcome(key: string, started: number, result: 'success' | 'error'): void {
    const { metrics, name: controller, logger } = this.options;
    const seconds = (performance.now() - started) / 1000;
    metrics?.reconciles.inc({ controller, result });
    if (result === 'error') metrics?.reconcileErrors.inc({ controller });
    metrics?.reconcileTime.observe({ controller }, seconds);
    if (result === 'success') logger?.debug({ controller, [controller]: key, seconds }, 'reconciled');
  }

  private depthChanged(): void {
    this.options.metrics?.queueDepth.set({ name: this.options.name }, this.queued.size);
  }
}
