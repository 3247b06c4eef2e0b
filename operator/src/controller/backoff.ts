/**
 * Exponential backoff with a cap: base · 2^(failures-1), at most max. The same shape as client-go's
 * ItemExponentialFailureRateLimiter (5 ms to 1000 s for controllers), used by the work queue per
 * key and by informers between reconnects.
 */
export interface BackoffOptions {
  /** Delay after the first failure, in milliseconds. */
  readonly baseMs: number;
  /** Longest delay, in milliseconds. */
  readonly maxMs: number;
}

export function backoffDelay(failures: number, { baseMs, maxMs }: BackoffOptions): number {
  if (failures <= 0) return 0;
  // 2^exponent overflows to Infinity long after it passed maxMs; Math.min handles both.
  return Math.min(maxMs, baseMs * 2 ** (failures - 1));
}

/** Promise-based sleep that an AbortSignal ends early (resolves, never rejects). */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}
