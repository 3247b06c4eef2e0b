// Baseline figures for the operator benchmark: the shell operator (lib/shell-operator/) on a real
// cluster, run by scripts/shell-operator.sh exactly as a user runs it (harness/operator/shell-operator.ts).
//
//   node bench/shell-operator.ts --n 10,100,1000      against the local cluster (npm run cluster:up)
//   ... --interval 2 --cycles 2 --json               the results as JSON on stdout, the table on stderr
//
// Measures, for N Websites created across one interval:
// - create → Deployment latency: from the moment a watch sees a Website to the moment a watch
//   sees its Deployment (both watches in this process's kubectl children, so both clocks agree);
// - API requests per steady-state cycle: the API server's own count of the requests it dispatched
//   (apiserver_flowcontrol_dispatched_requests_total) under FlowSchemas the bench adds for the
//   operator's ServiceAccount alone, one per kind of request (list Websites, apply Deployments,
//   apply Services, anything else), so no other client of the cluster is counted.
//
// The local cluster has room for a thousand Websites' Services (scripts/cluster.sh adds a /16
// Service range to the default /24).
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { App, Chart } from 'cdk8s';
import { type ClusterAccess, kubectl, kubectlOk } from '../harness/cluster/kubectl.ts';
import { localCluster, startShellOperator, tracked } from '../harness/operator/shell-operator.ts';
import { samples } from '../harness/process/metrics.ts';
import { eventually } from '../harness/process/poll.ts';
import { ShellOperator } from '../lib/shell-operator/shell-operator.ts';
import { DEFAULT_GROUP } from '../lib/website/schema.ts';
import { percentile } from './report.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** `kubectl get <resource> --watch -o name`, remembering when each object was first seen. */
function watchFirstSeen(
  cluster: ClusterAccess,
  resource: string,
  namespace: string,
): { firstSeen: Map<string, number>; process: ChildProcess } {
  const child = tracked(
    spawn(
      cluster.kubectl,
      ['--kubeconfig', cluster.kubeconfig, 'get', resource, '-n', namespace, '--watch', '-o', 'name'],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    ),
  );
  const firstSeen = new Map<string, number>();
  createInterface({ input: child.stdout! }).on('line', (line) => {
    const name = line.slice(line.indexOf('/') + 1);
    if (!firstSeen.has(name)) firstSeen.set(name, Date.now());
  });
  return { firstSeen, process: child };
}

/** The kinds of request the operator's FlowSchemas tell apart; a last one, `other`, catches the rest. */
const REQUEST_KINDS = [
  { kind: 'LIST websites', verbs: ['list'], apiGroups: [DEFAULT_GROUP], resources: ['websites'] },
  { kind: 'APPLY deployments', verbs: ['patch'], apiGroups: ['apps'], resources: ['deployments'] },
  { kind: 'APPLY services', verbs: ['patch'], apiGroups: [''], resources: ['services'] },
] as const;

/**
 * API Priority and Fairness FlowSchemas that match only `namespace`'s website-shell-operator
 * ServiceAccount, one per request kind plus `other`, in the priority level its requests get
 * anyway: the API server then counts that client's requests by kind.
 */
function flowSchemas(namespace: string) {
  const subjects = [{ kind: 'ServiceAccount', serviceAccount: { name: 'website-shell-operator', namespace } }];
  const schema = (kind: string, precedence: number, rule: Record<string, unknown>) => ({
    apiVersion: 'flowcontrol.apiserver.k8s.io/v1',
    kind: 'FlowSchema',
    metadata: {
      name: `${namespace}-${kind.toLowerCase().replace(' ', '-')}`,
      labels: { 'website-stack/bench': namespace },
    },
    spec: {
      priorityLevelConfiguration: { name: 'workload-low' },
      matchingPrecedence: precedence,
      distinguisherMethod: { type: 'ByUser' },
      rules: [{ subjects, ...rule }],
    },
  });
  return [
    ...REQUEST_KINDS.map(({ kind, ...rule }) => schema(kind, 500, { resourceRules: [{ ...rule, namespaces: ['*'] }] })),
    schema('other', 501, {
      resourceRules: [{ verbs: ['*'], apiGroups: ['*'], resources: ['*'], namespaces: ['*'], clusterScope: true }],
      nonResourceRules: [{ verbs: ['*'], nonResourceURLs: ['*'] }],
    }),
  ];
}

