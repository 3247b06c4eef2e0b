// The website operator under load: the real process (the bundle the image runs, operator/build/operator.mjs) as its ServiceAccount on
// the benchmark's cluster, N Websites created at once, then an idle resync; and the cost of
// rendering one Website through the construct.
import { App, Chart } from 'cdk8s';
import { DEPLOYMENTS, type KubeObject, LEASES } from '../operator/src/controller/kube-client.ts';
import { renderWorkload } from '../operator/src/reconciler/render.ts';
import { READY_REASONS } from '../operator/src/reconciler/status.ts';
import { websitesType } from '../operator/src/reconciler/website.ts';
import type { WebsiteV1 } from '../lib/website/types.ts';
import { DEFAULT_GROUP } from '../lib/website/schema.ts';
import { LEASE_NAME } from '../lib/operator/names.ts';
import { OPERATOR_NS, OperatorProcess, RECONCILED_RESOURCES, WRITE_VERBS, serviceAccountKubeconfig } from '../scripts/operator-process.ts';
import { CREATE_CONCURRENCY } from './baselines.ts';
import { type BenchCluster, Watcher, emptyNamespace, inPool, waitFor } from './cluster.ts';
import { type OperatorRun, counterDelta, latencySummary, median, parseSeries, seriesLabels } from './report.ts';

/** How the operator process is configured for a run (its environment contract, operator/src/bin/config.ts). */
export interface OperatorSettings {
  /** Short name for the column, e.g. "QPS 20/30 (defaults)". */
  readonly label: string;
  /** CONCURRENCY. */
  readonly concurrency: number;
  /** KUBE_API_QPS and KUBE_API_BURST. */
  readonly qps: number;
  readonly burst: number;
}

export const DEFAULT_SETTINGS: OperatorSettings = { label: 'QPS 20/30 (defaults)', concurrency: 4, qps: 20, burst: 30 };
export const FAST_SETTINGS: OperatorSettings = { label: 'QPS 200/400', concurrency: 4, qps: 200, burst: 400 };

export function operatorEnv(settings: OperatorSettings): Record<string, string> {
  return {
    CONCURRENCY: String(settings.concurrency),
    KUBE_API_QPS: String(settings.qps),
    KUBE_API_BURST: String(settings.burst),
    LOG_LEVEL: 'info',
  };
}

export interface WebsiteOperatorBenchOptions {
  readonly cluster: BenchCluster;
  readonly n: number;
  readonly settings: OperatorSettings;
  /**
   * Replicas of each Website (pods the cluster runs: N × replicas).
   * @default 1
   */
  readonly replicas?: number;
  /**
   * RESYNC_SECONDS of the restarted operator whose idle resyncs are measured.
   * @default 5
   */
  readonly resyncSeconds?: number;
  /** Progress messages. */
  readonly log: (message: string) => void;
}

const METRICS = [
  'rest_client_requests_total',
  'controller_runtime_reconcile_total',
  'controller_runtime_reconcile_errors_total',
  'workqueue_retries_total',
  'workqueue_depth',
  'informer_watch_restarts_total',
  'process_cpu_seconds_total',
  'leader_election_master_status',
];

type Series = Map<string, number>;

async function scrape(operator: OperatorProcess): Promise<Series> {
  return parseSeries((await operator.get('/metrics')).body, METRICS);
}

/** Sum of the series of `name` whose labels include `labels`. */
function total(series: Series, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const [key, value] of series) {
    if (!key.startsWith(`${name}{`) && key !== name) continue;
    const own = seriesLabels(key);
    if (Object.entries(labels).every(([k, v]) => own[k] === v)) sum += value;
  }
  return sum;
}

function writes(series: Series): number {
  let sum = 0;
  for (const verb of WRITE_VERBS) for (const resource of RECONCILED_RESOURCES) sum += total(series, 'rest_client_requests_total', { verb, resource });
  return sum;
}

