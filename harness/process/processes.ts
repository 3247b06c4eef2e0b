// Processes this project starts detached, each the leader of a process group of its own (the
// local trace stack of `npm run tracing:up`, Argo CD of `npm run argocd:up`), stopped by pid from
// another process.
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { eventually } from './poll.ts';

/** Whether process `pid` still runs. */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** SIGTERM to each process group, SIGKILL to what is left after 10 s; resolves once all are gone. */
export async function stopProcesses(pids: Readonly<Record<string, number>>): Promise<void> {
  const signal = (pid: number, name: NodeJS.Signals) => {
    try {
      process.kill(-pid, name);
    } catch {
      // Gone already.
    }
  };
  const all = Object.values(pids);
  for (const pid of all) signal(pid, 'SIGTERM');
  const deadline = Date.now() + 10_000;
  while (all.some(alive) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  for (const pid of all.filter(alive)) signal(pid, 'SIGKILL');
  await eventually('the processes to exit', () => !all.some(alive), { timeoutMs: 10_000, intervalMs: 50 });
}

/**
 * Runs one of the project's bash scripts (`scripts/<name>.sh`) with `args`; resolves with its
 * standard output, or rejects with its exit code and standard error (where the scripts say why).
 * With `progress`, its standard error also goes to ours as it comes (a cluster taking minutes).
 */
export function runScript(
  name: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
  options: { progress?: boolean } = {},
): Promise<string> {
  const script = fileURLToPath(new URL(`../../scripts/${name}.sh`, import.meta.url));
  return new Promise((resolve, reject) => {
    const child = execFile('bash', [script, ...args], { env, maxBuffer: 16 << 20 }, (error, stdout, stderr) => {
      if (error)
        reject(
          new Error(
            `scripts/${name}.sh ${args.join(' ')} failed (${typeof error.code === 'number' ? error.code : 1}):\n${stderr.trim()}`,
          ),
        );
      else resolve(stdout);
    });
    if (options.progress) child.stderr!.pipe(process.stderr);
  });
}
