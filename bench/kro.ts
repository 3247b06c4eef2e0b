// kro (kubernetes-sigs/kro) as a same-box peer of the website operator in `npm run bench`: its
// controller binary (scripts/binaries.sh kro) as a local process on the bench cluster, and a
// ResourceGraphDefinition that expresses our Website → Deployment + Service in kro's terms.
//
//   npm run bench                                kro is a subject by default (bench/run.ts; --no-kro leaves it out)
//   npm run bench:kro-check                      proves it does the job (bench/kro-check.ts)
//
// The RGD is derived from renderWorkload() (the construct our operator renders with), so both
// controllers write the same Deployment and Service; where our operator substitutes a value, the RGD
// has a `${schema.…}` CEL expression. kro's own CRDs and the controller's RBAC come from kro's
// module at the pinned version (its Helm chart), not from copies kept here.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { parse } from 'yaml';
import { LEASES, type KubeObject, type ResourceType } from '../operator/src/controller/kube-client.ts';
import { renderWorkload } from '../operator/src/reconciler/render.ts';
import { escapeHtml, linearChannel, pageHtml, textColorOn } from '../lib/workload/page.ts';
import { COLOR_PATTERN, DEFAULT_COLOR, DEFAULT_REPLICA_BOUNDS, MAX_TITLE_LENGTH } from '../lib/website/schema.ts';
import { workloadName } from '../lib/workload/website-workload.ts';
import { freePort } from '../test/support/ports.ts';
import { kubectlOk, serviceAccountKubeconfig } from '../test/support/kubectl.ts';
import { sumMetric } from '../test/support/metrics.ts';
import { ROOT, ensureNamespace, waitFor } from './cluster.ts';
import { type Peer, type PeerContext, type PeerProcess, type WebsiteSpec, serviceAccountUser } from './peer.ts';

/** The kro release under test: scripts/binaries.sh's KRO_VERSION, the one place it is pinned. */
export const KRO_VERSION = (() => {
  const match = /^KRO_VERSION=(\S+)$/m.exec(readFileSync(join(ROOT, 'scripts/binaries.sh'), 'utf8'));
  if (!match) throw new Error('KRO_VERSION is not set in scripts/binaries.sh');
  return match[1];
})();
const KRO_MODULE = 'github.com/kubernetes-sigs/kro';

/** Where kro's controller runs from: its ServiceAccount, its leader-election Lease. */
export const KRO_NS = 'kro-system';
export const KRO_SERVICE_ACCOUNT = 'kro';
/** Where the benchmark creates kro Websites (kept apart from the website operator's). */
export const KRO_WEBSITES_NS = 'kro-websites';
/** kro's LeaderElectionID (cmd/controller/main.go). */
const KRO_LEASE = 'controller.kro.run';

/** The ResourceGraphDefinition's name and the API it defines: websites.kro.run, kro's default group. */
export const RGD_NAME = 'website';
const RGD_TYPE: ResourceType = { group: 'kro.run', version: 'v1alpha1', resource: 'resourcegraphdefinitions' };
export const KRO_WEBSITES: ResourceType = { group: 'kro.run', version: 'v1alpha1', resource: 'websites' };

/** How kro runs. Its Helm chart's defaults unless said otherwise. */
export interface KroSettings {
  /**
   * `--dynamic-controller-concurrent-reconciles`: workers reconciling instances.
   * @default 1 (kro's default and its chart's)
   */
  readonly workers?: number;
}

// ---------------------------------------------------------------------------------------------
// kro's module: binary, CRDs, RBAC.

