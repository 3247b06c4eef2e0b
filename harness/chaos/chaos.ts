// Faults injected while Websites churn, and what the operator left behind: the machinery of
// `npm run chaos` (bench/chaos.ts, N = 1000) and of its short version in CI
// (test/cluster/chaos.test.ts). Everything is observed from outside the operator: the Websites and
// their children through an administrator client, writes and Lease holders from the API server's
// audit log, Warning events from the Events API, error lines from the operator's own log.
import { copyFile, mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { dirname, join } from 'node:path';
import { LEASE_NAME } from '../../lib/operator/names.ts';
import { DEFAULT_GROUP } from '../../lib/website/schema.ts';
import type { WebsiteV1 } from '../../lib/website/types.ts';
import { MANAGED_BY } from '../../lib/workload/website-workload.ts';
import { isNotFound } from '../../operator/src/controller/api-error.ts';
import { firstDifference } from '../../operator/src/controller/apply.ts';
import { sleep } from '../../operator/src/controller/backoff.ts';
import { DEPLOYMENTS, EVENTS, type KubeObject, LEASES, SERVICES } from '../../operator/src/controller/kube-api.ts';
import type { KubeClient } from '../../operator/src/controller/kube-client.ts';
import { renderedKind, renderWorkload } from '../../operator/src/reconciler/render.ts';
import { websitesType } from '../../operator/src/reconciler/website.ts';
import { type AuditEvent, auditEvents, auditLogSize } from '../cluster/audit.ts';
import { pacedChanges } from '../cluster/churn.ts';
import { ROOT } from '../cluster/env.ts';
import { type ClusterAccess, serviceAccountKubeconfig } from '../cluster/kubectl.ts';
import { websiteColor } from '../cluster/website.ts';
import { OPERATOR_NS } from '../operator/operator-manifests.ts';
import { type LogLine, OperatorProcess } from '../operator/operator-process.ts';
import { eventually, TimedOut } from '../process/poll.ts';
import { inPool } from '../process/pool.ts';
import { runScript } from '../process/processes.ts';

const WEBSITES = websitesType(DEFAULT_GROUP);

/** The faults, in the order a full run injects them. */
export const FAULTS = [
  'operator-kill',
  'apiserver-restart',
  'etcd-restart',
  'watch-blackhole',
  'leader-failover',
  'paused-leader',
] as const;
export type Fault = (typeof FAULTS)[number];
/** The same churn without a fault: the baseline of the time to converge. */
export const NO_FAULT = 'none';
export type Scenario = Fault | typeof NO_FAULT;

export const FAULT_TITLES: Record<Scenario, string> = {
  none: 'no fault: the same churn, the baseline of the time to converge',
  'operator-kill': 'kill -9 of the operator (restarted at once, as a Deployment restarts its container)',
  'apiserver-restart': 'kube-apiserver restarted (scripts/cluster.sh restart-apiserver)',
  'etcd-restart': 'etcd restarted (scripts/cluster.sh restart-etcd)',
  'watch-blackhole':
    "the operator's connections black-holed: a TCP proxy between it and the API server stops forwarding on every open connection, without FIN or RST; new connections work",
  'leader-failover':
    'leader failover between two replicas: the leader is frozen (SIGSTOP) until the other one leads, then killed (kill -9)',
  'paused-leader':
    'a paused leader (a long GC pause, a stalled VM): frozen (SIGSTOP) until the other replica leads, then resumed (SIGCONT)',
};

/** A cluster the chaos runs on: the administrator, the audit log of ServiceAccounts' requests, scripts/cluster.sh's environment. */
export interface ChaosCluster extends ClusterAccess {
  /** Administrator client; its requests must time out (a restart of etcd holds them). */
  readonly admin: KubeClient;
  /** Written by an audit policy that logs ServiceAccounts' requests, and Lease writes with their body (harness/cluster/audit-policy.yaml). */
  readonly auditLog: string;
  /** WEBSITE_STACK_CLUSTER_DIR and _NAME of this cluster, for `scripts/cluster.sh restart-…`. */
  readonly env: NodeJS.ProcessEnv;
}

export interface ChaosPlan {
  /** Websites standing while the churn runs. */
  readonly n: number;
  /** Changes per second: edits (title, replicas and colour), creates and deletes. */
  readonly churnRate: number;
  readonly churnSeconds: number;
  /** kill -9s of the operator-kill fault. */
  readonly kills: number;
  /** Polled convergence gives up after this: a hang, not a slow figure. */
  readonly convergeTimeoutMs: number;
  /** Environment of every operator process (leader election timings, NODE_OPTIONS, ...). */
  readonly operatorEnv: Readonly<Record<string, string>>;
  /** Names of the run's Websites: `<prefix>-00001`; they carry the label `website-stack/chaos=<prefix>`. */
  readonly prefix: string;
}

/** One thing found wrong, named. */
export interface Finding {
  readonly what: string;
  readonly detail: string;
}

/** Occurrences of one kind of Warning event or error log line, with one of them in full. */
export interface Group {
  readonly key: string;
  readonly count: number;
  readonly example: string;
}

export interface FaultResult {
  readonly fault: Scenario;
  /** What was injected when (seconds into the churn), and how the operator took it. */
  readonly injected: string[];
  readonly churn: { readonly sent: number; readonly refused: number; readonly seconds: number };
  /** Churn stop → every Website matches its final spec, no orphan, no duplicate; null: not within convergeTimeoutMs. */
  readonly convergeMs: number | null;
  /** Websites at the end. */
  readonly websites: number;
  readonly orphans: readonly Finding[];
  readonly duplicates: readonly Finding[];
  readonly lostUpdates: readonly Finding[];
  /** Writes by an operator replica while another one held an unexpired Lease (audit log). */
  readonly nonLeaderWrites: readonly Finding[];
  /** Operator writes (not Leases) in the audit log over the fault, and the Lease holders seen. */
  readonly writesAudited: number;
  readonly leaseHolders: readonly string[];
  readonly warningEvents: readonly Group[];
  readonly errorLogLines: readonly Group[];
}

const NAMESPACE = OPERATOR_NS;

const chaosLabel = (prefix: string) => `website-stack/chaos=${prefix}`;

/** Whether `done` comes to hold within `timeoutMs`; its own errors fail the run. */
function holdsWithin(
  what: string,
  done: () => Promise<boolean> | boolean,
  timeoutMs: number,
  intervalMs = 250,
): Promise<boolean> {
  return eventually(what, done, { timeoutMs, intervalMs, stopOnError: true }).then(
    () => true,
    (error) => {
      if (error instanceof TimedOut) return false;
      throw error;
    },
  );
}

/**
 * A TCP proxy on 127.0.0.1 in front of the API server. `blackHole()` stops forwarding on every
 * connection open at that moment, in both directions, without closing anything: the peers see a
 * connection that is up and silent (a dead NAT entry, a partitioned node). Later connections work.
 */
export class BlackHoleProxy {
  private readonly pairs = new Set<{ client: Socket; upstream: Socket; holed: boolean }>();
  private readonly server: Server;
  port = 0;

  private constructor(target: { host: string; port: number }) {
    this.server = createServer((client) => {
      const upstream = connect(target.port, target.host);
      const pair = { client, upstream, holed: false };
      this.pairs.add(pair);
      client.on('data', (data) => void (pair.holed || upstream.write(data)));
      upstream.on('data', (data) => void (pair.holed || client.write(data)));
      for (const socket of [client, upstream]) {
        // Once black-holed, nothing that happens on one side reaches the other.
        const end = () => {
          if (pair.holed) return void socket.destroy();
          this.pairs.delete(pair);
          client.destroy();
          upstream.destroy();
        };
        socket.on('error', end);
        socket.on('close', end);
      }
    });
  }

  static async start(target: { host: string; port: number }): Promise<BlackHoleProxy> {
    const proxy = new BlackHoleProxy(target);
    await new Promise<void>((resolve) => proxy.server.listen(0, '127.0.0.1', resolve));
    proxy.port = (proxy.server.address() as { port: number }).port;
    return proxy;
  }

  /** Stops forwarding on the connections open now; returns how many. */
  blackHole(): number {
    let count = 0;
    for (const pair of this.pairs) {
      if (pair.holed) continue;
      pair.holed = true;
      // Not read any more: what the peers send stays in the kernel's buffers, as on a dead path.
      pair.client.pause();
      pair.upstream.pause();
      count += 1;
    }
    return count;
  }

  async close(): Promise<void> {
    for (const pair of this.pairs) {
      pair.client.destroy();
      pair.upstream.destroy();
    }
    this.pairs.clear();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

/** A copy of `kubeconfig` (as serviceAccountKubeconfig writes it) whose server is `server`. */
async function kubeconfigVia(kubeconfig: string, server: string): Promise<string> {
  const config = JSON.parse(await readFile(kubeconfig, 'utf8'));
  config.clusters[0].cluster.server = server;
  const path = join(dirname(kubeconfig), `kubeconfig-${new URL(server).port}`);
  await writeFile(path, JSON.stringify(config), { mode: 0o600 });
  return path;
}

/** Operator processes running now, whoever started them. */
const running = new Set<OperatorProcess>();

/** kill -9 of every operator process still running (the run was interrupted). */
export async function killOperators(): Promise<void> {
  await Promise.all([...running].map((operator) => operator.kill()));
}

/** Every operator process one fault started, for their logs. */
class Replicas {
  readonly all: OperatorProcess[] = [];
  private readonly env: Readonly<Record<string, string>>;
  constructor(env: Readonly<Record<string, string>>) {
    this.env = env;
  }
  async start(identity: string, kubeconfig: string): Promise<OperatorProcess> {
    const operator = await OperatorProcess.start(identity, kubeconfig, { LOG_LEVEL: 'info', ...this.env });
    this.all.push(operator);
    running.add(operator);
    void operator.exited.then(() => running.delete(operator));
    return operator;
  }
  /** SIGTERM to the running ones (the Lease is released), SIGKILL after 30 s. */
  async stop(): Promise<void> {
    await Promise.all(
      this.all.map(async (operator) => {
        const timer = setTimeout(() => void operator.kill(), 30_000);
        await operator.stop();
        clearTimeout(timer);
      }),
    );
  }
  logs(): { identity: number; line: LogLine }[] {
    return this.all.flatMap((operator, identity) => operator.logs.map((line) => ({ identity, line })));
  }
}

async function leads(operator: OperatorProcess): Promise<boolean> {
  if (!operator.running) throw new Error(`operator ${operator.pid} exited:\n${operator.stderr.slice(-20).join('\n')}`);
  return (await operator.metric('leader_election_master_status').catch(() => 0)) === 1;
}

/** Names and spec numbers for the churn's creates, edits and deletes. */
function specOf(i: number, edited: boolean): { title: string; replicas: number; color: string } {
  return {
    title: `${edited ? 'Edited' : 'Website'} ${i}`,
    replicas: 1 + (edited ? (i >> 1) % 2 : 0),
    color: websiteColor(i),
  };
}

/** Replaces what varies between occurrences (names, numbers, ids) so that alike lines group. */
export function normalize(text: string, prefix: string): string {
  return text
    .replace(new RegExp(`${prefix}-\\d+`, 'g'), `${prefix}-…`)
    .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, '<uid>')
    .replace(/-[0-9a-f]{8,10}-[0-9a-z]{5}\b/g, '-<pod>')
    .replace(/-[0-9a-f]{8,10}\b/g, '-<hash>')
    .replace(/\d+(\.\d+)?/g, 'N');
}

export function group(items: readonly { key: string; example: string; count?: number }[]): Group[] {
  const groups = new Map<string, { key: string; count: number; example: string }>();
  for (const item of items) {
    const existing = groups.get(item.key);
    if (existing) existing.count += item.count ?? 1;
    else groups.set(item.key, { key: item.key, count: item.count ?? 1, example: item.example });
  }
  return [...groups.values()].sort((a, b) => b.count - a.count);
}

const USER_AGENT = 'website-operator/';
const WRITE_VERBS = new Set(['create', 'update', 'patch', 'delete', 'deletecollection']);
const time = (timestamp: string | undefined) => Date.parse(timestamp ?? '');

/**
 * Writes (anything but the Lease) by a replica while another replica held the Lease and had
 * renewed it less than its duration before. A Lease write (create or update, 2xx) by a replica
 * makes the holder in its body the holder from the moment the API server stored it
 * (stageTimestamp) for leaseDurationSeconds; a write counts at the moment the API server received
 * it (requestReceivedTimestamp). A leader's last writes racing its loss are therefore allowed for
 * as long as its own Lease had not expired (client-go's guarantee: renewDeadline < leaseDuration).
 */
export function nonLeaderWrites(
  records: readonly AuditEvent[],
  leaseName = LEASE_NAME,
): { violations: Finding[]; writes: number; holders: string[] } {
  const fromOperator = records.filter((r) => r.stage === 'ResponseComplete' && r.userAgent?.startsWith(USER_AGENT));
  const leases = fromOperator
    .filter(
      (r) =>
        r.objectRef?.resource === 'leases' &&
        r.objectRef.name === leaseName &&
        (r.verb === 'create' || r.verb === 'update') &&
        (r.responseStatus?.code ?? 500) < 300,
    )
    .map((r) => ({
      at: time(r.stageTimestamp),
      holder: r.requestObject?.spec?.holderIdentity ?? '',
      durationMs: (r.requestObject?.spec?.leaseDurationSeconds ?? 0) * 1000,
    }))
    .sort((a, b) => a.at - b.at);
  const writes = fromOperator.filter((r) => WRITE_VERBS.has(r.verb) && r.objectRef?.resource !== 'leases');
  const violations: Finding[] = [];
  for (const write of writes) {
    const identity = write.userAgent!.slice(USER_AGENT.length);
    const at = time(write.requestReceivedTimestamp);
    let lease: (typeof leases)[number] | undefined;
    for (const l of leases) {
      if (l.at > at) break;
      lease = l;
    }
    if (lease?.holder && lease.holder !== identity && at < lease.at + lease.durationMs) {
      const { resource, subresource, name } = write.objectRef ?? {};
      violations.push({
        what: `${write.verb} ${resource}${subresource ? `/${subresource}` : ''} ${name ?? ''} by ${identity}`,
        detail: `received ${write.requestReceivedTimestamp}, answered ${write.responseStatus?.code}; ${lease.holder} held the Lease, stored ${((at - lease.at) / 1000).toFixed(3)} s before for ${lease.durationMs / 1000} s`,
      });
    }
  }
  return { violations, writes: writes.length, holders: [...new Set(leases.map((l) => l.holder).filter(Boolean))] };
}

/** What the cluster holds for the run's Websites, against what each one's final spec asks for. */
export interface Inspection {
  readonly websites: number;
  readonly lostUpdates: Finding[];
  readonly orphans: Finding[];
  readonly duplicates: Finding[];
}

export const converged = (i: Inspection) =>
  i.lostUpdates.length === 0 && i.orphans.length === 0 && i.duplicates.length === 0;

type Child = KubeObject & { spec?: unknown };

/**
 * Every Website of the run against its children and status:
 * - lost update: a Website still being deleted, a child missing, a child that lacks a field of
 *   what renderWorkload renders for the Website's final spec (replicas, the page with its title
 *   and colour, the owner reference, ...), or a status that is not Ready for its generation with
 *   every replica available;
 * - orphan: a Deployment or Service of the operator (its label) whose owner Website is gone;
 * - duplicate: more than one Deployment or Service for one Website, or a child with two owners.
 */
async function inspect(admin: KubeClient, prefix: string): Promise<Inspection> {
  const [websites, deployments, services] = await Promise.all([
    admin.list<WebsiteV1 & KubeObject>(WEBSITES, NAMESPACE, { labelSelector: chaosLabel(prefix) }),
    admin.list<Child>(DEPLOYMENTS, NAMESPACE, { labelSelector: `app.kubernetes.io/managed-by=${MANAGED_BY}` }),
    admin.list<Child>(SERVICES, NAMESPACE, { labelSelector: `app.kubernetes.io/managed-by=${MANAGED_BY}` }),
  ]);
  const ours = (child: Child) =>
    child.metadata?.labels?.['app.kubernetes.io/instance']?.startsWith(`${prefix}-`) ?? false;
  const children = { Deployment: deployments.items.filter(ours), Service: services.items.filter(ours) };
  const uids = new Set(websites.items.map((w) => w.metadata.uid));
  const lostUpdates: Finding[] = [];
  const orphans: Finding[] = [];
  const duplicates: Finding[] = [];
  for (const [kind, items] of Object.entries(children)) {
    const perInstance = new Map<string, string[]>();
    for (const child of items) {
      const instance = child.metadata!.labels!['app.kubernetes.io/instance'];
      perInstance.set(instance, [...(perInstance.get(instance) ?? []), child.metadata!.name!]);
      const owners = (child.metadata?.ownerReferences ?? []).filter((ref) => ref.kind === 'Website');
      if (owners.length > 1)
        duplicates.push({ what: `${kind} ${child.metadata!.name}`, detail: `owned by ${owners.length} Websites` });
      if (!owners.some((ref) => uids.has(ref.uid))) {
        orphans.push({
          what: `${kind} ${child.metadata!.name}`,
          detail: owners.length
            ? `its owner Website ${owners[0].name} (uid ${owners[0].uid}) is gone`
            : 'no owner Website',
        });
      }
    }
    for (const [instance, names] of perInstance)
      if (names.length > 1)
        duplicates.push({ what: `Website ${instance}`, detail: `${names.length} ${kind}s: ${names.join(', ')}` });
  }
  const byName = (items: Child[]) => new Map(items.map((c) => [c.metadata!.name!, c]));
  const deploymentsByName = byName(children.Deployment);
  const servicesByName = byName(children.Service);
  for (const website of websites.items) {
    const name = website.metadata.name;
    const lost = (detail: string) => lostUpdates.push({ what: `Website ${name}`, detail });
    if (website.metadata.deletionTimestamp) {
      lost(
        `deleted at ${website.metadata.deletionTimestamp} and still there (finalizers ${JSON.stringify(website.metadata.finalizers)})`,
      );
      continue;
    }
    const rendered = renderWorkload(website);
    // List items carry no apiVersion and kind (the list does): compare the rest.
    const { apiVersion: _d, kind: _dk, ...renderedDeployment } = renderedKind(rendered, 'Deployment');
    const { apiVersion: _s, kind: _sk, ...renderedService } = renderedKind(rendered, 'Service');
    const deployment = deploymentsByName.get(renderedDeployment.metadata!.name!);
    const service = servicesByName.get(renderedService.metadata!.name!);
    const spec = `spec ${JSON.stringify(website.spec)}, generation ${website.metadata.generation}`;
    if (!deployment) lost(`no Deployment (${spec})`);
    else {
      const difference = firstDifference(renderedDeployment, deployment);
      if (difference) lost(`Deployment differs at ${difference} from what the final ${spec} renders`);
    }
    if (!service) lost(`no Service (${spec})`);
    else {
      const difference = firstDifference(renderedService, service);
      if (difference) lost(`Service differs at ${difference} from what the final ${spec} renders`);
    }
    const status = website.status;
    const ready = status?.conditions?.find((c) => c.type === 'Ready');
    if (
      status?.observedGeneration !== website.metadata.generation ||
      ready?.status !== 'True' ||
      ready.observedGeneration !== website.metadata.generation ||
      status?.availableReplicas !== website.spec.replicas
    ) {
      lost(
        `status ${JSON.stringify({ observedGeneration: status?.observedGeneration, availableReplicas: status?.availableReplicas, ready: ready && { status: ready.status, observedGeneration: ready.observedGeneration, reason: ready.reason } })} for ${spec}`,
      );
    }
  }
  return { websites: websites.items.length, lostUpdates, orphans, duplicates };
}

/** Polls inspect() until the run's Websites have converged; the time taken, or null after `timeoutMs`, and the last inspection. */
async function converge(
  admin: KubeClient,
  prefix: string,
  timeoutMs: number,
  from: number,
): Promise<{ ms: number | null; inspection: Inspection }> {
  // Right after a fault the API server may still refuse reads (503 "storage is (re)initializing"
  // while its watch cache refills after a restart): an inspection that fails is not yet converged.
  let inspection: Inspection | undefined;
  const done = await holdsWithin(
    'convergence',
    async () => {
      inspection = await inspect(admin, prefix).catch(() => inspection);
      return inspection !== undefined && converged(inspection);
    },
    timeoutMs,
    1000,
  );
  // Not one inspection succeeded in all that time: this one's error says why.
  inspection ??= await inspect(admin, prefix);
  return { ms: done ? performance.now() - from : null, inspection };
}

/** The chaos run over one cluster: a standing population of Websites, then each fault in turn. */
export class Chaos {
  private readonly cluster: ChaosCluster;
  private readonly plan: ChaosPlan;
  private readonly log: (message: string) => void;
  private kubeconfig?: string;
  private live: string[] = [];
  private created = 0;
  private edits = 0;

  constructor(cluster: ChaosCluster, plan: ChaosPlan, log: (message: string) => void) {
    this.cluster = cluster;
    this.plan = plan;
    this.log = log;
  }

  private website(name: string, spec: { title: string; replicas: number; color: string }): KubeObject {
    const [key, value] = chaosLabel(this.plan.prefix).split('=');
    return {
      apiVersion: `${DEFAULT_GROUP}/v1`,
      kind: 'Website',
      metadata: { name, namespace: NAMESPACE, labels: { [key]: value } },
      spec,
    };
  }

  private nextName(): string {
    this.created += 1;
    return `${this.plan.prefix}-${String(this.created).padStart(5, '0')}`;
  }

  /** Removes the run's Websites (finalizers dropped: no operator may run) and waits until their children are gone. */
  async clean(): Promise<void> {
    const { admin } = this.cluster;
    const labelSelector = chaosLabel(this.plan.prefix);
    const websites = (await admin.list<KubeObject>(WEBSITES, NAMESPACE, { labelSelector })).items;
    await inPool(websites, 16, async (w) => {
      if (w.metadata?.finalizers?.length)
        await admin
          .patch(WEBSITES, { namespace: NAMESPACE, name: w.metadata.name }, 'merge', { metadata: { finalizers: null } })
          .catch(() => undefined);
    });
    if (websites.length)
      await admin.request('DELETE', WEBSITES, { namespace: NAMESPACE }, { query: { labelSelector } });
    const gone = await holdsWithin(
      'the chaos Websites and their children to be gone',
      async () => {
        // A read the API server refuses for a moment (as in converge()) is not yet gone.
        const inspection = await inspect(admin, this.plan.prefix).catch(() => undefined);
        return inspection !== undefined && inspection.websites === 0 && inspection.orphans.length === 0;
      },
      300_000,
      1000,
    );
    if (!gone)
      throw new Error(`the chaos Websites of ${this.plan.prefix} or their children are still there after 5 minutes`);
    await admin.delete(LEASES, { namespace: NAMESPACE, name: LEASE_NAME }).catch((error) => {
      if (!isNotFound(error)) throw error;
    });
    this.live = [];
  }

  /** Creates the standing population with one operator running, and waits until it has converged. */
  async populate(): Promise<number> {
    const { admin } = this.cluster;
    this.kubeconfig ??= await serviceAccountKubeconfig(this.cluster);
    const replicas = new Replicas(this.plan.operatorEnv);
    const operator = await replicas.start('chaos-a', this.kubeconfig);
    try {
      const names = Array.from({ length: this.plan.n }, () => this.nextName());
      const start = performance.now();
      await inPool(names, 32, async (name) => {
        await admin.create(
          WEBSITES,
          this.website(name, specOf(Number(name.slice(this.plan.prefix.length + 1)), false)),
        );
      });
      this.live = names;
      if (!(await holdsWithin('the operator to lead', () => leads(operator), 60_000)))
        throw new Error('the operator did not lead within 60 s');
      const { ms, inspection } = await converge(admin, this.plan.prefix, this.plan.convergeTimeoutMs, start);
      if (ms === null) throw new Error(`the first ${this.plan.n} Websites did not converge: ${describe(inspection)}`);
      this.log(`${this.plan.n} Websites created and converged in ${(ms / 1000).toFixed(1)} s`);
      return ms;
    } finally {
      await replicas.stop();
    }
  }

  /**
   * Changes at `churnRate` for `churnSeconds`, in the repeating mix edit, create, edit, delete (the
   * population keeps its size); at most 64 in flight. Refused changes (the API server restarting)
   * count as refused: the final spec is read back from the API server, not assumed.
   */
  private async churn(): Promise<FaultResult['churn']> {
    const { admin } = this.cluster;
    const { churnRate, churnSeconds } = this.plan;
    return pacedChanges(churnRate, churnSeconds, (i) => {
      const kind = i % 4;
      if (kind === 1) {
        const name = this.nextName();
        this.live.push(name);
        return admin.create(WEBSITES, this.website(name, specOf(this.created, false)));
      }
      if (kind === 3 && this.live.length)
        return admin.delete(WEBSITES, { namespace: NAMESPACE, name: this.live.shift()! });
      this.edits += 1;
      const name = this.live[(this.edits * 7919) % this.live.length];
      return admin.patch(WEBSITES, { namespace: NAMESPACE, name }, 'merge', { spec: specOf(this.edits, true) });
    });
  }

  /** One fault while the Websites churn, then convergence and what is left. */
  async fault(fault: Scenario): Promise<FaultResult> {
    const { admin, auditLog } = this.cluster;
    const { churnSeconds, prefix } = this.plan;
    this.kubeconfig ??= await serviceAccountKubeconfig(this.cluster);
    const auditFrom = await auditLogSize(auditLog);
    const since = new Date();
    const replicas = new Replicas(this.plan.operatorEnv);
    const injected: string[] = [];
    const note = (message: string) => {
      injected.push(message);
      this.log(`${fault}: ${message}`);
    };
    let proxy: BlackHoleProxy | undefined;
    try {
      let kubeconfig = this.kubeconfig;
      if (fault === 'watch-blackhole') {
        const server = new URL(JSON.parse(await readFile(kubeconfig, 'utf8')).clusters[0].cluster.server);
        proxy = await BlackHoleProxy.start({ host: server.hostname, port: Number(server.port) });
        kubeconfig = await kubeconfigVia(kubeconfig, `https://127.0.0.1:${proxy.port}`);
      }
      let leader = await replicas.start('chaos-a', kubeconfig);
      if (!(await holdsWithin('the operator to lead', () => leads(leader), 60_000)))
        throw new Error('the operator did not lead within 60 s');
      const follower =
        fault === 'leader-failover' || fault === 'paused-leader'
          ? await replicas.start('chaos-b', kubeconfig)
          : undefined;
      const before = await converge(admin, prefix, this.plan.convergeTimeoutMs, performance.now());
      if (before.ms === null)
        throw new Error(`the Websites had not converged before the fault: ${describe(before.inspection)}`);

      const churnStart = performance.now();
      const at = () => `${((performance.now() - churnStart) / 1000).toFixed(1)} s`;
      // A random moment in [from, to) of the churn, as a fraction of it.
      const moment = (from: number, to: number) =>
        sleep(Math.max(0, churnStart + churnSeconds * 1000 * (from + Math.random() * (to - from)) - performance.now()));
      const inject = async () => {
        switch (fault) {
          case 'none':
            note('no fault');
            break;
          case 'operator-kill':
            for (let k = 0; k < this.plan.kills; k++) {
              await moment((0.8 * k) / this.plan.kills, (0.8 * (k + 1)) / this.plan.kills);
              await leader.kill();
              note(`kill -9 at ${at()}`);
              leader = await replicas.start('chaos-a', kubeconfig);
            }
            break;
          case 'apiserver-restart':
          case 'etcd-restart': {
            await moment(0.2, 0.5);
            note(`restart begins at ${at()}`);
            await runScript(
              'cluster',
              [fault === 'apiserver-restart' ? 'restart-apiserver' : 'restart-etcd'],
              this.cluster.env,
            );
            note(`the API server is ready again at ${at()}`);
            break;
          }
          case 'watch-blackhole': {
            await moment(0.1, 0.3);
            note(`${proxy!.blackHole()} open connections black-holed at ${at()}`);
            break;
          }
          case 'leader-failover':
          case 'paused-leader': {
            await moment(0.2, 0.4);
            process.kill(leader.pid, 'SIGSTOP');
            note(`leader chaos-a frozen (SIGSTOP) at ${at()}`);
            const took = await holdsWithin('chaos-b to lead', () => leads(follower!), 120_000);
            note(took ? `chaos-b leads at ${at()}` : 'chaos-b did not lead within 120 s');
            if (fault === 'paused-leader') {
              process.kill(leader.pid, 'SIGCONT');
              note(`chaos-a resumed (SIGCONT) at ${at()}`);
            } else {
              await leader.kill();
              note(`chaos-a killed (kill -9) at ${at()}`);
            }
            break;
          }
        }
      };
      const [churn] = await Promise.all([this.churn(), inject()]);
      const churnStop = churnStart + churn.seconds * 1000;
      this.log(
        `${fault}: churn sent ${churn.sent} changes (${churn.refused} refused) in ${churn.seconds.toFixed(1)} s; waiting for convergence`,
      );
      const { ms, inspection } = await converge(admin, prefix, this.plan.convergeTimeoutMs, churnStop);
      if (fault === 'watch-blackhole') {
        const stalled = await Promise.all(
          replicas.all
            .filter((r) => r.running)
            .map((r) => r.metric('informer_watch_restarts_total', { reason: 'stalled' })),
        );
        const dead = await Promise.all(
          replicas.all.filter((r) => r.running).map((r) => r.metric('rest_client_dead_connections_total')),
        );
        note(
          `connections closed as dead (no PING ack): ${dead.reduce((a, b) => a + b, 0)}; watches restarted as stalled: ${stalled.reduce((a, b) => a + b, 0)}`,
        );
      }
      if (follower) {
        const leading = await Promise.all(
          [leader, follower]
            .filter((r) => r.running)
            .map(async (r) => `${r === leader ? 'chaos-a' : 'chaos-b'} ${(await leads(r)) ? 'leads' : 'follows'}`),
        );
        note(`at the end: ${leading.join(', ')}`);
      }
      this.log(
        `${fault}: ${ms === null ? `NOT converged after ${this.plan.convergeTimeoutMs / 1000} s` : `converged ${(ms / 1000).toFixed(1)} s after the churn stopped`}; ${describe(inspection)}`,
      );
      if (ms === null)
        this.log(
          `${fault}: the operators' and the control plane's logs are in ${await this.keepLogs(fault, replicas)}`,
        );
      // The API server logs a request once it has answered it.
      await sleep(2000);
      const audit = nonLeaderWrites(await auditEvents(auditLog, USER_AGENT, auditFrom));
      return {
        fault,
        injected,
        churn,
        convergeMs: ms,
        websites: inspection.websites,
        orphans: inspection.orphans,
        duplicates: inspection.duplicates,
        lostUpdates: inspection.lostUpdates,
        nonLeaderWrites: audit.violations,
        writesAudited: audit.writes,
        leaseHolders: audit.holders,
        warningEvents: await this.warningEvents(since),
        errorLogLines: this.errorLines(replicas),
      };
    } finally {
      await replicas.stop();
      await proxy?.close();
    }
  }

  /**
   * What explains a fault that did not converge, kept in test-results/chaos/<fault>/: each operator
   * replica's log lines and stderr, and the control plane's component logs (all but the audit log).
   */
  private async keepLogs(fault: Scenario, replicas: Replicas): Promise<string> {
    const dir = join(ROOT, 'test-results', 'chaos', fault);
    await rm(dir, { recursive: true, force: true });
    await mkdir(dir, { recursive: true });
    for (const [i, operator] of replicas.all.entries())
      await writeFile(
        join(dir, `operator-${i}.log`),
        `${[...operator.logs.map((line) => JSON.stringify(line)), ...operator.stderr].join('\n')}\n`,
      );
    const components = dirname(this.cluster.auditLog);
    for (const file of await readdir(components))
      if (file !== 'audit.log') await copyFile(join(components, file), join(dir, file));
    return dir;
  }

  /** Warning events since `since` about the run's objects (Websites, their Deployments, ReplicaSets, Pods, Services). */
  private async warningEvents(since: Date): Promise<Group[]> {
    type Event = KubeObject & {
      type?: string;
      reason?: string;
      message?: string;
      count?: number;
      series?: { count?: number };
      source?: { component?: string };
      reportingComponent?: string;
      involvedObject?: { kind?: string; name?: string };
      lastTimestamp?: string;
      eventTime?: string;
      firstTimestamp?: string;
    };
    const events = (await this.cluster.admin.list<Event>(EVENTS, NAMESPACE, { fieldSelector: 'type=Warning' })).items;
    const { prefix } = this.plan;
    return group(
      events
        .filter(
          (e) =>
            (e.involvedObject?.name ?? '').includes(`${prefix}-`) &&
            time(e.lastTimestamp ?? e.eventTime ?? e.firstTimestamp) >= since.getTime() - 1000,
        )
        .map((e) => {
          const source = e.source?.component || e.reportingComponent || 'unknown';
          return {
            key: `${source}: ${e.involvedObject?.kind} ${e.reason}: ${normalize(e.message ?? '', prefix)}`,
            example: `${e.involvedObject?.kind} ${e.involvedObject?.name}: ${e.reason}: ${e.message}`,
            count: e.count ?? e.series?.count ?? 1,
          };
        }),
    );
  }

  /** The operators' log lines at error level or worse, and anything they wrote to stderr. */
  private errorLines(replicas: Replicas): Group[] {
    const { prefix } = this.plan;
    const lines = replicas.logs().filter(({ line }) => line.level === 'error' || line.level === 'fatal');
    const stderr = replicas.all.flatMap((r) => r.stderr);
    return group([
      ...lines.map(({ line }) => ({
        key: `${line.level}: ${line.msg}: ${normalize(String(line.error ?? ''), prefix)}`,
        example: JSON.stringify(line),
      })),
      ...stderr.map((line) => ({ key: `stderr: ${normalize(line, prefix)}`, example: line })),
    ]);
  }
}

/** The counts of an inspection, and its first findings. */
export function describe(inspection: Inspection): string {
  const first = [...inspection.lostUpdates, ...inspection.orphans, ...inspection.duplicates]
    .slice(0, 3)
    .map((f) => `${f.what}: ${f.detail}`);
  return `${inspection.websites} Websites, ${inspection.lostUpdates.length} not matching their spec, ${inspection.orphans.length} orphans, ${inspection.duplicates.length} duplicates${first.length ? ` (${first.join('; ')})` : ''}`;
}
