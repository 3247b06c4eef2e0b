// Burst: N Websites created at once; how soon each gets its Deployment, how soon all are Ready,
// what CPU and API requests that cost, and the RSS holding them.
import { auditEvents, auditLogSize } from '../../harness/cluster/audit.ts';
import { eventually } from '../../harness/process/poll.ts';
import { inPool } from '../../harness/process/pool.ts';
import { steadyRss } from '../../harness/process/proc.ts';
import { sleep } from '../../operator/src/controller/backoff.ts';
import { AUDIT_LOG, type BenchCluster, CREATE_CONCURRENCY } from '../cluster.ts';
import type { Peer, PeerProcess } from '../peer.ts';
import {
  countRequests,
  type FigureRecord,
  type LatencySummary,
  latencySummary,
  requestsPerWebsite,
} from '../report.ts';
import { cpuMs, type Watchers } from './peer-process.ts';
import { type RunBaselines, specFor } from './plan.ts';

/** A builder of `subject`'s burst figures at N = `n`. */
export function burstFigure(subject: string, n: number) {
  return (
    figure: string,
    label: string,
    unit: FigureRecord['unit'],
    value: number,
    baseline?: number,
    baselineLabel?: string,
    detail?: string,
  ): FigureRecord => ({ subject, phase: 'burst', n, figure, label, unit, value, baseline, baselineLabel, detail });
}

export interface Burst {
  readonly latencyMs: LatencySummary;
  readonly allDeploymentsMs: number;
  readonly allReadyMs: number;
  readonly cpuMs: number;
  readonly requests: ReturnType<typeof countRequests>;
  readonly rss: number;
  readonly failures: string;
}

/** Creates `websites` at CREATE_CONCURRENCY and waits until every one has its Deployment and is Ready. */
export async function createAll(
  peer: Peer,
  cluster: BenchCluster,
  watchers: Watchers,
  process: PeerProcess,
  websites: readonly string[],
  replicas: number,
  say: (message: string) => void,
): Promise<Burst> {
  const n = websites.length;
  const sentAt = new Map<string, number>();
  const auditFrom = await auditLogSize(AUDIT_LOG);
  const cpuBefore = await cpuMs(process.pid);
  const start = performance.now();
  await inPool(websites, CREATE_CONCURRENCY, async (name, i) => {
    sentAt.set(name, performance.now());
    await cluster.admin.create(peer.websites, peer.website(name, specFor(i, replicas)));
  });
  const deployed = () => websites.filter((w) => watchers.deployments.firstSeen.has(peer.deploymentName(w))).length;
  const ready = () => websites.filter((w) => watchers.websites.reachedAt.has(w)).length;
  const progress = () => `${deployed()} Deployments, ${ready()} Ready of ${n}`;
  // Generous: a slow controller is a figure, not a failure, unless it is very slow.
  const budgetMs = 600_000 + n * 1000;
  const ticker = setInterval(() => say(progress()), 30_000);
  let allDeploymentsAt = 0;
  try {
    await eventually('every Deployment', () => deployed() === n, { timeoutMs: budgetMs, intervalMs: 100, progress });
    allDeploymentsAt = performance.now();
    await eventually('every Website to be Ready', () => ready() === n, {
      timeoutMs: budgetMs,
      intervalMs: 100,
      progress,
    });
  } finally {
    clearInterval(ticker);
  }
  const cpu = (await cpuMs(process.pid)) - cpuBefore;
  // The API server logs a request once it has answered it: let the last ones land.
  await sleep(1000);
  // Completed requests of the controller's user (harness/cluster/audit-policy.yaml logs every ServiceAccount's).
  const events = (await auditEvents(AUDIT_LOG, JSON.stringify(peer.user), auditFrom)).filter(
    (event) => event.user?.username === peer.user && event.stage === 'ResponseComplete',
  );
  const requests = countRequests(events);
  const codes = new Map<string, number>();
  for (const event of events) {
    const code = event.responseStatus?.code ?? 0;
    if (code >= 400)
      codes.set(
        `${event.verb} ${event.objectRef?.resource ?? ''} → ${code}`,
        (codes.get(`${event.verb} ${event.objectRef?.resource ?? ''} → ${code}`) ?? 0) + 1,
      );
  }
  say(`all Ready after ${((performance.now() - start) / 1000).toFixed(1)} s`);
  await sleep(2000);
  return {
    latencyMs: latencySummary(
      websites.map((w) => watchers.deployments.firstSeen.get(peer.deploymentName(w))! - sentAt.get(w)!),
    ),
    allDeploymentsMs: allDeploymentsAt - start,
    allReadyMs: Math.max(...websites.map((w) => watchers.websites.reachedAt.get(w)!)) - start,
    cpuMs: cpu,
    requests,
    rss: await steadyRss(process.pid),
    failures: codes.size
      ? `responses ≥ 400: ${[...codes].map(([k, v]) => `${k} ×${v}`).join(', ')}`
      : 'no response ≥ 400',
  };
}

