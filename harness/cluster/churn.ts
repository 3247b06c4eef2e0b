import { sleep } from '../../operator/src/controller/backoff.ts';

/** What a paced run of changes sent: accepted, refused, and how long sending took. */
export interface PacedResult {
  readonly sent: number;
  readonly refused: number;
  readonly seconds: number;
}

/**
 * Calls `change(i)` for i = 0, 1, … at `rate` per second for `seconds`, at most 64 in flight (a
 * controller or API server that cannot keep up does not pile up requests here), and counts the
 * changes the API server accepted and refused. The churn of `npm run bench` and `npm run chaos`.
 */
export async function pacedChanges(
  rate: number,
  seconds: number,
  change: (i: number) => Promise<unknown>,
): Promise<PacedResult> {
  const inFlight = new Set<Promise<unknown>>();
  let sent = 0;
  let refused = 0;
  const start = performance.now();
  for (let i = 0; ; i++) {
    const due = start + (i * 1000) / rate;
    if (due - start >= seconds * 1000) break;
    await sleep(Math.max(0, due - performance.now()));
    while (inFlight.size >= 64) await Promise.race(inFlight);
    const tracked: Promise<unknown> = change(i).then(
      () => (sent += 1),
      () => (refused += 1),
    );
    inFlight.add(tracked);
    void tracked.finally(() => inFlight.delete(tracked));
  }
  await Promise.all(inFlight);
  return { sent, refused, seconds: (performance.now() - start) / 1000 };
}