/** Requests dispatched so far per FlowSchema, from the API server's /metrics. */
async function scrape(cluster: ClusterAccess): Promise<Map<string, number>> {
  const text = await kubectlOk(cluster, ['get', '--raw', '/metrics']);
  const counts = new Map<string, number>();
  for (const { labels, value } of samples(text, (name) => name === 'apiserver_flowcontrol_dispatched_requests_total')) {
    counts.set(labels.flow_schema, (counts.get(labels.flow_schema) ?? 0) + value);
  }
  return counts;
}

/** Requests per cycle between two scrapes, by kind and in total. */
function requestsPerCycle(
  schemas: ReturnType<typeof flowSchemas>,
  before: Map<string, number>,
  after: Map<string, number>,
  cycles: number,
) {
  const kinds = [...REQUEST_KINDS.map((k) => k.kind), 'other'];
  const byKind: Record<string, number> = {};
  schemas.forEach((schema, i) => {
    const name = schema.metadata.name;
    byKind[kinds[i]] = ((after.get(name) ?? 0) - (before.get(name) ?? 0)) / cycles;
  });
  return { total: Object.values(byKind).reduce((a, b) => a + b, 0), byKind };
}

export interface ShellOperatorBenchOptions {
  /** Websites created, in 10 batches spread evenly across one interval. */
  readonly n: number;
  /**
   * Where to run.
   * @default localCluster()
   */
  readonly cluster?: ClusterAccess;
  /**
   * Seconds the operator sleeps between cycles.
   * @default 10 (spec §8)
   */
  readonly intervalSeconds?: number;
  /**
   * Steady-state cycles the request count is averaged over.
   * @default 2
   */
  readonly cycles?: number;
  /**
   * `spec.replicas` of every Website.
   * @default 1
   */
  readonly replicas?: number;
  /**
   * Progress messages.
   * @default none
   */
  readonly log?: (message: string) => void;
}

export interface ShellOperatorBenchResult {
  readonly operator: 'shell';
  readonly n: number;
  readonly intervalSeconds: number;
  /** Website seen → its Deployment seen, in milliseconds. */
  readonly latencyMs: { readonly p50: number; readonly p90: number; readonly p99: number; readonly max: number };
  /** First Website created → last Deployment seen. */
  readonly allDeploymentsMs: number;
  /** API requests the operator makes per cycle once every Website has its children. */
  readonly requestsPerCycle: number;
  /** The same by kind: LIST websites, APPLY deployments, APPLY services, other (discovery, ...). */
  readonly requestsPerCycleByKind: Readonly<Record<string, number>>;
  /** Duration of the steady-state cycles, in milliseconds (the operator's own log). */
  readonly cycleMs: readonly number[];
  /**
   * Duration of the cycles the Websites waited through: each cycle that ended between the first
   * Website's creation and the last Deployment seen, and the one ending after it (in milliseconds).
   */
  readonly creationCycleMs: readonly number[];
}

/**
 * Creates N Websites in a fresh namespace while the shell operator runs there, and measures how
 * long each waits for its Deployment and what a cycle costs the API server. Cleans up after itself.
 */
