/**
 * An error that retrying cannot fix: controller-runtime's `reconcile.TerminalError`, kopf's
 * `PermanentError`. The work queue records it once and does not requeue the key with backoff; the
 * next change to the object (or to what the reconciler watches), or the periodic resync, brings the
 * key back. A reconciler throws it for what only a person can fix, such as a child name taken by an
 * object it does not own.
 */
export class TerminalError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'TerminalError';
  }
}

/** True when `error` is a TerminalError or wraps one (its `cause` chain), as Go's errors.Is unwraps. */
export function isTerminal(error: unknown): boolean {
  for (let current = error; current instanceof Error; current = current.cause) {
    if (current instanceof TerminalError) return true;
  }
  return false;
}
