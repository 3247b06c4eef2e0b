// Churn: a stepped rate of edits, creates and deletes over the standing population, until the
// subject's queue wait p99 reaches 1 s.
import { pacedChanges } from '../../harness/cluster/churn.ts';
import { type WebsiteSpec, websiteColor } from '../../harness/cluster/website.ts';
import { type Histogram, parseHistogram } from '../../harness/process/metrics.ts';
import { sleep } from '../../operator/src/controller/backoff.ts';
import type { BenchCluster } from '../cluster.ts';
import type { Peer, PeerProcess } from '../peer.ts';
import {
  type ChurnStep,
  type FigureRecord,
  formatValue,
  fractionWithin,
  histogramDelta,
  histogramQuantile,
  stepHeld,
  sustainedRate,
} from '../report.ts';
import { metricsText } from './peer-process.ts';
import { specFor } from './plan.ts';

/** The operations a churn sends, and where the subject's queue wait is read. */
export interface ChurnTarget {
  create(name: string, spec: WebsiteSpec): Promise<unknown>;
  edit(name: string, spec: WebsiteSpec): Promise<unknown>;
  remove(name: string): Promise<unknown>;
  queueWait(): Promise<Histogram>;
}

/**
 * A stepped churn over `population` (names that exist): at each rate, for `stepSeconds`, one
 * change every 1/rate s, in the repeating mix edit, create, edit, delete (half edits of title,
 * replicas or colour; creates and deletes balance, so the population stays the same size); then
 * until the queue has drained (no new queue wait for 2 s, at most 30 s). Stops after the first
 * step whose queue wait p99 is 1 s or more.
 */
export async function churn(
  target: ChurnTarget,
  population: readonly string[],
  rates: readonly number[],
  stepSeconds: number,
  replicas: number,
  log: (message: string) => void,
): Promise<ChurnStep[]> {
  const live = [...population];
  const steps: ChurnStep[] = [];
  let created = 0;
  for (const rate of rates) {
    const before = await target.queueWait();
    const {
      sent,
      refused: failed,
      seconds,
    } = await pacedChanges(rate, stepSeconds, (i) => {
      const kind = i % 4;
      if (kind === 1) {
        const name = `churn-${String(created++).padStart(5, '0')}`;
        live.push(name);
        return target.create(name, specFor(created, replicas));
      }
      if (kind === 3) return target.remove(live.shift()!);
      const name = live[(i * 7919) % live.length];
      return target.edit(name, {
        title: `Edited ${i}`,
        replicas: Math.min(5, replicas + ((i >> 1) % 2)),
        color: websiteColor(i >> 1),
      });
    });
    const sentRate = sent / seconds;
    let after = await target.queueWait();
    const drainDeadline = performance.now() + 30_000;
    for (
      let quietSince = performance.now();
      performance.now() - quietSince < 2000 && performance.now() < drainDeadline;
    ) {
      await sleep(500);
      const next = await target.queueWait();
      if (next.count !== after.count) quietSince = performance.now();
      after = next;
    }
    const waits = histogramDelta(before, after);
    // A histogram without a 1 s bucket: the interpolated p99 decides (see stepHeld).
    const within1s = waits.buckets.some(([le]) => Math.abs(le - 1) <= 1e-9) ? fractionWithin(waits, 1) : Number.NaN;
    const step: ChurnStep = { rate, sentRate, failed, waitP99Seconds: histogramQuantile(waits, 0.99), within1s };
    steps.push(step);
    log(
      `churn ${rate}/s: sent ${sentRate.toFixed(1)}/s (${failed} failed), ${waits.count} queue waits, p99 ${step.waitP99Seconds.toFixed(3)} s, ${(step.within1s * 100).toFixed(1)} % within 1 s`,
    );
    if (!stepHeld(step)) break;
  }
  return steps;
}

/** The records of a churn against the echo controller's. */
export function churnRecords(
  subject: string,
  n: number,
  steps: readonly ChurnStep[],
  echo: readonly ChurnStep[],
  rates: readonly number[],
): FigureRecord[] {
  // Held at every rate tried: the true figure is higher, and the table says so.
  const ceiling = (s: readonly ChurnStep[]) =>
    s.length === rates.length && s.every(stepHeld) ? ', held at every rate tried (a lower bound)' : '';
  const shown = (s: readonly ChurnStep[]) =>
    s
      .map(
        (step) =>
          `${step.rate}/s: p99 ${formatValue(step.waitP99Seconds * 1000, 'ms')}${step.failed ? ` (${step.failed} changes refused)` : ''}`,
      )
      .join(', ') + ceiling(s);
  return [
    {
      subject,
      phase: 'churn',
      n,
      figure: 'sustainedChangesPerSecond',
      label: 'changes/s sustained with queue wait p99 < 1 s',
      unit: 'per_s',
      value: sustainedRate(steps),
      baseline: sustainedRate(echo),
      baselineLabel: `echo controller, same churn${ceiling(echo)}`,
      detail: shown(steps),
    },
  ];
}

export function peerChurnTarget(peer: Peer, cluster: BenchCluster, process: PeerProcess): ChurnTarget {
  const { admin } = cluster;
  const ref = (name: string) => ({ namespace: peer.namespace, name });
  return {
    create: (name, spec) => admin.create(peer.websites, peer.website(name, spec)),
    edit: (name, spec) => admin.patch(peer.websites, ref(name), 'merge', peer.edit(spec)),
    remove: (name) => admin.delete(peer.websites, ref(name)),
    queueWait: async () => parseHistogram(await metricsText(process), peer.queueWait.metric, peer.queueWait.labels),
  };
}
