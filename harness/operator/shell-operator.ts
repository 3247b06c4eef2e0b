// scripts/shell-operator.sh started the way a user starts it (real kubectl, jq, bash, under its
// ServiceAccount's token and Role), its log collected line by line: for the cluster tests and the
// shell operator benchmark (bench/shell-operator.ts).
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { ClusterAccess } from '../cluster/kubectl.ts';
import { eventually } from '../process/poll.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** The local cluster of `npm run cluster:up` (or $KUBECONFIG), and its kubectl. */
export function localCluster(): ClusterAccess {
  return {
    kubeconfig: process.env.KUBECONFIG ?? join(ROOT, '.cluster/kubeconfig'),
    kubectl: process.env.KUBECTL ?? join(ROOT, '.cluster/bin/kubectl'),
  };
}

/** Child processes still running (operators, and the benchmark's watches), for stopTracked(). */
const children = new Set<ChildProcess>();

export function tracked(child: ChildProcess): ChildProcess {
  children.add(child);
  child.on('exit', () => children.delete(child));
  return child;
}

/**
 * SIGTERM to every tracked shell operator and watch that is still running: an interrupted
 * benchmark would otherwise leave a loop retrying against a cluster that is gone.
 */
export function stopTracked(): void {
  for (const child of children) child.kill('SIGTERM');
}

/** One line the shell operator logged, with the time (Date.now()) it arrived. */
export interface ShellOperatorLine {
  readonly at: number;
  readonly text: string;
}

/** scripts/shell-operator.sh running in the background, its log collected line by line. */
export interface ShellOperatorProcess {
  /** Process ID of scripts/shell-operator.sh, whose child runs the script's loop. */
  readonly pid: number;
  readonly lines: readonly ShellOperatorLine[];
  /** Lines reporting a finished cycle. */
  cycles(): ShellOperatorLine[];
  /** Resolves once `count` cycles have finished in total; fails after `timeoutMs` or if the process exits. */
  waitForCycles(count: number, timeoutMs: number): Promise<void>;
  /** Resolves with the exit code once the process has exited. */
  readonly exited: Promise<number | null>;
  /** Whether the process is still running. */
  running(): boolean;
  /** Sends SIGTERM and resolves with the exit code and how long stopping took. */
  stop(): Promise<{ code: number | null; ms: number }>;
}

/**
 * Starts the shell operator for `namespace` the way a user does: `bash scripts/shell-operator.sh`,
 * which reads the script and template from the namespace's ConfigMap and runs as the ServiceAccount.
 * `env` adds INTERVAL, ONCE, ... (see the script's header).
 */
export function startShellOperator(
  cluster: ClusterAccess,
  namespace: string,
  env: Record<string, string> = {},
): ShellOperatorProcess {
  const child = tracked(
    spawn('bash', [join(ROOT, 'scripts/shell-operator.sh')], {
      env: { ...process.env, KUBECONFIG: cluster.kubeconfig, KUBECTL: cluster.kubectl, NAMESPACE: namespace, ...env },
      stdio: ['ignore', 'inherit', 'pipe'],
    }),
  );
  const lines: ShellOperatorLine[] = [];
  createInterface({ input: child.stderr! }).on('line', (text) => lines.push({ at: Date.now(), text }));
  let exitCode: number | null | undefined;
  // 'close', not 'exit': it comes once stderr is read to its end, so `lines` then holds every line
  // the loop logged (the reason it stopped among them).
  const exited = new Promise<number | null>((resolve) =>
    child.on('close', (code) => {
      exitCode = code;
      resolve(code);
    }),
  );
  const cycles = () => lines.filter((l) => l.text.includes(' cycle done: '));
  return {
    pid: child.pid!,
    lines,
    cycles,
    exited,
    running: () => exitCode === undefined,
    async waitForCycles(count, timeoutMs) {
      const probe = () => {
        if (exitCode !== undefined)
          throw new Error(`the shell operator exited (${exitCode}); its log:\n${lines.map((l) => l.text).join('\n')}`);
        return cycles().length >= count;
      };
      const progress = () =>
        `${cycles().length} finished; its log ends:\n${lines
          .slice(-10)
          .map((l) => l.text)
          .join('\n')}`;
      await eventually(`the shell operator to finish ${count} cycles`, probe, {
        timeoutMs,
        intervalMs: 100,
        progress,
        stopOnError: true,
      });
    },
    async stop() {
      const start = Date.now();
      if (exitCode === undefined) child.kill('SIGTERM');
      const code = await exited;
      return { code, ms: Date.now() - start };
    },
  };
}
