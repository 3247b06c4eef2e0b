// `npm run bench`: every controller under test through the same phases (idle, burst at N = 10, 100
// and 1000, steady state, sustained churn, memory at 5000) on a local cluster of its own, every
// figure against a baseline measured in the same run. Writes docs/measure/results/benchmark.md and
// bench/results/latest.json. See docs/measure/benchmarks.md; a controller joins through a bench/peer.ts adapter.
//
//   npm run bench -- [--quick] [--n 10,100,1000] [--memory 5000] [--memory-for website-operator] [--peer ./my-peer.ts] [--no-kro] [--no-go] [--no-shell] [--only kro,shell]
//                    [--operator-env CONCURRENCY=16,KUBE_API_QPS=20 ...] [--operator-node-args '--heap-growing-percent=20' ...]
//                    [--replicas 1] [--keep-cluster]
import { mkdir, writeFile } from 'node:fs/promises';
import { join, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { stopTracked } from '../harness/operator/shell-operator.ts';
import { BASELINE_NS, directDeploymentsBaseline, EchoController, idleNodeRss } from './baselines.ts';
import { CLUSTER_ARGS, CREATE_CONCURRENCY, clusterUp, describeMachine, holdCluster, ROOT } from './cluster.ts';
import { goOperatorPeer } from './go-operator.ts';
import { kroPeer } from './kro.ts';
import { measureRender, websiteOperatorPeer } from './operator.ts';
import type { Peer, PeerContext } from './peer.ts';
import { burstFigure } from './phases/burst.ts';
import { churn } from './phases/churn.ts';
import { stopPeers } from './phases/peer-process.ts';
import { type EchoBurst, type Plan, type RunBaselines, type SubjectOutput, specFor } from './phases/plan.ts';
import { runPeer } from './phases/run-peer.ts';
import { oneAtATime } from './phases/steady.ts';
import {
  type FigureRecord,
  formatRatio,
  formatValue,
  latencySummary,
  markdownTable,
  npmCommand,
  phaseTables,
  resultsJson,
  sustainedRate,
  writeResultsPage,
} from './report.ts';
import { benchShellOperator } from './shell-operator.ts';

/** One controller under test: its figures as records, and what is worth a look below the tables, into `output` as it goes. */
export interface Subject {
  readonly title: string;
  readonly description: string;
  run(plan: Plan, baselines: RunBaselines, context: PeerContext, output: SubjectOutput): Promise<void>;
}

/**
 * Any controller described by a bench/peer.ts adapter: every phase, the memory phase only when
 * `memory` (else its memory figure is the one holding the largest burst's N).
 */
function peerSubject(peer: Peer, memory: boolean): Subject {
  return {
    title: peer.title,
    description: peer.description,
    run: (plan, baselines, context, output) =>
      runPeer(peer, { plan: memory ? plan : { ...plan, memoryN: undefined }, baselines, context }, output),
  };
}

/**
 * The shell operator as a user runs it (scripts/shell-operator.sh), at its default 10 s interval:
 * burst figures only. Steady state and churn would measure its interval, not its work (a change
 * waits up to one sleep and one whole cycle, 10 s or more, far beyond the 1 s queue-wait goal), and
 * it has no process that holds Websites (memory) nor a queue.
 */
function shellSubject(ns: readonly number[]): Subject {
  const title = 'shell operator (10 s interval)';
  return {
    title,
    description: `${title}: lib/shell-operator/'s script run by scripts/shell-operator.sh, as its ServiceAccount under the ShellOperator construct's Role, in a fresh namespace per N; Websites created in 10 batches across one interval; latency from a watch seeing the Website (one API round trip after its create); burst only, at N = ${ns.join(', ')}`,
    async run(_plan, baselines, { cluster, log }, { records, diagnostics }) {
      for (const n of ns) {
        const r = await benchShellOperator({
          n,
          cluster,
          log: (m) => log(`shell operator, ${m}`),
          replicas: _plan.replicas,
        });
        const echo = baselines.burst.get(n)?.echo;
        const b = burstFigure(title, n);
        records.push(
          b(
            'createToDeploymentP50',
            'create → Deployment seen, p50',
            'ms',
            r.latencyMs.p50,
            echo?.latencyMs.p50,
            'echo controller, p50',
          ),
          b(
            'createToDeploymentP99',
            'create → Deployment seen, p99',
            'ms',
            r.latencyMs.p99,
            echo?.latencyMs.p99,
            'echo controller, p99',
          ),
          b(
            'createToDeploymentMax',
            'create → Deployment seen, max',
            'ms',
            r.latencyMs.max,
            echo?.latencyMs.max,
            'echo controller, max',
          ),
          b(
            'allDeployments',
            'all N Deployments seen',
            'ms',
            r.allDeploymentsMs,
            echo?.allChildrenMs,
            'echo controller, all N children',
          ),
          b('requestsPerCycle', 'API requests per cycle, steady state', 'count', r.requestsPerCycle, n, 'N'),
        );
        diagnostics.push(
          `N=${n}: create → Deployment p90 ${formatValue(r.latencyMs.p90, 'ms')}; requests per cycle by kind: ${Object.entries(
            r.requestsPerCycleByKind,
          )
            .map(([k, v]) => `${k} ${formatValue(v, 'count')}`)
            .join(', ')}; cycles ${r.cycleMs.map((ms) => formatValue(ms, 'ms')).join(', ')}`,
        );
      }
    },
  };
}

/** The operator's default CONCURRENCY: the echo controller's workers. */
const ECHO_WORKERS = 4;

const log = (message: string) => process.stderr.write(`[bench] ${new Date().toISOString().slice(11, 19)} ${message}\n`);

function numbers(text: string, option: string): number[] {
  const values = text.split(',').map((v) => Number(v.trim()));
  if (values.some((n) => !Number.isInteger(n) || n < 1))
    throw new Error(`--${option} takes positive whole numbers separated by commas, got ${JSON.stringify(text)}`);
  return values;
}

/** A module whose default export (or `peer` export) is a Peer, or a function returning one. */
async function loadPeer(path: string): Promise<Peer> {
  const module = (await import(pathToFileURL(resolve(path)).href)) as { default?: unknown; peer?: unknown };
  const exported = module.default ?? module.peer;
  const peer = (typeof exported === 'function' ? await (exported as () => Peer | Promise<Peer>)() : exported) as
    | Peer
    | undefined;
  if (!peer || typeof peer.start !== 'function' || typeof peer.website !== 'function') {
    throw new Error(
      `${path} exports no Peer (bench/peer.ts): export default the adapter, or a function that returns it`,
    );
  }
  return peer;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      quick: { type: 'boolean', default: false },
      n: { type: 'string' },
      memory: { type: 'string' },
      'memory-for': { type: 'string' },
      peer: { type: 'string', multiple: true, default: [] },
      'no-shell': { type: 'boolean', default: false },
      'no-kro': { type: 'boolean', default: false },
      'no-go': { type: 'boolean', default: false },
      'operator-env': { type: 'string', multiple: true, default: [] },
      'operator-node-args': { type: 'string', multiple: true, default: [] },
      only: { type: 'string' },
      replicas: { type: 'string', default: '1' },
      'keep-cluster': { type: 'boolean', default: false },
    },
  });
  const quick = values.quick;
  const ns = numbers(values.n ?? (quick ? '10,100' : '10,100,1000'), 'n').sort((a, b) => a - b);
  const replicas = Number(values.replicas);
  if (!Number.isInteger(replicas) || replicas < 1 || replicas > 4)
    throw new Error(
      `--replicas takes 1 to 4 (the Website schema allows 5, and the churn's edits add one), got ${JSON.stringify(values.replicas)}`,
    );
  const plan: Plan = {
    ns,
    steadyCreates: 20,
    // Steps of about 1.5× (2× for --quick) from a rate any controller holds, up to beyond the
    // 155 changes/s webhosting-operator's evaluation reports; the first that fails ends the search.
    churnRates: quick ? [2, 4, 8, 16, 32] : [2, 3, 5, 8, 12, 18, 27, 40, 60, 90, 135, 200],
    stepSeconds: quick ? 10 : 30,
    memoryN: values.memory !== undefined ? numbers(values.memory, 'memory')[0] : quick ? undefined : 5000,
    replicas,
  };
  // The shell operator's cycles take about 0.1 s per Website; --quick keeps it to N=10.
  const shellNs = quick ? ns.filter((n) => n <= 10) : ns;
  const websiteOperator = websiteOperatorPeer();
  // Each --operator-env adds the website operator once more with those settings, beside its
  // defaults: how its CONCURRENCY default was chosen (docs/measure/benchmarks.md, "Results").
  const variants = values['operator-env'].map((list) => {
    const env = Object.fromEntries(
      list.split(',').map((pair) => {
        const [key, ...value] = pair.split('=');
        if (!/^[A-Z_][A-Z0-9_]*$/.test(key.trim()) || value.length === 0)
          throw new Error(`--operator-env takes NAME=VALUE pairs separated by commas, got ${JSON.stringify(list)}`);
        return [key.trim(), value.join('=').trim()];
      }),
    );
    return websiteOperatorPeer({
      title: `website-operator ${Object.entries(env)
        .map(([k, v]) => `${k}=${v}`)
        .join(' ')}`,
      env,
    });
  });
  // Each --operator-node-args adds it once more with those flags on Node's command line: V8's
  // heap flags, which NODE_OPTIONS refuses (docs/measure/benchmarks.md, "Against the Go peer, and the memory levers").
  const nodeArgVariants = values['operator-node-args'].map((list) => {
    const nodeArgs = list.split(/\s+/).filter(Boolean);
    if (!nodeArgs.length || nodeArgs.some((arg) => !arg.startsWith('--')))
      throw new Error(`--operator-node-args takes Node flags separated by spaces, got ${JSON.stringify(list)}`);
    return websiteOperatorPeer({ title: `website-operator node ${nodeArgs.join(' ')}`, nodeArgs });
  });
  const peers: Peer[] = [
    websiteOperator,
    ...variants,
    ...nodeArgVariants,
    ...(values['no-go'] ? [] : [goOperatorPeer()]),
    ...(values['no-kro'] ? [] : [kroPeer()]),
  ];
  for (const path of values.peer) {
    const peer = await loadPeer(path);
    // Figures are keyed by title: two alike would mix (e.g. --peer bench/kro.ts without --no-kro).
    if (peers.some((p) => p.title === peer.title))
      throw new Error(
        `${path}: a controller titled "${peer.title}" is already under test; give it another title, or leave the other out (--no-kro, --no-go)`,
      );
    peers.push(peer);
  }
  const only = values.only?.split(',').map((t) => t.trim().toLowerCase());
  // --memory-for: the titles (exactly) that hold plan.memoryN, an hour's phase for a slow controller.
  const memoryFor = values['memory-for']?.split(',').map((t) => t.trim());
  for (const title of memoryFor ?? [])
    if (!peers.some((p) => p.title === title))
      throw new Error(
        `--memory-for ${JSON.stringify(title)} is no controller's title (${peers.map((p) => p.title).join(', ')})`,
      );
  const subjects: Subject[] = [
    ...peers.map((peer) => peerSubject(peer, !memoryFor || memoryFor.includes(peer.title))),
    ...(values['no-shell'] || !shellNs.length ? [] : [shellSubject(shellNs)]),
  ].filter((s) => !only || only.some((prefix) => s.title.toLowerCase().startsWith(prefix)));
  if (!subjects.length)
    throw new Error(
      `--only ${values.only} matches no subject (${[...peers.map((p) => p.title), 'shell operator'].join(', ')})`,
    );

  const began = Date.now();
  const { machine, machineText } = describeMachine();
  log(`machine: ${machineText}`);
  log(`plan: ${JSON.stringify(plan)}; subjects: ${subjects.map((s) => s.title).join(', ')}`);
  log('render time per Website (in this process, before the cluster starts)');
  const render = measureRender();
  const nodeRss = await idleNodeRss();

  const largest = Math.max(...ns);
  const pods =
    Math.max(largest * replicas, (largest + plan.steadyCreates) * (replicas + 1), (plan.memoryN ?? 0) * replicas) + 50;
  const cluster = await clusterUp({ pods, extraArgs: CLUSTER_ARGS, log });
  const hold = holdCluster(
    values['keep-cluster'] ?? false,
    () => {
      stopTracked();
      return stopPeers();
    },
    log,
  );
  const context: PeerContext = { cluster, log };
  const records: FigureRecord[] = [];
  const diagnostics: { title: string; lines: string[] }[] = [];
  const failures: string[] = [];
  let baselines: RunBaselines;
  try {
    for (const peer of peers) if (subjects.some((s) => s.title === peer.title)) await peer.install(context);

    const burst = new Map<number, { echo: EchoBurst; directAllAvailableMs: number }>();
    let steady = latencySummary([]);
    let churnSteps: RunBaselines['churn'] = [];
    const echoBursts = new Map<number, EchoBurst>();
    for (const n of ns) {
      log(`baseline N=${n}: echo controller`);
      const echo = await EchoController.start(cluster, ECHO_WORKERS);
      try {
        const result = await echo.burst(n);
        const echoBurst = {
          latencyMs: latencySummary(result.createToChildMs),
          allChildrenMs: result.allChildrenMs,
          requestsPerSource: result.requestsPerSource,
        };
        log(
          `baseline N=${n}: echo p50 ${formatValue(echoBurst.latencyMs.p50, 'ms')}, p99 ${formatValue(echoBurst.latencyMs.p99, 'ms')}, all children ${formatValue(result.allChildrenMs, 'ms')}`,
        );
        // Steady state and churn only for subjects that go through them: the adapters'.
        if (n === largest && subjects.some((s) => peers.some((p) => p.title === s.title))) {
          log(`baseline: echo controller, steady state over ${n} sources`);
          steady = await oneAtATime(
            (name, i) => echo.create(name, specFor(n + i, replicas)),
            (name) => echo.childSeenAt(name),
            Array.from({ length: plan.steadyCreates }, (_, i) => `steady-${String(i).padStart(5, '0')}`),
          );
          log(`baseline: echo controller, churn over ${n} sources`);
          const population = [
            ...Array.from({ length: n }, (_, i) => `echo-${String(i).padStart(5, '0')}`),
            ...Array.from({ length: plan.steadyCreates }, (_, i) => `steady-${String(i).padStart(5, '0')}`),
          ];
          churnSteps = await churn(echo, population, plan.churnRates, plan.stepSeconds, replicas, (m) =>
            log(`echo controller: ${m}`),
          );
        }
        echoBursts.set(n, echoBurst);
      } finally {
        await echo.stop();
      }
      log(`baseline N=${n}: ${n} Deployments created directly`);
      const direct = await directDeploymentsBaseline(cluster, n, replicas);
      burst.set(n, { echo: echoBursts.get(n)!, directAllAvailableMs: direct.allAvailableMs });
    }
    baselines = { burst, steady, churn: churnSteps, idleNodeRss: nodeRss, renderUs: render.renderUs };

    for (const subject of subjects) {
      log(`${subject.title}: starting`);
      const output: SubjectOutput = { records: [], diagnostics: [] };
      try {
        await subject.run(plan, baselines, context, output);
      } catch (error) {
        // One controller failing (say, a peer never Ready) costs its remaining figures, not the others'.
        log(`${subject.title}: failed: ${(error as Error).stack ?? error}`);
        output.diagnostics.push(
          `**failed**, its remaining figures are missing: ${(error as Error).message.split('\n').slice(0, 5).join(' ')}`,
        );
        failures.push(subject.title);
      }
      records.push(...output.records);
      diagnostics.push({ title: subject.title, lines: output.diagnostics });
      process.stderr.write(`${phaseTables(output.records)}\n`);
    }
  } finally {
    await hold.release();
  }

  const minutes = (Date.now() - began) / 60_000;
  const operator = subjects.find((s) => s.title === websiteOperator.title);
  if (operator)
    records.push({
      subject: operator.title,
      phase: 'idle',
      n: 0,
      figure: 'renderPerWebsite',
      label: 'render per Website (renderWorkload)',
      unit: 'us',
      value: render.renderUs,
      baseline: render.jsonRoundTripUs,
      baselineLabel: 'JSON round trip of its output',
    });
  const date = new Date().toISOString();
  const settings = {
    quick,
    ...plan,
    createConcurrency: CREATE_CONCURRENCY,
    echoWorkers: ECHO_WORKERS,
    cluster: cluster.description,
    subjects: subjects.map((s) => ({ title: s.title, description: s.description })),
  };
  const report = [
    `# Benchmark: ${subjects.map((s) => s.title).join(', ')}`,
    '',
    `${date.slice(0, 16).replace('T', ' ')} UTC, ${minutes.toFixed(1)} min${quick ? ' (--quick)' : ''}. Machine: ${machineText}.`,
    `Cluster: the local kwok cluster of scripts/cluster.sh (kube-apiserver, etcd, controller manager, scheduler, kwok: all on this machine), ${cluster.description}; the API server audits ServiceAccounts' requests (harness/cluster/audit-policy.yaml).`,
    '',
    ...subjects.map((s) => `- ${s.description}.`),
    '',
    `Plan: burst at N = ${ns.join(', ')} (${replicas} replica each, ${CREATE_CONCURRENCY} creates in flight, administrator client); steady state and churn over the N = ${largest} Websites left by the last burst: ${plan.steadyCreates} creates one at a time, then churn at ${plan.churnRates.join(', ')} changes/s for ${plan.stepSeconds} s each (edit, create, edit, delete, repeating; stopped at the first rate that fails); memory ${plan.memoryN !== undefined ? `with ${plan.memoryN} Websites, created by a burst into a fresh process${memoryFor ? ` (${memoryFor.join(', ')}; the others at N = ${largest})` : ''}` : `at N = ${largest} (the last burst; the full run holds 5000)`}.`,
    '',
    phaseTables(records),
    'Each cell: the figure (its ratio to the baseline measured in the same run, and that baseline; details). Baselines:',
    `- **echo controller**: ConfigMaps created, edited and deleted exactly like the Websites; a controller in the benchmark process (the operator's own Informer and WorkQueue, ${ECHO_WORKERS} workers, no rate limit, in namespace ${BASELINE_NS}) keeps one child ConfigMap per source (one apply, or one delete); latency is create sent → child seen by a watch, as for Websites; its queue wait is the same histogram. The least any controller can do.`,
    "- **Deployments created directly**: the N Deployments the website operator renders (renderWorkload, no owner reference), created by the benchmark at the same pace, until each is available: the cluster's own time to run them.",
    "- **API requests** come from the API server's audit log (the controller's ServiceAccount, completed requests), from the first create until every Website was Ready: writes of anything but Events and Leases, GETs answered 404, other GETs, Events. Leases, lists and watches are left out (they depend on time, not on Websites) and shown below.",
    `- **RSS** is VmRSS from /proc (median of three readings a second apart); **CPU** is user + system time from /proc/<pid>/stat, first create to all Ready. An idle Node ${process.version} process (\`setInterval\`) has ${formatValue(nodeRss, 'bytes')}.`,
    "- **Churn**: a rate holds when at least 99 % of the controller's queue waits (`workqueue_queue_duration_seconds`, over the step and until its queue drains) are within 1 s; the figure is the rate actually sent in the last step that held.",
    '',
    '## Render time per Website (warm, in the benchmark process)',
    '',
    markdownTable(
      ['what', 'per Website', 'vs. JSON round trip of the output'],
      [
        [
          'renderWorkload (WebsiteWorkload in a fresh App + Chart, toJson)',
          formatValue(render.renderUs, 'us'),
          formatRatio(render.renderUs, render.jsonRoundTripUs),
        ],
        [
          'empty App + Chart, toJson (cdk8s fixed cost)',
          formatValue(render.emptyChartUs, 'us'),
          formatRatio(render.emptyChartUs, render.jsonRoundTripUs),
        ],
        [
          'JSON.parse(JSON.stringify(Deployment + Service)) (baseline)',
          formatValue(render.jsonRoundTripUs, 'us'),
          '1×',
        ],
      ],
    ),
    '',
    `Medians of 7 rounds of ${render.iterations / 7} Websites each, the three interleaved. Echo controller churn: ${baselines.churn.map((s) => `${s.rate}/s: p99 ${s.waitP99Seconds.toFixed(3)} s`).join(', ')} (sustained ${sustainedRate(baselines.churn).toFixed(1)}/s).`,
    '',
    '## Diagnostics',
    '',
    ...diagnostics.flatMap((d) => [`**${d.title}**`, '', ...d.lines.map((line) => `- ${line}`), '']),
  ].join('\n');
  process.stdout.write(`${report}\n`);
  const dir = join(ROOT, 'bench', 'results');
  await mkdir(dir, { recursive: true });
  const page = await writeResultsPage('benchmark', npmCommand('bench'), report);
  await writeFile(
    join(dir, 'latest.json'),
    resultsJson({ date, durationMinutes: Number(minutes.toFixed(2)), machine, settings }, records),
  );
  log(`written to ${relative(ROOT, page)} and bench/results/latest.json (${minutes.toFixed(1)} min)`);
  if (failures.length) {
    log(`failed: ${failures.join(', ')} (see Diagnostics)`);
    process.exitCode = 1;
  }
}

main().catch((error: Error) => {
  log(`error: ${error.stack ?? error.message}`);
  process.exit(1);
});