export async function benchShellOperator(options: ShellOperatorBenchOptions): Promise<ShellOperatorBenchResult> {
  const cluster = options.cluster ?? localCluster();
  const interval = options.intervalSeconds ?? 10;
  const steadyCycles = options.cycles ?? 2;
  const replicas = options.replicas ?? 1;
  const log = options.log ?? (() => {});
  const n = options.n;
  if (!Number.isInteger(n) || n < 1) throw new Error(`n must be a positive whole number of Websites, got ${n}`);
  if (!existsSync(cluster.kubeconfig)) {
    throw new Error(
      `no kubeconfig at ${cluster.kubeconfig}: start the local cluster (npm run cluster:up) or set KUBECONFIG`,
    );
  }

  await kubectlOk(cluster, [
    'apply',
    '--server-side',
    '--force-conflicts',
    '-f',
    join(ROOT, 'dist/website-operator/website-crd.yaml'),
  ]);
  await kubectlOk(cluster, ['wait', '--for=condition=Established', '--timeout=60s', `crd/websites.${DEFAULT_GROUP}`]);
  const ns = `bench-shell-${randomBytes(3).toString('hex')}`;
  await kubectlOk(cluster, ['create', 'namespace', ns]);
  // Everything but the operator's Deployment: its pod would be simulated, the script runs here.
  const chart = new Chart(new App({ outdir: '/nonexistent' }), 'bench');
  new ShellOperator(chart, 'shell', { namespace: ns, createNamespace: false, intervalSeconds: interval });
  const manifests = chart.toJson().filter((m) => m.kind !== 'Deployment');
  await kubectlOk(cluster, ['apply', '--server-side', '-f', '-'], {
    input: manifests.map((m) => JSON.stringify(m)).join('\n'),
  });
  const schemas = flowSchemas(ns);
  await kubectlOk(cluster, ['apply', '--server-side', '-f', '-'], {
    input: schemas.map((m) => JSON.stringify(m)).join('\n'),
  });
  // The API server has taken a FlowSchema into its configuration once it reports it not dangling.
  for (const schema of schemas)
    await kubectlOk(cluster, [
      'wait',
      '--for=condition=Dangling=False',
      '--timeout=60s',
      `flowschema/${schema.metadata.name}`,
    ]);

  const websitesSeen = watchFirstSeen(cluster, `websites.v1.${DEFAULT_GROUP}`, ns);
  const deploymentsSeen = watchFirstSeen(cluster, 'deployments.apps', ns);
  const operator = startShellOperator(cluster, ns, { INTERVAL: String(interval) });
  try {
    // The first, empty cycle takes a token, a kubeconfig and a list: the watches are running by then.
    await operator.waitForCycles(1, 60_000);
    const names = Array.from({ length: n }, (_, i) => `w-${String(i).padStart(5, '0')}`);
    const batches = 10;
    const size = Math.ceil(n / batches);
    const start = Date.now();
    log(`N=${n}: creating ${n} Websites in ${batches} batches across ${interval} s`);
    for (let b = 0; b * size < n; b++) {
      await sleep(Math.max(0, start + (b * interval * 1000) / batches - Date.now()));
      const items = names.slice(b * size, (b + 1) * size).map((name) => ({
        apiVersion: `${DEFAULT_GROUP}/v1`,
        kind: 'Website',
        metadata: { name, namespace: ns },
        spec: { title: `Website ${name}`, replicas },
      }));
      await kubectlOk(cluster, ['create', '-f', '-'], {
        input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items }),
      });
    }
    await eventually(
      `N=${n}: every Deployment`,
      () => {
        if (!operator.running())
          throw new Error(
            `N=${n}: the shell operator exited; its log ends:\n${operator.lines
              .slice(-10)
              .map((l) => l.text)
              .join('\n')}`,
          );
        return names.every((name) => deploymentsSeen.firstSeen.has(`website-${name}`));
      },
      {
        timeoutMs: 3 * (interval * 1000 + n * 1000) + 60_000,
        intervalMs: 200,
        progress: () => `${deploymentsSeen.firstSeen.size} of ${n} appeared`,
        stopOnError: true,
      },
    );
    const allDeploymentsMs =
      Math.max(...names.map((name) => deploymentsSeen.firstSeen.get(`website-${name}`)!)) - start;
    const latencies = names
      .map((name) => deploymentsSeen.firstSeen.get(`website-${name}`)! - websitesSeen.firstSeen.get(name)!)
      .sort((a, b) => a - b);
    log(
      `N=${n}: every Deployment after ${(allDeploymentsMs / 1000).toFixed(1)} s; measuring ${steadyCycles} steady cycles`,
    );

    // Scrapes right after a cycle's log line fall in its sleep: whole cycles between them.
    const first = operator.cycles().length + 1;
    const cycleTimeout = (interval + 5) * 1000 + n * 2000;
    await operator.waitForCycles(first, cycleTimeout);
    const before = await scrape(cluster);
    await operator.waitForCycles(first + steadyCycles, steadyCycles * cycleTimeout);
    const after = await scrape(cluster);
    const requests = requestsPerCycle(schemas, before, after, steadyCycles);
    const steady = operator.cycles().slice(first, first + steadyCycles);
    const failed = steady.map((l) => Number(/, (\d+) failed, /.exec(l.text)![1]));
    if (failed.some((f) => f > 0)) {
      const since = operator.cycles()[first - 1].at;
      const firstFailure =
        operator.lines.find((l) => l.at >= since && / website \S+: (apply failed|skipped): /.test(l.text)) ?? steady[0];
      throw new Error(
        `N=${n}: Websites failed to apply in steady cycles (${failed.join(', ')}), so the figures would not be a baseline; first failure: ${firstFailure.text}`,
      );
    }
    const durationOf = (l: { text: string }) => Number(/, (\d+) ms$/.exec(l.text)![1]);
    const cycleMs = steady.map(durationOf);
    const lastDeploymentAt = start + allDeploymentsMs;
    const afterStart = operator.cycles().filter((l) => l.at >= start);
    const creationCycleMs = afterStart
      .slice(0, afterStart.findIndex((l) => l.at > lastDeploymentAt) + 1 || afterStart.length)
      .map(durationOf);
    const stopped = await operator.stop();
    if (stopped.code !== 0) throw new Error(`the shell operator exited with ${stopped.code} on SIGTERM`);
    return {
      operator: 'shell',
      n,
      intervalSeconds: interval,
      latencyMs: {
        p50: percentile(latencies, 50),
        p90: percentile(latencies, 90),
        p99: percentile(latencies, 99),
        max: latencies[latencies.length - 1],
      },
      allDeploymentsMs,
      requestsPerCycle: requests.total,
      requestsPerCycleByKind: requests.byKind,
      cycleMs,
      creationCycleMs,
    };
  } finally {
    await operator.stop();
    websitesSeen.process.kill();
    deploymentsSeen.process.kill();
    log(`N=${n}: deleting namespace ${ns}`);
    await kubectl(cluster, ['delete', 'flowschemas', '-l', `website-stack/bench=${ns}`]);
    // Waits, so the garbage collector's work does not load the next measurement.
    await kubectl(cluster, ['delete', 'namespace', ns, '--wait=true', '--timeout=600s']);
  }
}

