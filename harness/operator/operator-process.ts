// The real operator as a child process: the bundle the image runs (operator/build/operator.mjs,
// built from the sources first by operator/bundle.ts), with the image's Node flags, so the tests
// and the benchmark exercise what ships. The cluster tests bind it to the test cluster (test/cluster/operator-process.ts); the
// benchmark runs it as its ServiceAccount under exactly the Role dist/ ships (bench/operator.ts).
import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { OPERATOR_NODE_FLAGS } from '../../lib/operator/operator-deployment.ts';
import { buildOperator } from '../../operator/bundle.ts';
import { reconcileWrites, sumMetric } from '../process/metrics.ts';
import { eventually } from '../process/poll.ts';
import { rssBytes } from '../process/proc.ts';

/** One line the operator logged: its JSON log entry. */
export interface LogLine {
  level: string;
  msg: string;
  [key: string]: unknown;
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
   * sources (operator/src/bin/operator.ts, type-stripped), for comparison. Node runs it with the
   * image's flags (OPERATOR_NODE_FLAGS) and `nodeArgs` after them, for more of those NODE_OPTIONS
   * does not take (`--heap-growing-percent=20`).
   */
  static async start(
    identity: string,
    kubeconfig: string,
    env: Record<string, string> = {},
    { entrypoint, nodeArgs = [] }: { entrypoint?: string; nodeArgs?: readonly string[] } = {},
  ): Promise<OperatorProcess> {
    const child = spawn(
      process.execPath,
      [
        '--disable-warning=ExperimentalWarning',
        ...OPERATOR_NODE_FLAGS,
        ...nodeArgs,
        entrypoint ?? (await operatorBundle()),
      ],
      {
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
      },
    );
    const operator = new OperatorProcess(child);
    const exited = operator.exited.then((code) => {
      throw new Error(`operator ${identity} exited (${code}) before listening:\n${operator.stderr.join('\n')}`);
    });
    try {
      await Promise.race([
        eventually(`operator ${identity} to listen`, () => operator.metricsPort !== 0, {
          timeoutMs: 30_000,
          intervalMs: 50,
        }),
        exited,
      ]);
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
  rssBytes(): Promise<number> {
    return rssBytes(this.pid);
  }
}