function run(command: string, args: readonly string[], options: { cwd?: string } = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile(command, args, { cwd: options.cwd, maxBuffer: 64 << 20 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${command} ${args.join(' ')} failed: ${stderr.trim() || error.message}`));
      else resolve(stdout);
    });
    child.stdin?.end();
  });
}

/** The kro binary, built once by scripts/binaries.sh (about 4.5 minutes cold) and cached by version. */
export async function kroBinary(log: (message: string) => void = () => undefined): Promise<string> {
  log(`kro ${KRO_VERSION}: scripts/binaries.sh kro (a cold build takes minutes)`);
  const out = await run('bash', [join(ROOT, 'scripts/binaries.sh'), 'kro']);
  const path = /^kro=(.+)$/m.exec(out)?.[1];
  if (!path) throw new Error(`scripts/binaries.sh kro printed no kro=<path> line:\n${out}`);
  return path;
}

/**
 * kro's source at KRO_VERSION, from Go's module cache (`go mod download` fetches it through the
 * module proxy if the cache lacks it; the binary's build put it there). Its Helm chart holds the
 * CRDs and the ClusterRole the controller needs.
 */
export async function kroModuleDir(): Promise<string> {
  // From /, so that a go.mod or go.work around the caller's directory plays no part.
  const out = await run('go', ['mod', 'download', '-json', `${KRO_MODULE}@${KRO_VERSION}`], { cwd: '/' }).catch((error: Error) => {
    throw new Error(`cannot find kro's module ${KRO_MODULE}@${KRO_VERSION} (needs Go and the module proxy, or a warm module cache): ${error.message}`);
  });
  return (JSON.parse(out) as { Dir: string }).Dir;
}

/** kro's CRDs (ResourceGraphDefinition, GraphRevision), as its chart installs them. */
export async function kroCrdFiles(moduleDir: string): Promise<string[]> {
  return ['kro.run_resourcegraphdefinitions.yaml', 'internal.kro.run_graphrevisions.yaml'].map((file) => join(moduleDir, 'helm/crds', file));
}

/**
 * The rules of kro's least-privilege ClusterRole (`<release>:controller:static`, the chart's
 * `rbac.mode: aggregation`): RGDs, GraphRevisions, CRDs, ConfigMaps, Leases, Events. Read from the
 * chart's template, whose only template actions in that document are the name and labels.
 */
export function kroStaticRules(clusterRoleTemplate: string): Array<Record<string, unknown>> {
  const branch = clusterRoleTemplate.split(/\{\{ else if eq \.Values\.rbac\.mode "aggregation" -\}\}/)[1]?.split(/\{\{-? end \}\}/)[0];
  const document = branch
    ?.split(/^---$/m)
    .map((text) => parse(text.split('\n').filter((line) => !line.includes('{{')).join('\n')) as { kind?: string; rules?: Array<Record<string, unknown>> } | null)
    .find((doc) => doc?.kind === 'ClusterRole' && doc.rules);
  if (!document?.rules) throw new Error("kro's helm/templates/cluster-role.yaml has no aggregation-mode ClusterRole with rules: has the chart changed? Update kroStaticRules for this kro version");
  return document.rules;
}

const ALL_VERBS = ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'];

/**
 * kro's identity on the bench cluster: ServiceAccount kro-system/kro, bound to kro's own static
 * ClusterRole and to one more that grants exactly what this RGD needs (the chart's aggregation
 * mode asks users for that second role; its default, `unrestricted`, grants `*` on everything).
 * Cluster-wide: kro watches instances and children in every namespace.
 */
export function kroRbacManifests(staticRules: Array<Record<string, unknown>>): Array<Record<string, unknown>> {
  const subjects = [{ kind: 'ServiceAccount', name: KRO_SERVICE_ACCOUNT, namespace: KRO_NS }];
  const roles = {
    'kro:controller:static': staticRules,
    'kro:controller:website': [
      { apiGroups: ['kro.run'], resources: ['websites'], verbs: ALL_VERBS },
      { apiGroups: ['kro.run'], resources: ['websites/status'], verbs: ['get', 'patch', 'update'] },
      { apiGroups: ['apps'], resources: ['deployments'], verbs: ALL_VERBS },
      { apiGroups: [''], resources: ['services'], verbs: ALL_VERBS },
    ],
  };
  return [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: KRO_NS } },
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: KRO_SERVICE_ACCOUNT, namespace: KRO_NS } },
    ...Object.entries(roles).flatMap(([name, rules]) => [
      { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name }, rules },
      { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name }, subjects },
    ]),
  ];
}

// ---------------------------------------------------------------------------------------------
// The ResourceGraphDefinition.

/** A CEL double literal (CEL has no implicit int → double: 0 must be written 0.0). */
function celDouble(value: number): string {
  const text = String(value);
  return /[.e]/.test(text) ? text : `${text}.0`;
}

/** A CEL string literal in double quotes (the only quotes kro's `${…}` scanner understands). */
function celString(text: string): string {
  return JSON.stringify(text);
}

