// The real operator as a child process, authenticated as the operator's ServiceAccount under exactly
// the Role dist/ ships: the bundle the image runs (operator/build/operator.mjs, built from the sources
// first by scripts/build-operator.ts), so the tests and the benchmark exercise what ships. Shared by
// the cluster tests (test/cluster/operator-process.ts binds it to the test cluster) and the benchmark
// (bench/).
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type AddressInfo, createServer } from 'node:net';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { buildOperator } from './build-operator.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

export const OPERATOR_NS = 'website-system';

/** The operator's Namespace, ServiceAccount, Roles and bindings exactly as dist/website-operator/website-operator.yaml ships them (not its Deployment). */
export function operatorRbacManifests(): Array<Record<string, any>> {
  const kinds = ['Namespace', 'ServiceAccount', 'Role', 'RoleBinding', 'ClusterRole', 'ClusterRoleBinding'];
  return parseAllDocuments(readFileSync(join(ROOT, 'dist/website-operator/website-operator.yaml'), 'utf8'))
    .map((document) => document.toJS())
    .filter((manifest) => kinds.includes(manifest?.kind));
}

/** The webhook Service exactly as dist/website-operator/website-operator.yaml ships it: the CRD's conversion webhook calls it. */
export function webhookServiceManifest(): Record<string, any> {
  return parseAllDocuments(readFileSync(join(ROOT, 'dist/website-operator/website-operator.yaml'), 'utf8'))
    .map((document) => document.toJS())
    .find((manifest) => manifest?.kind === 'Service');
}

/**
 * What an operator outside the cluster needs besides dist/'s Role: making itself an endpoint of its
 * webhook Service (operator/src/webhook/local-service-endpoint.ts), given WEBHOOK_ADVERTISE_ADDRESS.
 * A user's own kubeconfig has this; the tests run the operator as its ServiceAccount, so they grant
 * it with this Role (nothing in dist/ does: in a pod the Service selects the pod).
 */
export function localEndpointRbacManifests(namespace = OPERATOR_NS): Array<Record<string, any>> {
  const name = 'website-operator-local-endpoint';
  return [
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name, namespace },
      rules: [
        { apiGroups: [''], resources: ['services'], verbs: ['get'] },
        { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['list', 'create', 'patch', 'delete'] },
      ],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name, namespace },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
      subjects: [{ kind: 'ServiceAccount', name: 'website-operator', namespace }],
    },
  ];
}

/** Where a cluster is and how to reach it as an administrator. */
export interface ClusterAccess {
  /** kubeconfig of a cluster administrator (creates tokens). */
  readonly kubeconfig: string;
  /** kubectl binary. */
  readonly kubectl: string;
}

/** kubectl against `cluster`; fails with kubectl's own message. */
export function kubectlOk(cluster: ClusterAccess, args: readonly string[], input?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile(cluster.kubectl, ['--kubeconfig', cluster.kubeconfig, ...args], { maxBuffer: 256 << 20 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`kubectl ${args.join(' ')} failed (${typeof error.code === 'number' ? error.code : 1}): ${stderr.trim()}`));
      else resolve(stdout);
    });
    child.stdin!.end(input ?? '');
  });
}

/** A TCP port nothing listens on right now. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** The cluster's address and CA file, from the administrator's kubeconfig. */
export async function clusterEndpoint(cluster: ClusterAccess): Promise<{ server: string; ca: string }> {
  const config = JSON.parse(await kubectlOk(cluster, ['config', 'view', '--raw', '--minify', '-o', 'json']));
  const c = config.clusters[0].cluster;
  let ca: string = c['certificate-authority'];
  if (!ca) {
    ca = join(await mkdtemp(join(tmpdir(), 'ca-')), 'ca.crt');
    await writeFile(ca, Buffer.from(c['certificate-authority-data'], 'base64'));
  }
  return { server: c.server, ca };
}

/**
 * A kubeconfig holding only the cluster's address and CA and a ServiceAccount token (only those:
 * with a client certificate present the API server would authenticate the certificate instead).
 */
export async function serviceAccountKubeconfig(cluster: ClusterAccess, serviceAccount = 'website-operator', namespace = OPERATOR_NS): Promise<string> {
  const { server, ca } = await clusterEndpoint(cluster);
  const token = (await kubectlOk(cluster, ['create', 'token', serviceAccount, '-n', namespace, '--duration=2h'])).trim();
  const path = join(await mkdtemp(join(tmpdir(), 'operator-')), 'kubeconfig');
  const config = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'cluster', cluster: { server, 'certificate-authority': ca } }],
    users: [{ name: serviceAccount, user: { token } }],
    contexts: [{ name: 'cluster', context: { cluster: 'cluster', user: serviceAccount, namespace } }],
    'current-context': 'cluster',
  };
  await writeFile(path, JSON.stringify(config), { mode: 0o600 });
  return path;
}