/** Waits until the operator leads, has reconciled at least `reconciles` times, and its queue stays empty for `quietMs`. */
async function settled(operator: OperatorProcess, reconciles: number, timeoutMs: number, quietMs = 1000): Promise<Series> {
  let last = -1;
  let since = performance.now();
  let series: Series = new Map();
  await waitFor(
    `the operator to settle after ${reconciles} reconciles`,
    async () => {
      if (!operator.running) throw new Error(`the operator exited:\n${operator.stderr.slice(-20).join('\n')}`);
      series = await scrape(operator);
      const done = total(series, 'controller_runtime_reconcile_total');
      const busy = total(series, 'workqueue_depth') > 0 || total(series, 'leader_election_master_status') !== 1 || done < reconciles;
      if (busy || done !== last) {
        last = done;
        since = performance.now();
        return false;
      }
      return performance.now() - since >= quietMs;
    },
    timeoutMs,
    () => `${last} reconciles so far`,
    // Every scrape costs the operator CPU: not too often.
    250,
  );
  return series;
}

/** Median of three RSS readings half a second apart. */
async function rss(operator: OperatorProcess): Promise<number> {
  const readings: number[] = [];
  for (let i = 0; i < 3; i++) {
    readings.push(await operator.rssBytes());
    await new Promise((r) => setTimeout(r, 500));
  }
  return median(readings);
}

/** Requests by "VERB resource code", per Website, and anything not 2xx. */
function requestDiagnostics(delta: Series, n: number, phase: string): string[] {
  const byKind = new Map<string, number>();
  const failures: string[] = [];
  for (const [key, value] of delta) {
    if (!key.startsWith('rest_client_requests_total{')) continue;
    const { verb, resource, code } = seriesLabels(key);
    byKind.set(`${verb} ${resource}`, (byKind.get(`${verb} ${resource}`) ?? 0) + value);
    if (!code.startsWith('2')) failures.push(`${verb} ${resource} → ${code === '0' ? 'no response' : code}: ${value}`);
  }
  const all = [...byKind.values()].reduce((a, b) => a + b, 0);
  const kinds = [...byKind].sort((a, b) => b[1] - a[1]).map(([kind, count]) => `${kind} ${(count / n).toFixed(2)}`);
  return [
    `${phase}: ${(all / n).toFixed(2)} API requests per Website (${kinds.join(', ')})`,
    ...(failures.length ? [`${phase}: responses other than 2xx: ${failures.join('; ')}`] : []),
  ];
}

/** warn and error lines of the operator's log, grouped by message, with one example each. */
function logDiagnostics(operator: OperatorProcess, phase: string): string[] {
  const groups = new Map<string, { count: number; example: Record<string, unknown> }>();
  for (const line of operator.logs) {
    if (line.level !== 'warn' && line.level !== 'error' && line.level !== 'fatal') continue;
    const key = `${line.level}: ${line.msg}`;
    const group = groups.get(key);
    if (group) group.count += 1;
    else groups.set(key, { count: 1, example: line });
  }
  return [...groups].map(([key, { count, example }]) => {
    const { level: _l, msg: _m, time: _t, component: _c, pid: _p, hostname: _h, ...fields } = example;
    return `${phase}: log "${key}" ×${count}, e.g. ${JSON.stringify(fields)}`;
  });
}

/** Operator processes this benchmark started and has not stopped yet. */
const started = new Set<OperatorProcess>();

async function startOperator(identity: string, kubeconfig: string, env: Record<string, string>): Promise<OperatorProcess> {
  const operator = await OperatorProcess.start(identity, kubeconfig, env);
  started.add(operator);
  void operator.exited.then(() => started.delete(operator));
  return operator;
}

/** SIGKILL to every operator process still running (the benchmark was interrupted). */
export function killOperators(): void {
  for (const operator of started) void operator.kill();
}

/**
 * Runs the operator with `settings` against N new Websites in its namespace and measures, in order:
 * 1. RSS with no Website (caches synced, leading);
 * 2. create → Deployment latency of each Website (create sent → Deployment seen by a watch in
 *    this process), and the time until every Website's status is Ready;
 * 3. API writes, CPU and RSS once every Website is Ready;
 * 4. a restart with RESYNC_SECONDS=`resyncSeconds`: the writes of its first pass over N Websites,
 *    then the writes and reconciles over at least two idle resync periods, and RSS.
 * Empties the namespace before and after.
 */
