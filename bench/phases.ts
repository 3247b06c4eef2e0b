// The phases every controller under test goes through, whatever it is (bench/peer.ts): idle, burst
// creates at each N, steady state, sustained churn and memory. Everything is observed from outside
// the controller: latencies by watches in this process, API requests from the API server's audit
// log, RSS and CPU time from /proc, queue wait from the controller's own Prometheus histogram.
import { execFileSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { auditEvents, auditLogSize } from '../harness/cluster/audit.ts';
import { pacedChanges } from '../harness/cluster/churn.ts';
import { type WebsiteSpec, websiteColor } from '../harness/cluster/website.ts';
import { type Histogram, parseHistogram } from '../harness/process/metrics.ts';
import { eventually } from '../harness/process/poll.ts';
import { inPool } from '../harness/process/pool.ts';
import { steadyRss } from '../harness/process/proc.ts';
import { sleep } from '../operator/src/controller/backoff.ts';
import { DEPLOYMENTS, type KubeObject } from '../operator/src/controller/kube-api.ts';
import { AUDIT_LOG, type BenchCluster, CREATE_CONCURRENCY, emptyNamespace, Watcher } from './cluster.ts';
import type { Peer, PeerContext, PeerProcess } from './peer.ts';
import {
  type ChurnStep,
  countRequests,
  type FigureRecord,
  formatValue,
  fractionWithin,
  histogramDelta,
  histogramQuantile,
  type LatencySummary,
  latencySummary,
  requestsPerWebsite,
  stepHeld,
  sustainedRate,
} from './report.ts';

/** The sizes of one run (bench/run.ts picks them; --quick makes them smaller). */
export interface Plan {
  /** Burst sizes, ascending; the largest is also the standing population of steady state and churn. */
  readonly ns: readonly number[];
  /** Creates, one at a time, over the standing population. */
  readonly steadyCreates: number;
  /** Churn rates tried in rising order (changes per second), each for `stepSeconds`. */
  readonly churnRates: readonly number[];
  readonly stepSeconds: number;
  /** Websites held for the memory figure; without it, the largest burst's N. */
  readonly memoryN?: number;
  readonly replicas: number;
}

/** The baselines measured once per run, shared by every subject. */
export interface RunBaselines {
  /** By N: the echo controller's burst, and N rendered Deployments created directly. */
  readonly burst: ReadonlyMap<number, { readonly echo: EchoBurst; readonly directAllAvailableMs: number }>;
  /** The echo controller over the standing population. */
  readonly steady: LatencySummary;
  readonly churn: readonly ChurnStep[];
  /** An idle Node process (`setInterval`), bytes. */
  readonly idleNodeRss: number;
  /** renderWorkload per Website, µs. */
  readonly renderUs: number;
}

export interface EchoBurst {
  readonly latencyMs: LatencySummary;
  readonly allChildrenMs: number;
  /** API requests the echo controller made per source. */
  readonly requestsPerSource: number;
}

/** The operations a churn sends, and where the subject's queue wait is read. */
export interface ChurnTarget {
  create(name: string, spec: WebsiteSpec): Promise<unknown>;
  edit(name: string, spec: WebsiteSpec): Promise<unknown>;
  remove(name: string): Promise<unknown>;
  queueWait(): Promise<Histogram>;
}

/** The spec of the i-th Website of a run: title, replicas and colour all vary. */
export function specFor(i: number, replicas: number): WebsiteSpec {
  return { title: `Website ${i}`, replicas, color: websiteColor(i) };
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

/** The RSS of a process holding `n` Websites, against the same process idle. */
function memoryRecord(subject: string, n: number, rss: number, idleRss: number, detail?: string): FigureRecord {
  return {
    subject,
    phase: 'memory',
    n,
    figure: 'rssHoldingN',
    label: 'RSS holding N Websites and their children',
    unit: 'bytes',
    value: rss,
    baseline: idleRss,
    baselineLabel: 'same process, idle',
    detail,
  };
}

/**
 * A Node peer's V8 heap after a full GC holding `n` Websites, against the same process idle, and
 * per Website: what the caches and queues hold, without the garbage a burst leaves behind.
 */
async function heapRecords(
  subject: string,
  n: number,
  process: PeerProcess,
  idleHeap: number,
): Promise<FigureRecord[]> {
  if (!process.heapAfterGc) return [];
  const heap = await process.heapAfterGc();
  const record = (figure: string, label: string, value: number, baseline?: number): FigureRecord => ({
    subject,
    phase: 'memory',
    n,
    figure,
    label,
    unit: 'bytes',
    value,
    baseline,
    baselineLabel: baseline === undefined ? undefined : 'same process, idle',
  });
  return [
    record('heapAfterGcHoldingN', 'V8 heap after a full GC, holding N Websites', heap, idleHeap),
    record('heapAfterGcPerWebsite', 'V8 heap after a full GC, per Website held (above idle)', (heap - idleHeap) / n),
  ];
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

/** CPU time (user + system) of a process so far, in ms, from /proc/<pid>/stat. */
export async function cpuMs(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  // The command name (field 2) may hold spaces: count fields after its closing parenthesis.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
}

const CLOCK_TICKS = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;

async function metricsText(process: PeerProcess): Promise<string> {
  const response = await fetch(process.metricsUrl);
  if (!response.ok) throw new Error(`GET ${process.metricsUrl}: ${response.status}`);
  return response.text();
}

/** A peer process with the benchmark's bookkeeping: stopped once, however the run ends. */
const running = new Set<PeerProcess>();

/** Stops every peer process still running (the benchmark was interrupted). */
export async function stopPeers(): Promise<void> {
  await Promise.all([...running].map((p) => p.stop().catch(() => undefined)));
}

async function startPeer(peer: Peer, context: PeerContext): Promise<PeerProcess> {
  const process = await peer.start(context);
  running.add(process);
  // Named one by one: an adapter's process may be a class instance, whose getters a spread drops.
  return {
    pid: process.pid,
    metricsUrl: process.metricsUrl,
    heapAfterGc: process.heapAfterGc?.bind(process),
    stop: async () => {
      running.delete(process);
      await process.stop();
    },
  };
}

/**
 * Where a subject puts its figures and notes as it goes: what it measured before a failure is
 * still reported.
 */
export interface SubjectOutput {
  readonly records: FigureRecord[];
  readonly diagnostics: string[];
}

export interface PeerRunOptions {
  readonly plan: Plan;
  readonly baselines: RunBaselines;
  readonly context: PeerContext;
}

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
        // Idle: the first reading after start includes start-up garbage; give V8 or Go a moment.
        await sleep(5000);
        idleRss = await steadyRss(process.pid);
        if (process.heapAfterGc) {
          idleHeap = await process.heapAfterGc();
          records.push({
            subject,
            phase: 'idle',
            n: 0,
            figure: 'heapAfterGcIdle',
            label: 'V8 heap after a full GC, idle',
            unit: 'bytes',
            value: idleHeap,
          });
        }
        records.push({
          subject,
          phase: 'idle',
          n: 0,
          figure: 'rssIdle',
          label: 'RSS, idle (no Website)',
          unit: 'bytes',
          value: idleRss,
          baseline: baselines.idleNodeRss,
          baselineLabel: 'an idle Node process',
        });
      }
      say(`N=${n}: creating ${n} Websites`);
      const burst = await createAll(peer, cluster, watchers, process, names('w', n), plan.replicas, say);
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
      diagnostics.push(
        `N=${n}: ${(counts.background / n).toFixed(2)} background requests per Website (leases, lists, watches) until Ready; ${burst.failures}`,
      );
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

function names(prefix: string, n: number): string[] {
  return Array.from({ length: n }, (_, i) => `${prefix}-${String(i).padStart(5, '0')}`);
}

interface Watchers {
  readonly deployments: Watcher;
  readonly websites: Watcher;
  synced(): Promise<void>;
  stop(): Promise<void>;
}

function watchWebsites(cluster: BenchCluster, peer: Peer): Watchers {
  const deployments = new Watcher(cluster.admin, DEPLOYMENTS, peer.namespace);
  const websites = new Watcher<KubeObject>(cluster.admin, peer.websites, peer.namespace, {
    reached: (w) => peer.ready(w),
  });
  return {
    deployments,
    websites,
    synced: async () => {
      await Promise.all([deployments.synced(), websites.synced()]);
    },
    stop: async () => {
      await Promise.all([deployments.stop(), websites.stop()]);
    },
  };
}

interface Burst {
  readonly latencyMs: LatencySummary;
  readonly allDeploymentsMs: number;
  readonly allReadyMs: number;
  readonly cpuMs: number;
  readonly requests: ReturnType<typeof countRequests>;
  readonly rss: number;
  readonly failures: string;
}

/** Creates `websites` at CREATE_CONCURRENCY and waits until every one has its Deployment and is Ready. */
async function createAll(
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

function peerChurnTarget(peer: Peer, cluster: BenchCluster, process: PeerProcess): ChurnTarget {
  const { admin } = cluster;
  const ref = (name: string) => ({ namespace: peer.namespace, name });
  return {
    create: (name, spec) => admin.create(peer.websites, peer.website(name, spec)),
    edit: (name, spec) => admin.patch(peer.websites, ref(name), 'merge', peer.edit(spec)),
    remove: (name) => admin.delete(peer.websites, ref(name)),
    queueWait: async () => parseHistogram(await metricsText(process), peer.queueWait.metric, peer.queueWait.labels),
  };
}
