// `npm run chaos`: N Websites (1000) churning on the benchmark's local cluster while each fault of
// harness/chaos/chaos.ts happens in turn (kill -9 of the operator, API server and etcd restarts, the
// operator's connections black-holed, a leader failover); after each, the time to converge once
// the churn stops, orphaned and duplicate children, lost updates, writes by a replica that did not
// hold the Lease (audit log), Warning events and error log lines. Then the trace stack under
// constant load (bench/chaos-trace.ts): Jaeger down, the Collector restarted and crashed, and
// unauthenticated OTLP. Writes docs/measure/results/chaos.md and bench/results/chaos-latest.json. See docs/measure/chaos.md.
//
//   npm run chaos -- [--n 1000] [--short] [--only operator-kill,leader-failover,trace] [--rate 20] [--seconds 60] [--keep-cluster]
import { mkdir, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { parseArgs } from 'node:util';
import {
  Chaos,
  type ChaosPlan,
  FAULT_TITLES,
  FAULTS,
  type FaultResult,
  type Finding,
  type Group,
  killOperators,
  NO_FAULT,
  type Scenario,
} from '../harness/chaos/chaos.ts';
import { traceChaos } from '../harness/chaos/trace-chaos.ts';
import { operatorBundle } from '../harness/operator/operator-process.ts';
import { DEFAULT_OPERATOR_RESOURCES, nodeOptionsFor } from '../lib/operator/operator-deployment.ts';
import {
  AUDIT_LOG,
  CLUSTER_ARGS,
  clusterEnv,
  clusterUp,
  describeMachine,
  holdCluster,
  installOperatorObjects,
  ROOT,
} from './cluster.ts';
import { formatRatio, formatValue, markdownTable, npmCommand, writeResultsPage } from './report.ts';

const TRACE = 'trace';

type TraceChaosResult = Awaited<ReturnType<typeof traceChaos>>['json'] & {
  faults: { fault: string; spansLost: number }[];
  unauthenticated: { refused: boolean; spansStored: number }[];
};

/**
 * The trace part's goals: nothing lost through a Jaeger outage or a Collector restart, and every
 * unauthenticated attempt refused with nothing stored. A crash (SIGKILL) loses the traces the
 * tail sampler was holding, which no queue can save: reported, not a failure.
 */
function traceClean(json: TraceChaosResult): boolean {
  const lossless = json.faults.filter((f) => !f.fault.includes('crash')).every((f) => f.spansLost === 0);
  return lossless && json.unauthenticated.every((u) => u.refused && u.spansStored === 0);
}

const log = (message: string) => process.stderr.write(`[chaos] ${new Date().toISOString().slice(11, 19)} ${message}\n`);

function positive(text: string, option: string): number {
  const value = Number(text);
  if (!Number.isFinite(value) || value <= 0)
    throw new Error(`--${option} takes a positive number, got ${JSON.stringify(text)}`);
  return value;
}

/** The figures of one fault as a table row; the time to converge against the no-fault baseline's. */
function row(result: FaultResult, baselineMs: number | undefined): string[] {
  const count = (findings: readonly Finding[]) => String(findings.length);
  const total = (groups: readonly Group[]) => String(groups.reduce((sum, g) => sum + g.count, 0));
  return [
    result.fault,
    `${result.churn.sent} (${result.churn.refused} refused) in ${result.churn.seconds.toFixed(0)} s`,
    result.convergeMs === null
      ? '**not converged**'
      : `${formatValue(result.convergeMs, 'ms')}${baselineMs !== undefined && result.fault !== NO_FAULT ? ` (${formatRatio(result.convergeMs, baselineMs)})` : ''}`,
    count(result.orphans),
    count(result.duplicates),
    count(result.lostUpdates),
    `${result.nonLeaderWrites.length} of ${result.writesAudited}`,
    `${total(result.warningEvents)} (${result.warningEvents.length} kinds)`,
    `${total(result.errorLogLines)} (${result.errorLogLines.length} kinds)`,
  ];
}

function details(result: FaultResult): string[] {
  const findings = (title: string, list: readonly Finding[]) =>
    list.length
      ? [
          `${title} (${list.length}${list.length > 10 ? ', the first 10' : ''}):`,
          '',
          ...list.slice(0, 10).map((f) => `- ${f.what}: ${f.detail}`),
          '',
        ]
      : [];
  const groups = (title: string, list: readonly Group[]) =>
    list.length
      ? [
          `${title}:`,
          '',
          markdownTable(
            ['count', 'kind', 'example'],
            list.map((g) => [
              String(g.count),
              g.key,
              g.example.length > 400 ? `${g.example.slice(0, 400)}…` : g.example,
            ]),
          ),
          '',
        ]
      : [`${title}: none.`, ''];
  return [
    `### ${result.fault}: ${FAULT_TITLES[result.fault]}`,
    '',
    ...result.injected.map((line) => `- ${line}`),
    `- Websites at the end: ${result.websites}; Lease holders seen in the audit log: ${result.leaseHolders.join(', ') || 'none'}`,
    '',
    ...findings('Lost updates', result.lostUpdates),
    ...findings('Orphans', result.orphans),
    ...findings('Duplicates', result.duplicates),
    ...findings('Writes by a replica that did not hold the Lease', result.nonLeaderWrites),
    ...groups('Warning events', result.warningEvents),
    ...groups('Error log lines (level error or fatal, and stderr)', result.errorLogLines),
  ];
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      n: { type: 'string' },
      short: { type: 'boolean', default: false },
      only: { type: 'string' },
      rate: { type: 'string' },
      seconds: { type: 'string' },
      'keep-cluster': { type: 'boolean', default: false },
    },
  });
  const short = values.short;
  // The same churn without a fault first: the baseline every time to converge is divided by.
  // `trace` names the trace stack's part, which runs after the operator's faults.
  const chosen = values.only?.split(',').map((f) => f.trim()) ?? [NO_FAULT, ...FAULTS, TRACE];
  for (const fault of chosen) {
    if (fault !== NO_FAULT && fault !== TRACE && !(FAULTS as readonly string[]).includes(fault)) {
      throw new Error(
        `--only takes faults separated by commas (${[NO_FAULT, ...FAULTS, TRACE].join(', ')}), got ${JSON.stringify(fault)}`,
      );
    }
  }
  const faults = chosen.filter((f) => f !== TRACE) as Scenario[];
  const n = Math.round(positive(values.n ?? (short ? '30' : '1000'), 'n'));
  const plan: ChaosPlan = {
    n,
    churnRate: positive(values.rate ?? (short ? '5' : '20'), 'rate'),
    churnSeconds: positive(values.seconds ?? (short ? '20' : '60'), 'seconds'),
    kills: short ? 1 : 5,
    // A hang, not a slow figure: the black hole alone costs up to 45 s (the connections' PING health
    // check), 150 s should that fail (the informers' inactivity timeout).
    convergeTimeoutMs: 600_000 + n * 300,
    // As the operator Deployment of dist/ runs it: NODE_ENV, its V8 heap cap, leader election at its defaults.
    operatorEnv: { NODE_ENV: 'production', NODE_OPTIONS: nodeOptionsFor(DEFAULT_OPERATOR_RESOURCES.memoryLimit) },
    prefix: 'chaos',
  };
  const began = Date.now();
  const { machine, machineText } = describeMachine();
  log(`machine: ${machineText}`);
  log(`plan: ${JSON.stringify(plan)}; faults: ${faults.join(', ')}`);
  const results: FaultResult[] = [];
  const failures: string[] = [];
  let populateMs = Number.NaN;
  let clusterDescription = 'not started (no operator fault chosen)';
  if (faults.length > 0) {
    await operatorBundle();
    // Room for every Website at 2 replicas (the churn's edits), and the creates of the churn.
    const cluster = await clusterUp({
      pods: 2 * (n + plan.churnRate * plan.churnSeconds) + 50,
      extraArgs: CLUSTER_ARGS,
      log,
    });
    clusterDescription = cluster.description;
    const chaos = new Chaos({ ...cluster, auditLog: AUDIT_LOG, env: clusterEnv() }, plan, log);
    const hold = holdCluster(values['keep-cluster'] ?? false, killOperators, log);
    try {
      await installOperatorObjects(cluster);
      await chaos.clean();
      log(`creating ${n} Websites`);
      populateMs = await chaos.populate();
      for (const fault of faults) {
        log(`${fault}: ${FAULT_TITLES[fault]}`);
        try {
          results.push(await chaos.fault(fault));
        } catch (error) {
          log(`${fault}: failed: ${(error as Error).stack ?? error}`);
          failures.push(`${fault}: ${(error as Error).message.split('\n').slice(0, 5).join(' ')}`);
        }
      }
      await chaos.clean();
    } finally {
      await hold.release();
    }
  }

  let trace: { markdown: string; json: unknown } | undefined;
  if (chosen.includes(TRACE)) {
    log('the trace stack under faults (bench/chaos-trace.ts)');
    try {
      trace = await traceChaos({ short, log: (line) => log(`trace: ${line}`) });
    } catch (error) {
      log(`trace: failed: ${(error as Error).stack ?? error}`);
      failures.push(`trace: ${(error as Error).message.split('\n').slice(0, 5).join(' ')}`);
    }
  }

  const minutes = (Date.now() - began) / 60_000;
  const date = new Date().toISOString();
  const report = [
    faults.length ? `# Chaos: the website operator under faults, ${n} Websites churning` : '# Chaos',
    '',
    `${date.slice(0, 16).replace('T', ' ')} UTC, ${minutes.toFixed(1)} min${short ? ' (--short)' : ''}. Machine: ${machineText}.`,
    ...(faults.length === 0
      ? ['']
      : [
          `Cluster: the local kwok cluster of scripts/cluster.sh (kube-apiserver, etcd, controller manager, scheduler, kwok: all on this machine), ${clusterDescription}; the API server audits ServiceAccounts' requests, Lease writes with their body (harness/cluster/audit-policy.yaml).`,
          '',
          `- The operator: the bundle operator/build/operator.mjs as the image runs it (NODE_ENV=production, the Deployment's NODE_OPTIONS), as its ServiceAccount under dist/'s Role, leader election on at its defaults (Lease 15 s, renew deadline 10 s, retry 2 s), LOG_LEVEL=info, WEBHOOK_ENABLED=false; one replica, two for the failover.`,
          `- Before the faults, ${n} Websites were created (32 at once) and converged in ${formatValue(populateMs, 'ms')}.`,
          `- Each fault: the operator starts, the Websites are checked converged, then ${plan.churnRate} changes/s for ${plan.churnSeconds} s (edit, create, edit, delete, repeating: edits set title, replicas 1 or 2, and colour; creates and deletes keep the population at ${n}); the fault happens at a random moment of the churn.`,
          '- **Time to converge**: from the churn stop until every Website matches its final spec (its Deployment and Service carry every field renderWorkload renders for it: replicas, the page with title and colour, owner; status Ready for its generation with every replica available), no Website is stuck deleting, and no orphan or duplicate remains (polled every second).',
          '- **Orphans**: Deployments and Services of the operator whose owner Website is gone, at convergence (or at the give-up time); **duplicates**: more than one Deployment or Service for a Website, or a child with two owners; **lost updates**: Websites not matching their final spec then.',
          "- **Writes by a non-leader**: writes (not the Lease) by an operator replica, told apart by its user agent (`website-operator/<POD_NAME>`), received while another replica held the Lease it had renewed less than its duration before (audit log); of all the operator's writes during the fault.",
          '',
          markdownTable(
            [
              'fault',
              'changes sent',
              'time to converge (× no fault)',
              'orphans',
              'duplicates',
              'lost updates',
              'writes by a non-leader',
              'Warning events',
              'error log lines',
            ],
            results.map((r) => row(r, results.find((b) => b.fault === NO_FAULT)?.convergeMs ?? undefined)),
          ),
          '',
          '## Each fault',
          '',
          ...results.flatMap(details),
        ]),
    ...(trace ? ['## The trace stack under faults', '', trace.markdown] : []),
    ...(failures.length ? ['**Faults that could not be measured:**', '', ...failures.map((f) => `- ${f}`), ''] : []),
  ].join('\n');
  process.stdout.write(`${report}\n`);
  const dir = join(ROOT, 'bench', 'results');
  await mkdir(dir, { recursive: true });
  const page = await writeResultsPage('chaos', npmCommand('chaos'), report);
  const json = {
    schemaVersion: 1,
    date,
    durationMinutes: Number(minutes.toFixed(2)),
    machine,
    settings: { short, faults, ...plan, cluster: clusterDescription, populateMs },
    failures,
    results,
    trace: trace?.json,
  };
  await writeFile(join(dir, 'chaos-latest.json'), `${JSON.stringify(json, null, 2)}\n`);
  log(`written to ${relative(ROOT, page)} and bench/results/chaos-latest.json (${minutes.toFixed(1)} min)`);
  const bad = results
    .filter(
      (r) =>
        r.convergeMs === null ||
        r.orphans.length ||
        r.duplicates.length ||
        r.lostUpdates.length ||
        r.nonLeaderWrites.length,
    )
    .map((r) => r.fault as string);
  if (trace && !traceClean(trace.json as TraceChaosResult)) bad.push(TRACE);
  if (failures.length || bad.length) {
    log(`not clean: ${[...failures.map((f) => f.split(':')[0]), ...bad].join(', ')}`);
    process.exitCode = 1;
  }
}

main().catch((error: Error) => {
  log(`error: ${error.stack ?? error.message}`);
  process.exit(1);
});
