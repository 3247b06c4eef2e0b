// The phases every controller under test goes through, whatever it is (bench/peer.ts): idle, burst
// creates at each N, steady state, sustained churn and memory, one file each beside this one.
// Everything is observed from outside the controller: latencies by watches in this process, API
// requests from the API server's audit log, RSS and CPU time from /proc, queue wait from the
// controller's own Prometheus histogram.
import { parseHistogram } from '../../harness/process/metrics.ts';
import { eventually } from '../../harness/process/poll.ts';
import { steadyRss } from '../../harness/process/proc.ts';
import { emptyNamespace } from '../cluster.ts';
import type { Peer } from '../peer.ts';
import { burstRecords, createAll } from './burst.ts';
import { churn, churnRecords, peerChurnTarget } from './churn.ts';
import { idleRecords } from './idle.ts';
import { heapRecords, memoryRecord } from './memory.ts';
import { metricsText, startPeer, watchWebsites } from './peer-process.ts';
import { names, type PeerRunOptions, type SubjectOutput, specFor } from './plan.ts';
import { oneAtATime } from './steady.ts';

/**
 * Every phase for one peer, each figure with its baseline:
 * - idle: RSS at 0 Websites, caches synced (vs an idle Node process);
 * - burst, at each N: create → Deployment p50/p99/max and all Deployments (vs the echo
 *   controller), all Ready (vs the same Deployments created directly), CPU per Website (vs
 *   renderWorkload), API requests per Website until Ready split into writes, GETs answering 404
 *   and Events (vs the echo controller's requests per source), RSS holding N (vs idle);
 * - steady (over the largest N): creates one at a time, create → Deployment p99 (vs echo);
 * - churn (over the largest N): the sustained change rate (vs echo);
 * - memory: RSS holding `plan.memoryN` Websites and their children (vs idle).
 * Records go to `output` as each is measured.
 */
export async function runPeer(
  peer: Peer,
  { plan, baselines, context }: PeerRunOptions,
  { records, diagnostics }: SubjectOutput,
): Promise<void> {
  const { cluster, log } = context;
  const subject = peer.title;
  const say = (message: string) => log(`${subject}: ${message}`);
  let idleRss = Number.NaN;
  let idleHeap = Number.NaN;

  for (const [index, n] of plan.ns.entries()) {
    const last = index === plan.ns.length - 1;
    await emptyNamespace(cluster, peer.namespace, peer.websites, { everything: true });
    const process = await startPeer(peer, context);
    const watchers = watchWebsites(cluster, peer);
    try {
      await watchers.synced();
      if (index === 0) {
        const idle = await idleRecords(subject, process, baselines);
        ({ idleRss, idleHeap } = idle);
        records.push(...idle.records);
      }
      say(`N=${n}: creating ${n} Websites`);
      const burst = await createAll(peer, cluster, watchers, process, names('w', n), plan.replicas, say);
      const { records: burstFigures, diagnostic } = burstRecords(subject, n, burst, baselines, idleRss);
      records.push(...burstFigures);
      diagnostics.push(diagnostic);
      records.push(...(await heapRecords(subject, n, process, idleHeap)));
      if (last && plan.memoryN === undefined) {
        records.push(memoryRecord(subject, n, burst.rss, idleRss));
      }
      if (!last) continue;

      say(`steady state: ${plan.steadyCreates} creates one at a time over ${n}`);
      const steady = await oneAtATime(
        (name, i) => cluster.admin.create(peer.websites, peer.website(name, specFor(n + i, plan.replicas))),
        (name) => watchers.deployments.firstSeen.get(peer.deploymentName(name)),
        names('s', plan.steadyCreates),
      );
      records.push({
        subject,
        phase: 'steady',
        n,
        figure: 'createToDeploymentP99',
        label: `create → Deployment seen, p99 of ${plan.steadyCreates} one at a time`,
        unit: 'ms',
        value: steady.p99,
        baseline: baselines.steady.p99,
        baselineLabel: `echo controller over ${n} sources`,
        detail: `p50 ${steady.p50.toFixed(0)} ms`,
      });

      say(`churn over ${n}: ${plan.churnRates.join(', ')} changes/s, ${plan.stepSeconds} s each`);
      const steps = await churn(
        peerChurnTarget(peer, cluster, process),
        [...names('w', n), ...names('s', plan.steadyCreates)],
        plan.churnRates,
        plan.stepSeconds,
        plan.replicas,
        say,
      );
      records.push(...churnRecords(subject, n, steps, baselines.churn, plan.churnRates));
    } finally {
      await process.stop();
      await watchers.stop();
    }
  }

  if (plan.memoryN !== undefined) {
    const n = plan.memoryN;
    await emptyNamespace(cluster, peer.namespace, peer.websites, { everything: true });
    const process = await startPeer(peer, context);
    const watchers = watchWebsites(cluster, peer);
    try {
      await watchers.synced();
      say(`memory: creating ${n} Websites`);
      const burst = await createAll(peer, cluster, watchers, process, names('m', n), plan.replicas, say);
      records.push(
        memoryRecord(subject, n, burst.rss, idleRss, `all Ready after ${(burst.allReadyMs / 1000).toFixed(0)} s`),
        ...(await heapRecords(subject, n, process, idleHeap)),
      );
    } finally {
      await process.stop();
      await watchers.stop();
    }
    // What holding them costs without the burst's garbage: a fresh process once its first pass
    // over the N Websites (each one through its queue) is done, as after a restart or an upgrade.
    say(`memory: a fresh process over the ${n} Websites`);
    const restarted = await startPeer(peer, context);
    try {
      await eventually(
        `${n} Websites through the fresh process's queue`,
        async () =>
          parseHistogram(await metricsText(restarted), peer.queueWait.metric, peer.queueWait.labels).count >= n,
        { timeoutMs: 600_000, intervalMs: 1000 },
      );
      records.push(
        {
          ...memoryRecord(subject, n, await steadyRss(restarted.pid), idleRss),
          figure: 'rssHoldingNRestarted',
          label: 'RSS holding N Websites, a fresh process after its first pass over them',
        },
        ...(await heapRecords(subject, n, restarted, idleHeap)).map((r) => ({
          ...r,
          figure: `${r.figure}Restarted`,
          label: `${r.label}, a fresh process`,
        })),
      );
    } finally {
      await restarted.stop();
    }
  }
  await emptyNamespace(cluster, peer.namespace, peer.websites, { everything: true });
}