/** Sum of the samples of metric `name` whose labels include `labels`, in Prometheus text format. */
export function sumMetric(text: string, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const sample = Object.fromEntries([...(match[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
    if (Object.entries(labels).every(([k, v]) => sample[k] === v)) sum += Number(match[3]);
  }
  return sum;
}

/** Verbs that change something, as `rest_client_requests_total` labels them. */
export const WRITE_VERBS = ['CREATE', 'APPLY', 'PATCH', 'UPDATE', 'DELETE'] as const;
/** What reconciling writes: the Websites (finalizer, status) and their children. */
export const RECONCILED_RESOURCES = ['websites', 'deployments', 'services'] as const;

/** API writes other than the Lease's and events, in a /metrics text: what reconciling changed. */
export function reconcileWrites(metricsText: string): number {
  let total = 0;
  for (const verb of WRITE_VERBS) {
    for (const resource of RECONCILED_RESOURCES) total += sumMetric(metricsText, 'rest_client_requests_total', { verb, resource });
  }
  return total;
}

export interface LogLine {
  level: string;
  msg: string;
  [key: string]: unknown;
}

async function waitUntil(what: string, done: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

let built: Promise<string> | undefined;

/**
 * The operator bundle built from the working tree, once per process (an unchanged tree rewrites
 * nothing, so test files building in parallel do not disturb an operator already running).
 */
export function operatorBundle(): Promise<string> {
  built ??= buildOperator().then((build) => build.entry);
  return built;
}

export class OperatorProcess {
  readonly logs: LogLine[] = [];
  readonly stderr: string[] = [];
  readonly exited: Promise<number | null>;
  metricsPort = 0;
  healthPort = 0;
  private readonly child: ChildProcess;

  private constructor(child: ChildProcess) {
    this.child = child;
    // 'close', not 'exit': it comes once stdout and stderr are read to their end, so the logs hold
    // every line the process wrote before it exited (its last, "stopped", among them).
    this.exited = new Promise((resolve) => child.once('close', (code, signal) => resolve(signal ? null : code)));
    createInterface(child.stdout!).on('line', (line) => {
      try {
        const entry = JSON.parse(line) as LogLine;
        this.logs.push(entry);
        if (entry.msg === 'operator started') {
          this.metricsPort = entry.metricsPort as number;
          this.healthPort = entry.healthPort as number;
        }
      } catch {
        this.stderr.push(`stdout (not JSON): ${line}`);
      }
    });
    createInterface(child.stderr!).on('line', (line) => this.stderr.push(line));
  }

  /**
   * Starts the operator with `kubeconfig` (see serviceAccountKubeconfig) and waits until its
   * endpoints listen. Metrics and health ports are picked by the process (parsed from its
   * "operator started" log line); the conversion webhook is off unless `env` turns it on.
   */
  /**
   * `entrypoint`: the bundle (operatorBundle()) by default; another file Node runs, such as the
   * sources (operator/src/bin/operator.ts, type-stripped), for comparison.
   */
  static async start(identity: string, kubeconfig: string, env: Record<string, string> = {}, entrypoint?: string): Promise<OperatorProcess> {
    const child = spawn(process.execPath, ['--disable-warning=ExperimentalWarning', entrypoint ?? (await operatorBundle())], {
      env: {
        PATH: process.env.PATH,
        KUBECONFIG: kubeconfig,
        POD_NAME: identity,
        METRICS_PORT: '0',
        HEALTH_PORT: '0',
        // Outside a pod it makes itself the webhook Service's endpoint: only for those who ask.
        WEBHOOK_ENABLED: 'false',
        // As the operator Deployment runs it.
        LEADER_ELECTION: 'true',
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const operator = new OperatorProcess(child);
    const exited = operator.exited.then((code) => {
      throw new Error(`operator ${identity} exited (${code}) before listening:\n${operator.stderr.join('\n')}`);
    });
    try {
      await Promise.race([waitUntil(`operator ${identity} to listen`, () => operator.metricsPort !== 0, 30_000), exited]);
    } catch (error) {
      // Not listening in time: do not leave it running (and holding the caller's pipes open).
      await operator.kill();
      throw error;
    } finally {
      exited.catch(() => undefined);
    }
    return operator;
  }

  get pid(): number {
    return this.child.pid!;
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** SIGTERM, then the exit code. */
  async stop(): Promise<number | null> {
    if (this.running) this.child.kill('SIGTERM');
    return this.exited;
  }

  /** kill -9: no cleanup at all. */
  async kill(): Promise<void> {
    if (this.running) this.child.kill('SIGKILL');
    await this.exited;
  }

  async get(path: string, port = this.metricsPort): Promise<{ status: number; body: string }> {
    const response = await fetch(`http://127.0.0.1:${port}${path}`);
    return { status: response.status, body: await response.text() };
  }

  /** Sum of a metric's samples whose labels include `labels`. */
  async metric(name: string, labels: Record<string, string> = {}): Promise<number> {
    return sumMetric((await this.get('/metrics')).body, name, labels);
  }

  /** API writes other than the Lease's and events: what reconciling changed. */
  async writes(): Promise<number> {
    return reconcileWrites((await this.get('/metrics')).body);
  }

  /** Resident set size in bytes, as the kernel reports it (VmRSS), without asking the process. */
  async rssBytes(): Promise<number> {
    const status = await readFile(`/proc/${this.pid}/status`, 'utf8');
    const kib = /^VmRSS:\s+(\d+) kB$/m.exec(status);
    if (!kib) throw new Error(`no VmRSS in /proc/${this.pid}/status (has the operator exited?)`);
    return Number(kib[1]) * 1024;
  }
}