/**
 * `subject`'s burst figures at N = `n`, each with its baseline, and the note of what else it sent
 * (leases, lists, watches) and which requests failed.
 */
export function burstRecords(
  subject: string,
  n: number,
  burst: Burst,
  baselines: RunBaselines,
  idleRss: number,
): { records: FigureRecord[]; diagnostic: string } {
  const records: FigureRecord[] = [];
  const base = baselines.burst.get(n)!;
  const echo = base.echo;
  const counts = burst.requests;
  const b = burstFigure(subject, n);
  records.push(
    b(
      'createToDeploymentP50',
      'create → Deployment seen, p50',
      'ms',
      burst.latencyMs.p50,
      echo.latencyMs.p50,
      'echo controller, p50',
    ),
    b(
      'createToDeploymentP99',
      'create → Deployment seen, p99',
      'ms',
      burst.latencyMs.p99,
      echo.latencyMs.p99,
      'echo controller, p99',
    ),
    b(
      'createToDeploymentMax',
      'create → Deployment seen, max',
      'ms',
      burst.latencyMs.max,
      echo.latencyMs.max,
      'echo controller, max',
    ),
    b(
      'allDeployments',
      'all N Deployments seen',
      'ms',
      burst.allDeploymentsMs,
      echo.allChildrenMs,
      'echo controller, all N children',
    ),
    b(
      'allReady',
      'all N Websites Ready',
      'ms',
      burst.allReadyMs,
      base.directAllAvailableMs,
      'N rendered Deployments created directly, all available',
    ),
    b(
      'cpuPerWebsite',
      'CPU per new Website',
      'ms',
      burst.cpuMs / n,
      baselines.renderUs / 1000,
      'renderWorkload per Website',
    ),
    b(
      'requestsPerWebsite',
      'API requests per new Website until Ready',
      'count',
      requestsPerWebsite(counts) / n,
      echo.requestsPerSource,
      'echo controller, per source',
      `writes ${(counts.writes / n).toFixed(2)}, GETs answering 404 ${(counts.notFoundGets / n).toFixed(2)}, other GETs ${(counts.gets / n).toFixed(2)}, Events ${(counts.events / n).toFixed(2)}`,
    ),
    b(
      'writesPerWebsite',
      '… of which writes',
      'count',
      counts.writes / n,
      echo.requestsPerSource,
      'echo controller, per source',
    ),
    b('notFoundGetsPerWebsite', '… of which GETs answering 404 (goal 0)', 'count', counts.notFoundGets / n),
    b('eventsPerWebsite', '… of which Events', 'count', counts.events / n),
    b('rssHoldingN', 'RSS holding N Websites', 'bytes', burst.rss, idleRss, 'same process, idle'),
  );
  const diagnostic = `N=${n}: ${(counts.background / n).toFixed(2)} background requests per Website (leases, lists, watches) until Ready; ${burst.failures}`;
  return { records, diagnostic };
}
