// The real operator entrypoint (lib/bin/operator.ts) as a child process, authenticated as the
// operator's ServiceAccount under exactly the Role dist/ ships.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type AddressInfo, createServer } from 'node:net';
import { createInterface } from 'node:readline';
import { ROOT } from './env.ts';
import { eventually, loadClusterInfo, ok } from './kube.ts';

export const OPERATOR_NS = 'website-system';

/** A TCP port nothing listens on right now. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** A kubeconfig holding only the cluster's address and CA and a ServiceAccount token. */
export async function serviceAccountKubeconfig(serviceAccount = 'website-operator', namespace = OPERATOR_NS): Promise<string> {
  const { server, ca } = await loadClusterInfo();
  const token = (await ok(['create', 'token', serviceAccount, '-n', namespace, '--duration=2h'])).trim();
  const path = join(await mkdtemp(join(tmpdir(), 'operator-')), 'kubeconfig');
  const config = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'test', cluster: { server, 'certificate-authority': ca } }],
    users: [{ name: serviceAccount, user: { token } }],
    contexts: [{ name: 'test', context: { cluster: 'test', user: serviceAccount, namespace } }],
    'current-context': 'test',
  };
  await writeFile(path, JSON.stringify(config), { mode: 0o600 });
  return path;
}

export interface LogLine {
  level: string;
  msg: string;
  [key: string]: unknown;
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
    this.exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve(signal ? null : code)));
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

  /** Starts the operator and waits until its endpoints listen. */
  /** `entrypoint`: the TypeScript source by default; the image test passes the compiled one. */
  static async start(identity: string, kubeconfig: string, env: Record<string, string> = {}, entrypoint = join(ROOT, 'lib/bin/operator.ts')): Promise<OperatorProcess> {
    const child = spawn(process.execPath, ['--disable-warning=ExperimentalWarning', entrypoint], {
      env: {
        PATH: process.env.PATH,
        KUBECONFIG: kubeconfig,
        POD_NAME: identity,
        METRICS_PORT: '0',
        HEALTH_PORT: '0',
        LEASE_DURATION_SECONDS: '4',
        RENEW_DEADLINE_SECONDS: '3',
        RETRY_PERIOD_SECONDS: '0.5',
        LOG_LEVEL: 'debug',
        // Tests that need the conversion webhook turn it on (it rewrites the CRD's clientConfig).
        WEBHOOK_ENABLED: 'false',
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const operator = new OperatorProcess(child);
    const exited = operator.exited.then((code) => {
      throw new Error(`operator ${identity} exited (${code}) before listening:\n${operator.stderr.join('\n')}`);
    });
    await Promise.race([eventually(`operator ${identity} to listen`, async () => (operator.metricsPort ? true : undefined), 30_000), exited]);
    exited.catch(() => undefined);
    return operator;
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
    const { body } = await this.get('/metrics');
    let sum = 0;
    for (const line of body.split('\n')) {
      const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
      if (!match || match[1] !== name) continue;
      const sample = Object.fromEntries([...(match[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
      if (Object.entries(labels).every(([k, v]) => sample[k] === v)) sum += Number(match[3]);
    }
    return sum;
  }

  /** API writes other than the Lease's and events: what reconciling changed. */
  async writes(): Promise<number> {
    let total = 0;
    for (const verb of ['CREATE', 'APPLY', 'PATCH', 'UPDATE', 'DELETE']) {
      for (const resource of ['websites', 'deployments', 'services']) total += await this.metric('rest_client_requests_total', { verb, resource });
    }
    return total;
  }
}
