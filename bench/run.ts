// `npm run bench`: the website operator and the shell operator side by side at N = 10, 100 and 1000
// Websites on a local cluster of its own, every figure against a baseline measured in the same run.
// Prints a markdown report and writes it to bench/results/latest.md. See README "Benchmarks".
//
//   npm run bench -- [--n 10,100,1000] [--quick] [--resync 5] [--replicas 1] [--keep-cluster]
//
// At N=1000 the QPS 20/30 defaults take about 8 minutes (their client-side rate limit: about 9
// requests per new Website at 20 per second) and the shell operator several more (a cycle of 1000
// Websites takes 92 to 99 s, and it is measured over three of them); --quick runs both only up to
// N=100.
import { mkdir, writeFile } from 'node:fs/promises';
import { cpus, release, totalmem } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { operatorBundle } from '../scripts/operator-process.ts';
import { BASELINE_NS, CREATE_CONCURRENCY, directDeploymentsBaseline, echoBaseline, idleNodeRss } from './baselines.ts';
import { type BenchCluster, ROOT, clusterDown, clusterUp, ensureServiceCidr, installOperatorObjects } from './cluster.ts';
import { DEFAULT_SETTINGS, FAST_SETTINGS, type OperatorSettings, benchWebsiteOperator, killOperators, measureRender } from './operator.ts';
import { benchShellOperator, shellOperatorRun, stopShellOperatorBench } from './shell-operator.ts';
import { type Baselines, type Column, type OperatorRun, ROWS, figuresTable, formatRatio, formatValue, latencySummary, markdownTable, operatorColumn, percentile } from './report.ts';

/** What every operator under test gets: the cluster, and where to say what it is doing. */
export interface BenchContext {
  readonly cluster: BenchCluster;
  readonly log: (message: string) => void;
}

/**
 * One operator (in one configuration) under test: a column per N. Another operator joins the
 * table with one more entry in `subjects` below, as the shell operator (bench/shell-operator.ts)
 * did. Figures a subject does not report stay empty in its column.
 */
export interface Subject {
  readonly title: string;
  /** Skips N where this subject would take too long. @default every N */
  readonly runsAt?: (n: number) => boolean;
  run(n: number, context: BenchContext): Promise<OperatorRun>;
}

function websiteOperator(settings: OperatorSettings, options: { runsAt?: (n: number) => boolean; resyncSeconds: number; replicas: number }): Subject {
  return {
    title: `website-operator ${settings.label}`,
    runsAt: options.runsAt,
    run: (n, { cluster, log }) => benchWebsiteOperator({ cluster, n, settings, log, resyncSeconds: options.resyncSeconds, replicas: options.replicas }),
  };
}

/** The shell operator as a user runs it (scripts/shell-operator.sh), at its default 10 s interval. */
function shellOperator(options: { runsAt?: (n: number) => boolean; replicas: number }): Subject {
  return {
    title: 'shell operator (10 s interval)',
    runsAt: options.runsAt,
    run: async (n, { cluster, log }) => shellOperatorRun(await benchShellOperator({ n, cluster, log: (m) => log(`shell operator, ${m}`), replicas: options.replicas })),
  };
}

/** The local cluster's controller manager and scheduler, raised above their 20 QPS defaults so they are not what the figures measure. */
const CLUSTER_ARGS = [
  'kube-controller-manager=kube-api-qps=500',
  'kube-controller-manager=kube-api-burst=1000',
  'kube-scheduler=kube-api-qps=500',
  'kube-scheduler=kube-api-burst=1000',
];