/** The results side by side, one column per N. */
export function formatTable(results: readonly ShellOperatorBenchResult[]): string {
  const s = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
  const rows: [string, (r: ShellOperatorBenchResult) => string][] = [
    ['create → Deployment p50', (r) => s(r.latencyMs.p50)],
    ['create → Deployment p90', (r) => s(r.latencyMs.p90)],
    ['create → Deployment p99', (r) => s(r.latencyMs.p99)],
    ['create → Deployment max', (r) => s(r.latencyMs.max)],
    ['all N Deployments after', (r) => s(r.allDeploymentsMs)],
    ['API requests / cycle', (r) => r.requestsPerCycle.toFixed(1)],
    ...[...new Set(results.flatMap((r) => Object.keys(r.requestsPerCycleByKind)))]
      .sort()
      .map((kind): [string, (r: ShellOperatorBenchResult) => string] => [
        `  of which ${kind}`,
        (r) => (r.requestsPerCycleByKind[kind] ?? 0).toFixed(1),
      ]),
    ['cycle duration', (r) => r.cycleMs.map(s).join(', ')],
  ];
  const header = ['shell operator', ...results.map((r) => `N=${r.n}`)];
  const table = [header, ...rows.map(([label, cell]) => [label, ...results.map(cell)])];
  const widths = header.map((_, i) => Math.max(...table.map((row) => row[i].length)));
  return table
    .map((row) => row.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]) : cell.padStart(widths[i]))).join('  '))
    .join('\n');
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      n: { type: 'string', default: '10,100' },
      interval: { type: 'string', default: '10' },
      cycles: { type: 'string', default: '2' },
      json: { type: 'boolean', default: false },
    },
  });
  const results: ShellOperatorBenchResult[] = [];
  for (const n of values.n.split(',').map(Number)) {
    results.push(
      await benchShellOperator({
        n,
        intervalSeconds: Number(values.interval),
        cycles: Number(values.cycles),
        log: (m) => process.stderr.write(`[bench] ${m}\n`),
      }),
    );
  }
  if (values.json) {
    process.stdout.write(`${JSON.stringify(results, null, 2)}\n`);
    process.stderr.write(`${formatTable(results)}\n`);
  } else process.stdout.write(`${formatTable(results)}\n`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((error: Error) => {
    process.stderr.write(`[bench] error: ${error.message}\n`);
    process.exit(1);
  });
}