/** `schema.spec.title`, HTML-escaped exactly as escapeHtml does it ('&' first, so nothing is escaped twice). */
export function celEscapedTitle(): string {
  return [...'&<>"\''].reduce((expr, c) => `${expr}.replace(${celString(c)}, ${celString(escapeHtml(c))})`, 'schema.spec.title');
}

/**
 * The page's text colour from `schema.spec.color`, as textColorOn computes it: WCAG relative
 * luminance from the same 256 precomputed linear channel values (CEL has no pow), in the same
 * order of operations, so every colour gets the same black or white, bit for bit.
 */
export function celTextColor(): string {
  const linear = `[${Array.from({ length: 256 }, (_, i) => celDouble(linearChannel(i))).join(', ')}]`;
  const digit = (at: number) => `"0123456789abcdef".indexOf(h.charAt(${at}))`;
  const channel = (i: number) => `lin[${digit(2 * i)} * 16 + ${digit(2 * i + 1)}]`;
  return (
    'cel.bind(c, schema.spec.color.lowerAscii(), ' +
    'cel.bind(h, size(c) == 4 ? c.charAt(1) + c.charAt(1) + c.charAt(2) + c.charAt(2) + c.charAt(3) + c.charAt(3) : c.substring(1), ' +
    `cel.bind(lin, ${linear}, ` +
    `cel.bind(l, 0.2126 * ${channel(0)} + 0.7152 * ${channel(1)} + 0.0722 * ${channel(2)}, ` +
    // Contrast against white is (1.05)/(L+0.05), against black (L+0.05)/0.05: pick the larger.
    '1.05 / (l + 0.05) >= (l + 0.05) / 0.05 ? "#ffffff" : "#000000"))))'
  );
}

/** Values no real Website has, rendered through renderWorkload and then replaced by expressions. */
const PLACEHOLDER = { name: 'kro-placeholder-name', namespace: 'kro-placeholder-ns', title: 'kro-placeholder-title', replicas: 3, color: DEFAULT_COLOR };

/** Replaces every occurrence of `from` in the strings of `value`, recursively. */
function replaceStrings(value: unknown, from: string, to: string): unknown {
  if (typeof value === 'string') return value.split(from).join(to);
  if (Array.isArray(value)) return value.map((v) => replaceStrings(v, from, to));
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, replaceStrings(v, from, to)]));
  return value;
}

/**
 * The Deployment and Service templates: renderWorkload()'s output for placeholder values, with
 * kro's expressions where our operator substitutes the Website's. Two differences, both kro's way:
 * no ownerReferences (kro tracks children by ApplySet labels and deletes them itself, in reverse
 * dependency order, before it drops the instance's finalizer), and `app.kubernetes.io/managed-by:
 * kro` (kro sets that label on children anyway).
 */
export function kroTemplates(): { deployment: KubeObject; service: KubeObject } {
  const p = PLACEHOLDER;
  const rendered = renderWorkload({
    apiVersion: 'web.example.com/v1',
    kind: 'Website',
    metadata: { name: p.name, namespace: p.namespace, uid: 'kro-placeholder-uid', generation: 1 },
    spec: { title: p.title, replicas: p.replicas, color: p.color },
  });
  const html = pageHtml({ text: p.title, background: p.color, foreground: textColorOn(p.color) });
  const kroHtml = pageHtml({ text: `\${${celEscapedTitle()}}`, background: '${schema.spec.color}', foreground: `\${${celTextColor()}}` });
  const convert = (object: KubeObject): KubeObject => {
    const { ownerReferences: _owners, ...metadata } = object.metadata!;
    let out: unknown = { ...object, metadata };
    out = replaceStrings(out, html, kroHtml);
    out = replaceStrings(out, p.namespace, '${schema.metadata.namespace}');
    out = replaceStrings(out, p.name, '${schema.metadata.name}');
    out = replaceStrings(out, 'website-operator', 'kro');
    return out as KubeObject;
  };
  const deployment = convert(rendered.deployment);
  const spec = deployment.spec as { replicas: unknown };
  if (spec.replicas !== p.replicas) throw new Error(`renderWorkload's Deployment has no spec.replicas ${p.replicas}: update kroTemplates for its new shape`);
  spec.replicas = '${schema.spec.replicas}';
  const service = convert(rendered.service);
  const leftover = JSON.stringify({ deployment, service }).match(/kro-placeholder-\w+/);
  if (leftover) throw new Error(`renderWorkload's output still holds ${leftover[0]} after conversion: update kroTemplates for its new shape`);
  return { deployment, service };
}