const log = (message: string) => process.stderr.write(`[bench] ${new Date().toISOString().slice(11, 19)} ${message}\n`);

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      n: { type: 'string', default: '10,100,1000' },
      quick: { type: 'boolean', default: false },
      resync: { type: 'string', default: '5' },
      replicas: { type: 'string', default: '1' },
      'keep-cluster': { type: 'boolean', default: false },
    },
  });
  const ns = values.n.split(',').map((v) => Number(v.trim()));
  if (ns.some((n) => !Number.isInteger(n) || n < 1)) throw new Error(`--n takes positive whole numbers separated by commas, got ${JSON.stringify(values.n)}`);
  const resyncSeconds = Number(values.resync);
  const replicas = Number(values.replicas);
  if (!(resyncSeconds >= 1)) throw new Error(`--resync takes seconds (at least 1), got ${JSON.stringify(values.resync)}`);
  if (!Number.isInteger(replicas) || replicas < 1 || replicas > 5) throw new Error(`--replicas takes 1 to 5 (the Website schema's bounds), got ${JSON.stringify(values.replicas)}`);
  // At N = 1000 the client-side limit alone makes the QPS 20 defaults take 8 minutes, and the
  // shell operator's cycles take about 95 s each: --quick runs those two only up to 100.
  const slowUpTo = values.quick ? 100 : Number.POSITIVE_INFINITY;
  const subjects: Subject[] = [
    websiteOperator(DEFAULT_SETTINGS, { runsAt: (n) => n <= slowUpTo, resyncSeconds, replicas }),
    websiteOperator(FAST_SETTINGS, { resyncSeconds, replicas }),
    shellOperator({ runsAt: (n) => n <= slowUpTo, replicas }),
  ];

  const began = Date.now();
  const machine = `${cpus().length} × ${cpus()[0]?.model.trim() ?? 'unknown CPU'}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Linux ${release()}, Node ${process.version}`;
  log(`machine: ${machine}`);
  // The operator runs as the image runs it: the bundle, built from the working tree now.
  log(`operator bundle: ${await operatorBundle()}`);
  log('render time per Website (in this process, before the cluster starts)');
  const render = measureRender();
  const nodeRss = await idleNodeRss();

  const cluster = await clusterUp({ pods: Math.max(...ns) * replicas + 50, extraArgs: CLUSTER_ARGS, log });
  let stopCluster = !values['keep-cluster'];
  const interrupted = () => {
    log('interrupted');
    killOperators();
    stopShellOperatorBench();
    (stopCluster ? clusterDown() : Promise.resolve()).finally(() => process.exit(130));
  };
  process.once('SIGINT', interrupted);
  process.once('SIGTERM', interrupted);
  const columns: Column[] = [];
  try {
    await installOperatorObjects(cluster);
    await ensureServiceCidr(cluster);
    for (const n of ns) {
      const context: BenchContext = { cluster, log };
      log(`N=${n}: baseline: echo controller`);
      const echo = await echoBaseline(cluster, n, DEFAULT_SETTINGS.concurrency);
      log(`N=${n}: baseline: ${n} Deployments created directly`);
      const direct = await directDeploymentsBaseline(cluster, n, replicas);
      const baseline: Baselines = {
        n,
        echoLatencyMs: latencySummary(echo.createToChildMs),
        echoAllChildrenMs: echo.allChildrenMs,
        directAllAvailableMs: direct.allAvailableMs,
        renderUs: render.renderUs,
      };
      log(`N=${n}: echo p50 ${formatValue(percentile(echo.createToChildMs, 50), 'ms')}, p99 ${formatValue(percentile(echo.createToChildMs, 99), 'ms')}; API round trip p50 ${formatValue(percentile(echo.createToSeenMs, 50), 'ms')}; direct Deployments all available after ${formatValue(direct.allAvailableMs, 'ms')}`);
      for (const subject of subjects) {
        if (subject.runsAt && !subject.runsAt(n)) {
          log(`N=${n}: skipping ${subject.title} (--quick)`);
          continue;
        }
        const run = await subject.run(n, context);
        columns.push(operatorColumn(run, baseline));
        process.stderr.write(`${figuresTable(ROWS, columns.slice(-1))}\n`);
      }
    }
  } finally {
    process.off('SIGINT', interrupted);
    process.off('SIGTERM', interrupted);
    if (stopCluster) {
      stopCluster = false;
      await clusterDown();
    }
  }

  const minutes = ((Date.now() - began) / 60_000).toFixed(1);
  const report = [
    `# Benchmark: the website operator and the shell operator at N = ${ns.join(', ')}`,
    '',
    `${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, ${minutes} min. Machine: ${machine}.`,
    `Cluster: the local kwok cluster of scripts/cluster.sh (kube-apiserver, etcd, controller manager, scheduler, kwok: all on this machine), ${cluster.description}.`,
    `Operator: the bundle the image runs (operator/build/operator.mjs, built from operator/src/bin/operator.ts by scripts/build-operator.ts) as a process, as its ServiceAccount (token) under dist/'s Role; leader election on, LOG_LEVEL=info, WEBHOOK_ENABLED=false; CONCURRENCY=${DEFAULT_SETTINGS.concurrency}.`,
    "Shell operator: lib/shell-operator/'s script run by scripts/shell-operator.sh, as its ServiceAccount (token) under the ShellOperator construct's Role, in a fresh namespace per N.",
    `Settings: ${subjects.map((s) => s.title).join('; ')}${values.quick ? ` (--quick: the QPS 20/30 defaults and the shell operator only up to N=${slowUpTo})` : ''}. At the defaults the client-side limit bounds throughput: about 9 requests per new Website (see below) at 20 per second is ≥ 450 s for N=1000; QPS 200/400 shows the operator's own cost.`,
    `Websites: ${replicas} replica each. For the website operator, created ${CREATE_CONCURRENCY} at a time by the benchmark (administrator client, no client-side limit); idle resync: the operator restarted with RESYNC_SECONDS=${resyncSeconds}. For the shell operator, created in 10 batches spread across one 10 s interval, so creations fall at every point of its cycle.`,
    '',
    figuresTable(ROWS, columns),
    '',
    'Each cell: the figure (its ratio to the baseline of the same N, measured in the same run, and that baseline). Baselines:',
    `- **echo controller**: ConfigMaps created exactly like the Websites; a controller in the benchmark process (the operator's own Informer and WorkQueue, ${DEFAULT_SETTINGS.concurrency} workers, no rate limit) creates a child ConfigMap for each; latency is create sent → child seen by a watch, as for Websites. The least any operator can do: one watch event, one create, one watch event.`,
    `- **Deployments created directly**: the N Deployments the operator would render (renderWorkload, no owner reference), created by the benchmark at the same pace in namespace ${BASELINE_NS}, until each is available: the cluster's own time to run them.`,
    '- **API writes**: CREATE/APPLY/PATCH/UPDATE/DELETE of websites (incl. status), deployments and services, from the operator\'s `rest_client_requests_total` (Lease renewals and events are counted in the diagnostics below).',
    `- **RSS**: VmRSS of the operator process (/proc), median of three readings; the baseline is the same configuration with 0 Websites (caches synced, leading). A reading depends on when V8 last collected garbage: at small N the change per Website is noise. An idle Node ${process.version} process (\`setInterval\`) has ${formatValue(nodeRss, 'bytes')}.`,
    '- **CPU per Website**: the operator\'s process_cpu_seconds_total from the first create until all were Ready, over N; baseline: renderWorkload per Website (below).',
    '- **API requests per cycle** (the shell operator, which repeats its work every cycle; the website operator\'s counterpart is its idle resync): requests the API server dispatched for the operator\'s ServiceAccount (`apiserver_flowcontrol_dispatched_requests_total` under FlowSchemas of its own), averaged over two cycles once every Website has its children; baseline: N. The shell operator\'s latency starts when a watch sees the Website rather than when its create is sent: one API round trip later (a few tens of ms here).',
    '',
    '## Render time per Website (warm, in the benchmark process)',
    '',
    markdownTable(
      ['what', 'per Website', 'vs. JSON round trip of the output'],
      [
        ['renderWorkload (WebsiteWorkload in a fresh App + Chart, toJson)', formatValue(render.renderUs, 'us'), formatRatio(render.renderUs, render.jsonRoundTripUs)],
        ['empty App + Chart, toJson (cdk8s fixed cost)', formatValue(render.emptyChartUs, 'us'), formatRatio(render.emptyChartUs, render.jsonRoundTripUs)],
        ['JSON.parse(JSON.stringify(Deployment + Service)) (baseline)', formatValue(render.jsonRoundTripUs, 'us'), '1×'],
      ],
    ),
    '',
    `Medians of 7 rounds of ${render.iterations / 7} Websites each, the three interleaved.`,
    '',
    '## Under load: requests, errors, retries, warnings',
    '',
    ...columns.flatMap((c) => [`**${c.title}**`, '', ...(c.diagnostics ?? []).map((d) => `- ${d}`), '']),
  ].join('\n');
  process.stdout.write(`${report}\n`);
  const dir = join(ROOT, 'bench', 'results');
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, 'latest.md'), `${report}\n`);
  log(`written to bench/results/latest.md (${minutes} min)`);
}

main().catch((error: Error) => {
  log(`error: ${error.stack ?? error.message}`);
  process.exit(1);
});
