import { sleep } from './backoff.ts';

/**
 * Client-side rate limit of API requests: a token bucket refilled at `qps` tokens per second,
 * holding at most `burst`. client-node has none; client-go's default for controllers is the same
 * shape (controller-runtime: 20 QPS, burst 30). Waiters are served in arrival order.
 */
export class TokenBucket {
  private tokens: number;
  private last = performance.now();
  private tail: Promise<void> = Promise.resolve();
  private readonly qps: number;
  private readonly burst: number;

  constructor(qps: number, burst: number) {
    this.qps = qps;
    this.burst = burst;
    if (!(qps > 0) || !(burst >= 1))
      throw new Error(`rate limit needs qps > 0 and burst >= 1 (got qps ${qps}, burst ${burst})`);
    this.tokens = burst;
  }

  /** Resolves when a request may go out. */
  take(): Promise<void> {
    // Chain waiters so each one sees the bucket after the previous one took its token.
    const turn = this.tail.then(() => this.waitForToken());
    this.tail = turn;
    return turn;
  }

  private async waitForToken(): Promise<void> {
    for (;;) {
      const now = performance.now();
      this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) / 1000) * this.qps);
      this.last = now;
      if (this.tokens >= 1) {
        this.tokens -= 1;
        return;
      }
      await sleep(((1 - this.tokens) / this.qps) * 1000);
    }
  }
}
