/** What eventually() throws when the time is up (not a probe's own error). */
export class TimedOut extends Error {}

export interface PollOptions {
  /** @default 60_000 */
  readonly timeoutMs?: number;
  /** @default 250 */
  readonly intervalMs?: number;
  /** What the failure message adds about how far it got, e.g. "3 of 10 ready". */
  readonly progress?: () => string;
  /**
   * A probe that throws ends the wait with its error (say, the process waited on has exited)
   * instead of counting as not yet.
   * @default false
   */
  readonly stopOnError?: boolean;
}

/**
 * Polls `probe` until it returns a value other than undefined or false, and returns that value.
 * A probe that throws counts as not yet (unless `stopOnError`); after `timeoutMs` it fails with
 * `what`, the progress and the probe's last error.
 */
export async function eventually<T>(
  what: string,
  probe: () => T | undefined | false | Promise<T | undefined | false>,
  options: PollOptions | number = {},
): Promise<T> {
  const {
    timeoutMs = 60_000,
    intervalMs = 250,
    progress,
    stopOnError = false,
  } = typeof options === 'number' ? { timeoutMs: options } : options;
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined && value !== false) return value;
    } catch (error) {
      if (stopOnError) throw error;
      last = error;
    }
    if (Date.now() > deadline) {
      const detail = [progress?.(), last && `last error: ${last instanceof Error ? last.message : String(last)}`]
        .filter(Boolean)
        .join('; ');
      throw new TimedOut(
        `timed out after ${Math.round(timeoutMs / 1000)} s waiting for ${what}${detail ? ` (${detail})` : ''}`,
      );
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
