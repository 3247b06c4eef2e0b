// kro (kubernetes-sigs/kro) as a same-box peer of the website operator in `npm run bench`: its
// controller binary (scripts/binaries.sh kro) as a local process on the bench cluster, and a
// ResourceGraphDefinition that expresses our Website → Deployment + Service in kro's terms
// (harness/kro/kro.ts, which the unit tests check).
//
//   npm run bench                                kro is a subject by default (bench/run.ts; --no-kro leaves it out)
//   npm run bench:kro-check                      proves it does the job (bench/kro-check.ts)
//
// The RGD is derived from renderWorkload() (the construct our operator renders with), so both
// controllers write the same Deployment and Service; where our operator substitutes a value, the RGD
// has a `${schema.…}` CEL expression. kro's own CRDs and the controller's RBAC come from kro's
// module at the pinned version (its Helm chart), not from copies kept here.
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { kubectlOk, serviceAccountKubeconfig } from '../harness/cluster/kubectl.ts';
import {
  type Condition,
  KRO_LEASE,
  KRO_MODULE,
  KRO_NS,
  KRO_SERVICE_ACCOUNT,
  KRO_VERSION,
  KRO_WEBSITES,
  KRO_WEBSITES_NS,
  kroRbacManifests,
  kroStaticRules,
  kroWebsite,
  kroWebsiteReady,
  RGD_NAME,
  RGD_TYPE,
  websiteRgd,
} from '../harness/kro/kro.ts';
import { sumMetric } from '../harness/process/metrics.ts';
import { eventually } from '../harness/process/poll.ts';
import { workloadName } from '../lib/workload/website-workload.ts';
import { type KubeObject, LEASES } from '../operator/src/controller/kube-api.ts';
import { ensureNamespace, ROOT } from './cluster.ts';
import { ControllerProcess } from './controller-process.ts';
import { type Peer, type PeerContext, serviceAccountUser } from './peer.ts';

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
  const out = await run('go', ['mod', 'download', '-json', `${KRO_MODULE}@${KRO_VERSION}`], { cwd: '/' }).catch(
    (error: Error) => {
      throw new Error(
        `cannot find kro's module ${KRO_MODULE}@${KRO_VERSION} (needs Go and the module proxy, or a warm module cache): ${error.message}`,
      );
    },
  );
  return (JSON.parse(out) as { Dir: string }).Dir;
}

/** kro's CRDs (ResourceGraphDefinition, GraphRevision), as its chart installs them. */
export async function kroCrdFiles(moduleDir: string): Promise<string[]> {
  return ['kro.run_resourcegraphdefinitions.yaml', 'internal.kro.run_graphrevisions.yaml'].map((file) =>
    join(moduleDir, 'helm/crds', file),
  );
}

// ---------------------------------------------------------------------------------------------
// Install, run, observe.

/** Builds kro if needed and applies its CRDs, its RBAC, the namespaces and the RGD; the binary's path. */
export async function installKro({ cluster, log }: PeerContext): Promise<string> {
  const binary = await kroBinary(log);
  const dir = await kroModuleDir();
  for (const crd of await kroCrdFiles(dir)) {
    await kubectlOk(cluster, ['apply', '--server-side', '--force-conflicts', '-f', crd]);
    await kubectlOk(cluster, ['wait', '--for=condition=Established', '--timeout=60s', '-f', crd]);
  }
  const rules = kroStaticRules(await readFile(join(dir, 'helm/templates/cluster-role.yaml'), 'utf8'));
  await kubectlOk(cluster, ['apply', '--server-side', '--force-conflicts', '-f', '-'], {
    input: kroRbacManifests(rules)
      .map((m) => JSON.stringify(m))
      .join('\n'),
  });
  await ensureNamespace(cluster, KRO_WEBSITES_NS);
  // Server-side apply with force: a changed RGD replaces the previous one's fields.
  await cluster.admin.apply(RGD_TYPE, websiteRgd(), 'website-stack-bench');
  return binary;
}

/** kro has processed the RGD's current generation and serves its API. */
function rgdActive(rgd: KubeObject | undefined): boolean {
  const status = (rgd?.status ?? {}) as { state?: string; conditions?: Condition[] };
  const ready = status.conditions?.find((c) => c.type === 'Ready');
  return (
    status.state === 'Active' &&
    ready?.status === 'True' &&
    (ready.observedGeneration === undefined || ready.observedGeneration === rgd!.metadata?.generation)
  );
}

/** The RGD's state and conditions, for a message. */
function rgdStatus(rgd: KubeObject | undefined): string {
  if (!rgd) return 'absent';
  const status = (rgd.status ?? {}) as {
    state?: string;
    conditions?: Array<Condition & { reason?: string; message?: string }>;
  };
  const failing = (status.conditions ?? [])
    .filter((c) => c.status !== 'True')
    .map((c) => `${c.type}: ${c.reason ?? ''} ${c.message ?? ''}`.trim());
  return `state ${status.state ?? 'unset'}${failing.length ? `; ${failing.join('; ')}` : ''}`;
}

/** Starts kro with `kubeconfig` and `settings`, as its Helm chart runs it (leader election on, info-level console logs, no development mode). */
export function startKro(binary: string, kubeconfig: string, settings: KroSettings = {}): Promise<ControllerProcess> {
  return ControllerProcess.start('kro', binary, ({ metricsPort, healthPort }) => [
    `--kubeconfig=${kubeconfig}`,
    `--metrics-bind-address=127.0.0.1:${metricsPort}`,
    `--health-probe-bind-address=127.0.0.1:${healthPort}`,
    '--leader-elect',
    `--leader-election-namespace=${KRO_NS}`,
    '--zap-log-level=info',
    '--zap-encoder=console',
    '--zap-devel=false',
    ...(settings.workers ? [`--dynamic-controller-concurrent-reconciles=${settings.workers}`] : []),
  ]);
}

/** Resolves once kro's dynamic controller serves an RGD's API (its informer synced): from then on it reconciles instances. */
function serving(kro: ControllerProcess, timeoutMs = 60_000): Promise<void> {
  return kro.until(
    'kro to serve websites.kro.run',
    (text) => sumMetric(text, 'dynamic_controller_gvr_count') >= 1,
    timeoutMs,
  );
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
  const start = async ({ cluster, log }: PeerContext): Promise<ControllerProcess> => {
    binary ??= await kroBinary(log);
    // A Lease left by a killed run would make kro wait for it to expire.
    await cluster.admin.delete(LEASES, { namespace: KRO_NS, name: KRO_LEASE }).catch(() => undefined);
    kubeconfig ??= await serviceAccountKubeconfig(cluster, KRO_SERVICE_ACCOUNT, KRO_NS);
    const kro = await startKro(binary, kubeconfig, settings);
    try {
      await kro.leading(KRO_LEASE);
      const rgd = () => cluster.admin.get<KubeObject>(RGD_TYPE, { name: RGD_NAME });
      await eventually(`the ResourceGraphDefinition "${RGD_NAME}" to be Active`, async () => rgdActive(await rgd()), {
        timeoutMs: 120_000,
        stopOnError: true,
      }).catch(async (error: Error) => {
        throw new Error(`${error.message} (${rgdStatus(await rgd())}); kro's log:\n${kro.log.slice(-20).join('\n')}`);
      });
      await serving(kro);
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
