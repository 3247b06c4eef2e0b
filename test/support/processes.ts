// Processes this project starts detached, each the leader of a process group of its own (the
// local trace stack of `npm run tracing:up`, Argo CD of `npm run argocd:up`), stopped by pid from
// another process.
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