export async function benchWebsiteOperator(options: WebsiteOperatorBenchOptions): Promise<OperatorRun> {
  const { cluster, n, settings, log } = options;
  const { admin } = cluster;
  const replicas = options.replicas ?? 1;
  const resyncSeconds = options.resyncSeconds ?? 5;
  const websites = websitesType(DEFAULT_GROUP);
  const ns = OPERATOR_NS;
  const title = `website-operator ${settings.label}`;
  const diagnostics: string[] = [];

  await emptyNamespace(cluster, ns, websites);
  // A Lease left by a killed run would make the first operator wait for it to expire.
  await admin.delete(LEASES, { namespace: ns, name: LEASE_NAME }).catch(() => undefined);
  const kubeconfig = await serviceAccountKubeconfig(cluster);
  const env = operatorEnv(settings);

  const first = await startOperator('bench-1', kubeconfig, env);
  const deployments = new Watcher(admin, DEPLOYMENTS, ns);
  const ready = new Watcher<WebsiteV1 & KubeObject>(admin, websites, ns, {
    reached: (w) => w.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True' && c.observedGeneration === w.metadata.generation) ?? false,
  });
  let second: OperatorProcess | undefined;
  try {
    await settled(first, 0, 60_000);
    await Promise.all([deployments.synced(), ready.synced()]);
    const rssZero = await rss(first);
    const before = await scrape(first);

    // 2. N Websites, as fast as the API server takes them.
    const names = Array.from({ length: n }, (_, i) => `w-${String(i).padStart(5, '0')}`);
    const sentAt = new Map<string, number>();
    log(`${title}, N=${n}: creating ${n} Websites`);
    const start = performance.now();
    await inPool(names, CREATE_CONCURRENCY, async (name, i) => {
      sentAt.set(name, performance.now());
      await admin.create(websites, { apiVersion: `${DEFAULT_GROUP}/v1`, kind: 'Website', metadata: { name, namespace: ns }, spec: { title: `Website ${i}`, replicas } });
    });
    // A new Website costs about 9 requests under the client-side limit (finalizer, two GETs of
    // absent children, two applies, two events, two status writes): allow twice that.
    const budgetMs = 300_000 + ((n * 10) / settings.qps) * 1000 * 2;
    const failing = () =>
      ready.list().filter((w) => !ready.reachedAt.has(w.metadata.name!) && w.status?.conditions?.some((c) => c.type === 'Ready' && c.reason === READY_REASONS.failed)).length;
    const progress = () => `${names.filter((m) => deployments.firstSeen.has(`website-${m}`)).length} Deployments, ${ready.reachedAt.size} Ready, ${failing()} failing (condition ReconcileFailed) of ${n}`;
    let deploymentsAt = 0;
    const ticker = setInterval(() => log(`${title}, N=${n}: ${progress()}`), 30_000);
    try {
      await waitFor('every Deployment', () => names.every((m) => deployments.firstSeen.has(`website-${m}`)), budgetMs, progress);
      deploymentsAt = performance.now();
      log(`${title}, N=${n}: every Deployment after ${((deploymentsAt - start) / 1000).toFixed(1)} s`);
      await waitFor('every Website to be Ready', () => names.every((m) => ready.reachedAt.has(m)), budgetMs, progress);
    } finally {
      clearInterval(ticker);
    }
    const atReady = await scrape(first);
    log(`${title}, N=${n}: every Website Ready after ${((performance.now() - start) / 1000).toFixed(1)} s`);

    // 3. Once the operator is quiet again.
    const after = await settled(first, n, 120_000);
    const created = counterDelta(before, after);
    const createWrites = writes(created);
    const cpuMs = total(counterDelta(before, atReady), 'process_cpu_seconds_total') * 1000;
    const rssAfterCreate = await rss(first);
    diagnostics.push(...requestDiagnostics(created, n, 'create'));
    const reconciles = total(created, 'controller_runtime_reconcile_total');
    diagnostics.push(
      `create: ${reconciles} reconciles (${(reconciles / n).toFixed(2)} per Website), ${total(created, 'controller_runtime_reconcile_errors_total')} failed, ` +
        `${total(created, 'workqueue_retries_total')} requeued with backoff, ${total(created, 'informer_watch_restarts_total')} watch restarts`,
    );
    diagnostics.push(...logDiagnostics(first, 'create'));
    const code = await first.stop();
    if (code !== 0) diagnostics.push(`create: the operator exited with ${code} on SIGTERM`);

    // 4. A restarted operator: its first pass over N Websites, then idle resyncs.
    log(`${title}, N=${n}: restarting with RESYNC_SECONDS=${resyncSeconds} for the idle resync`);
    second = await startOperator('bench-2', kubeconfig, { ...env, RESYNC_SECONDS: String(resyncSeconds) });
    const restarted = await settled(second, n, 300_000, 500);
    const restartWrites = writes(restarted);
    const idleStart = performance.now();
    // Let at least two resync periods (with up to 10 % jitter) pass, and their passes finish.
    await waitFor(
      'two idle resyncs',
      async () => total(await scrape(second!), 'controller_runtime_reconcile_total') - total(restarted, 'controller_runtime_reconcile_total') >= 2 * n,
      resyncSeconds * 1000 * 6 + 120_000,
      undefined,
      250,
    );
    const idleEnd = await settled(second, 0, 120_000, 500);
    const windowMs = performance.now() - idleStart;
    const idle = counterDelta(restarted, idleEnd);
    const rssIdle = await rss(second);
    diagnostics.push(...requestDiagnostics(idle, n, `idle resync (${(windowMs / 1000).toFixed(1)} s)`));
    diagnostics.push(...logDiagnostics(second, 'restart and idle resync'));
    const code2 = await second.stop();
    if (code2 !== 0) diagnostics.push(`idle resync: the operator exited with ${code2} on SIGTERM`);

    return {
      title,
      n,
      latencyMs: latencySummary(names.map((m) => deployments.firstSeen.get(`website-${m}`)! - sentAt.get(m)!)),
      allDeploymentsMs: deploymentsAt - start,
      allReadyMs: Math.max(...names.map((m) => ready.reachedAt.get(m)!)) - start,
      createWrites,
      restartWrites,
      idle: { writes: writes(idle), reconciles: total(idle, 'controller_runtime_reconcile_total'), windowMs, resyncSeconds },
      rss: { zero: rssZero, afterCreate: rssAfterCreate, idle: rssIdle },
      cpuMsPerWebsite: cpuMs / n,
      diagnostics,
    };
  } finally {
    await first.kill();
    await second?.kill();
    await Promise.all([deployments.stop(), ready.stop()]);
    log(`${title}, N=${n}: emptying namespace ${ns}`);
    await emptyNamespace(cluster, ns, websites);
  }
}