/**
 * The ResourceGraphDefinition `website`: kind Website in kro.run/v1alpha1 (websites.kro.run, apart
 * from our websites.web.example.com), spec.title / replicas (1–5) / color (default #2196F3) with our
 * CRD's bounds, expanding to Deployment and Service `website-<name>`. The Deployment is ready as
 * bench/cluster.ts's deploymentAvailable and our Ready condition have it: current template rolled out
 * and spec.replicas pods available; kro's Ready condition waits for it. Status: availableReplicas
 * and url, as ours.
 */
export function websiteRgd(): KubeObject {
  const { deployment, service } = kroTemplates();
  const { minimum, maximum } = DEFAULT_REPLICA_BOUNDS;
  return {
    apiVersion: 'kro.run/v1alpha1',
    kind: 'ResourceGraphDefinition',
    metadata: { name: RGD_NAME },
    spec: {
      schema: {
        apiVersion: KRO_WEBSITES.version,
        kind: 'Website',
        spec: {
          title: `string | required=true minLength=1 maxLength=${MAX_TITLE_LENGTH} description="Title shown on the website, as plain text: it is HTML-escaped before it reaches the page."`,
          replicas: `integer | required=true minimum=${minimum} maximum=${maximum} description="Number of pods serving the website, from ${minimum} to ${maximum}."`,
          color: `string | default="${DEFAULT_COLOR}" pattern="${COLOR_PATTERN}" description="Theme (background) colour of the page, a CSS hex colour: #RGB or #RRGGBB."`,
        },
        status: {
          availableReplicas: '${deployment.status.?availableReplicas.orValue(0)}',
          url: 'http://${service.metadata.name}.${service.metadata.namespace}.svc.cluster.local',
        },
      },
      resources: [
        {
          id: 'deployment',
          template: deployment,
          readyWhen: [
            '${deployment.status.?observedGeneration.orValue(0) >= deployment.metadata.generation}',
            '${deployment.status.?updatedReplicas.orValue(0) >= deployment.spec.replicas}',
            '${deployment.status.?availableReplicas.orValue(0) >= deployment.spec.replicas}',
          ],
        },
        { id: 'service', template: service },
      ],
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Install, run, observe.

/** A kro Website as the benchmark creates it. */
export function kroWebsite(name: string, spec: WebsiteSpec, namespace = KRO_WEBSITES_NS): KubeObject {
  return { apiVersion: `${KRO_WEBSITES.group}/${KRO_WEBSITES.version}`, kind: 'Website', metadata: { name, namespace }, spec: { title: spec.title, replicas: spec.replicas, color: spec.color } };
}

interface Condition {
  type: string;
  status: string;
  observedGeneration?: number;
}

/** kro's Ready condition is True for the instance's current generation (its children ready, status written). */
export function kroWebsiteReady(website: KubeObject): boolean {
  const conditions = ((website.status as { conditions?: Condition[] } | undefined)?.conditions ?? []);
  return conditions.some((c) => c.type === 'Ready' && c.status === 'True' && c.observedGeneration === website.metadata?.generation);
}

/** Builds kro if needed and applies its CRDs, its RBAC, the namespaces and the RGD; the binary's path. */
export async function installKro({ cluster, log }: PeerContext): Promise<string> {
  const binary = await kroBinary(log);
  const dir = await kroModuleDir();
  for (const crd of await kroCrdFiles(dir)) {
    await kubectlOk(cluster, ['apply', '--server-side', '--force-conflicts', '-f', crd]);
    await kubectlOk(cluster, ['wait', '--for=condition=Established', '--timeout=60s', '-f', crd]);
  }
  const rules = kroStaticRules(await readFile(join(dir, 'helm/templates/cluster-role.yaml'), 'utf8'));
  await kubectlOk(cluster, ['apply', '--server-side', '--force-conflicts', '-f', '-'], { input: kroRbacManifests(rules).map((m) => JSON.stringify(m)).join('\n') });
  await ensureNamespace(cluster, KRO_WEBSITES_NS);
  // Server-side apply with force: a changed RGD replaces the previous one's fields.
  await cluster.admin.apply(RGD_TYPE, websiteRgd(), 'website-stack-bench');
  return binary;
}

/** kro has processed the RGD's current generation and serves its API. */
function rgdActive(rgd: KubeObject | undefined): boolean {
  const status = (rgd?.status ?? {}) as { state?: string; conditions?: Condition[] };
  const ready = status.conditions?.find((c) => c.type === 'Ready');
  return status.state === 'Active' && ready?.status === 'True' && (ready.observedGeneration === undefined || ready.observedGeneration === rgd!.metadata?.generation);
}

/** The RGD's state and conditions, for a message. */
function rgdStatus(rgd: KubeObject | undefined): string {
  if (!rgd) return 'absent';
  const status = (rgd.status ?? {}) as { state?: string; conditions?: Array<Condition & { reason?: string; message?: string }> };
  const failing = (status.conditions ?? []).filter((c) => c.status !== 'True').map((c) => `${c.type}: ${c.reason ?? ''} ${c.message ?? ''}`.trim());
  return `state ${status.state ?? 'unset'}${failing.length ? `; ${failing.join('; ')}` : ''}`;
}

/** A running kro controller. */
export class KroProcess implements PeerProcess {
  /** The last lines of its log (stderr), for error messages. */
  readonly log: string[] = [];
  readonly exited: Promise<number | null>;
  readonly metricsPort: number;
  readonly healthPort: number;
  private readonly child: ChildProcess;

  private constructor(child: ChildProcess, metricsPort: number, healthPort: number) {
    this.child = child;
    this.metricsPort = metricsPort;
    this.healthPort = healthPort;
    this.exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve(signal ? null : code)));
    const keep = (line: string) => {
      this.log.push(line);
      if (this.log.length > 200) this.log.shift();
    };
    createInterface(child.stdout!).on('line', keep);
    createInterface(child.stderr!).on('line', keep);
  }

  /**
   * Starts kro with `kubeconfig` and `settings`, as its Helm chart runs it (leader election on,
   * info-level console logs, no development mode), metrics and probes on free local ports.
   */
  static async start(binary: string, kubeconfig: string, settings: KroSettings = {}): Promise<KroProcess> {
    const [metricsPort, healthPort] = [await freePort(), await freePort()];
    const args = [
      `--kubeconfig=${kubeconfig}`,
      `--metrics-bind-address=127.0.0.1:${metricsPort}`,
      `--health-probe-bind-address=127.0.0.1:${healthPort}`,
      '--leader-elect',
      `--leader-election-namespace=${KRO_NS}`,
      '--zap-log-level=info',
      '--zap-encoder=console',
      '--zap-devel=false',
      ...(settings.workers ? [`--dynamic-controller-concurrent-reconciles=${settings.workers}`] : []),
    ];
    // Nothing of this process's environment but PATH: KUBECONFIG and the like must not leak in.
    const child = spawn(binary, args, { env: { PATH: process.env.PATH }, stdio: ['ignore', 'pipe', 'pipe'] });
    return new KroProcess(child, metricsPort, healthPort);
  }

  get pid(): number {
    return this.child.pid!;
  }

  get metricsUrl(): string {
    return `http://127.0.0.1:${this.metricsPort}/metrics`;
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  async metrics(): Promise<string> {
    return (await fetch(this.metricsUrl)).text();
  }

  private async until(what: string, done: (metrics: string) => boolean, timeoutMs: number): Promise<void> {
    await waitFor(
      what,
      async () => {
        if (!this.running) throw new Error(`kro exited (${this.child.exitCode ?? this.child.signalCode}):\n${this.log.slice(-30).join('\n')}`);
        return done(await this.metrics().catch(() => ''));
      },
      timeoutMs,
      () => `last log lines:\n${this.log.slice(-10).join('\n')}`,
      250,
    );
  }

  /** Resolves once kro holds its Lease (it reconciles nothing before). */
  leading(timeoutMs = 60_000): Promise<void> {
    return this.until('kro to lead', (text) => sumMetric(text, 'leader_election_master_status', { name: KRO_LEASE }) === 1, timeoutMs);
  }

  /** Resolves once the dynamic controller serves an RGD's API (its informer synced): from then on it reconciles instances. */
  serving(timeoutMs = 60_000): Promise<void> {
    return this.until('kro to serve websites.kro.run', (text) => sumMetric(text, 'dynamic_controller_gvr_count') >= 1, timeoutMs);
  }

  /** SIGTERM, then SIGKILL if it has not exited after `graceMs` (kro itself allows 60 s for a graceful shutdown). */
  async stop(graceMs = 30_000): Promise<void> {
    if (this.running) this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.running && this.child.kill('SIGKILL'), graceMs);
    await this.exited;
    clearTimeout(timer);
  }
}

/**
 * kro as a bench/peer.ts Peer. Its client-side rate limit: none. `--client-qps 100` and
 * `--client-burst 150` (its defaults, left as they are) only apply when the rest.Config has QPS 0,
 * but controller-runtime ≥ 0.21's GetConfig (kro v0.9.4 has 0.24) returns QPS -1, which turns
 * client-go's limiter off; the API server's priority and fairness is the only limit.
 */
export function kroPeer(settings: KroSettings = {}): Peer {
  let kubeconfig: string | undefined;
  let binary: string | undefined;
  const workers = settings.workers ?? 1;
  const start = async ({ cluster, log }: PeerContext): Promise<KroProcess> => {
    binary ??= await kroBinary(log);
    // A Lease left by a killed run would make kro wait for it to expire.
    await cluster.admin.delete(LEASES, { namespace: KRO_NS, name: KRO_LEASE }).catch(() => undefined);
    kubeconfig ??= await serviceAccountKubeconfig(cluster, KRO_SERVICE_ACCOUNT, KRO_NS);
    const kro = await KroProcess.start(binary, kubeconfig, settings);
    try {
      await kro.leading();
      const rgd = () => cluster.admin.get<KubeObject>(RGD_TYPE, { name: RGD_NAME });
      await waitFor(`the ResourceGraphDefinition "${RGD_NAME}" to be Active`, async () => rgdActive(await rgd()), 120_000, undefined, 250).catch(async (error: Error) => {
        throw new Error(`${error.message} (${rgdStatus(await rgd())}); kro's log:\n${kro.log.slice(-20).join('\n')}`);
      });
      await kro.serving();
    } catch (error) {
      await kro.stop(0);
      throw error;
    }
    return kro;
  };
  return {
    title: `kro ${KRO_VERSION}${settings.workers ? ` (${workers} worker${workers === 1 ? '' : 's'})` : ''}`,
    description:
      `kro ${KRO_VERSION}: kubernetes-sigs/kro's cmd/controller built by scripts/binaries.sh, run as ServiceAccount ${KRO_NS}/${KRO_SERVICE_ACCOUNT} ` +
      `(kro's static ClusterRole plus websites.kro.run, Deployments and Services), leader election on, ${workers} instance worker${workers === 1 ? '' : 's'}` +
      `${settings.workers ? '' : ' (its default)'}, client QPS/burst flags at their defaults 100/150 (in effect no client-side limit); ` +
      `the ResourceGraphDefinition "${RGD_NAME}" expands a Website to the same Deployment and Service as renderWorkload()`,
    websites: KRO_WEBSITES,
    namespace: KRO_WEBSITES_NS,
    user: serviceAccountUser(KRO_NS, KRO_SERVICE_ACCOUNT),
    // The dynamic controller's queue: every instance of every RGD, keyed by GVR and name.
    queueWait: { metric: 'workqueue_queue_duration_seconds', labels: { name: 'dynamic-controller-queue' } },
    async install(context) {
      binary = await installKro(context);
      // kro itself creates websites.kro.run from the RGD: run it once, so the API exists (and the
      // benchmark can list and empty it) before the first measured start.
      const kro = await start(context);
      await kro.stop();
    },
    start,
    website: (name, spec) => kroWebsite(name, spec),
    edit: (spec) => ({ spec: { title: spec.title, replicas: spec.replicas, color: spec.color } }),
    deploymentName: workloadName,
    ready: kroWebsiteReady,
  };
}

/** kro at its defaults, also for `npm run bench -- --peer ./bench/kro.ts` (the module's default export). */
export default kroPeer();
