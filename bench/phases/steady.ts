// Steady state: creates one at a time over the standing population, create → Deployment.
import { eventually } from '../../harness/process/poll.ts';
import { type LatencySummary, latencySummary } from '../report.ts';

/** Creates each of `websites` and waits for its child before the next; create sent → child seen. */
export async function oneAtATime(
  create: (name: string, index: number) => Promise<unknown>,
  childSeenAt: (name: string) => number | undefined,
  websites: readonly string[],
): Promise<LatencySummary> {
  const latencies: number[] = [];
  for (const [i, name] of websites.entries()) {
    const sent = performance.now();
    await create(name, i);
    await eventually(`the child of ${name}`, () => childSeenAt(name) !== undefined, {
      timeoutMs: 120_000,
      intervalMs: 10,
    });
    latencies.push(childSeenAt(name)! - sent);
  }
  return latencySummary(latencies);
}