export interface RenderTiming {
  /** renderWorkload: WebsiteWorkload in a fresh App and Chart, to JSON (µs per Website). */
  readonly renderUs: number;
  /** An empty App and Chart, to JSON: cdk8s's fixed cost (µs). */
  readonly emptyChartUs: number;
  /** JSON.parse(JSON.stringify(...)) of the rendered Deployment and Service: copying the output (µs). */
  readonly jsonRoundTripUs: number;
  readonly iterations: number;
}

/**
 * Render time per Website, warm, in this process: `rounds` rounds of `iterations` each of render,
 * empty chart and JSON round trip, interleaved so they see the same machine; medians of the rounds.
 */
export function measureRender(iterations = 500, rounds = 7): RenderTiming {
  const website = (i: number): WebsiteV1 => ({
    apiVersion: `${DEFAULT_GROUP}/v1`,
    kind: 'Website',
    metadata: { name: `w-${i}`, namespace: OPERATOR_NS, uid: `00000000-0000-0000-0000-${String(i).padStart(12, '0')}`, generation: 1 },
    spec: { title: `Website ${i}`, replicas: 1, color: '#2196F3' },
  });
  const inputs = Array.from({ length: iterations }, (_, i) => website(i));
  const outputs = inputs.map((w) => renderWorkload(w));
  let sink = 0;
  const time = (task: (i: number) => void) => {
    const start = performance.now();
    for (let i = 0; i < iterations; i++) task(i);
    return ((performance.now() - start) * 1000) / iterations;
  };
  const render = (i: number) => {
    sink += renderWorkload(inputs[i]).deployment.metadata!.name!.length;
  };
  const empty = () => {
    sink += new Chart(new App({ outdir: '/dev/null' }), 'website').toJson().length;
  };
  const json = (i: number) => {
    sink += (JSON.parse(JSON.stringify(outputs[i])) as typeof outputs[number]).service.metadata!.name!.length;
  };
  // Warm up: JIT and cdk8s's lazy initialisation.
  time(render);
  time(empty);
  time(json);
  const results = { render: [] as number[], empty: [] as number[], json: [] as number[] };
  for (let r = 0; r < rounds; r++) {
    results.render.push(time(render));
    results.empty.push(time(empty));
    results.json.push(time(json));
  }
  if (sink === 0) throw new Error('nothing was rendered');
  return { renderUs: median(results.render), emptyChartUs: median(results.empty), jsonRoundTripUs: median(results.json), iterations: iterations * rounds };
}
