// The harness's way to run a program of the stack as a local process: its output in a log file of
// its own (no pipe in between, so every line it wrote is in the file once it has exited), and, when
// it does not come up, an error that quotes that log's last lines.
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { eventually } from './poll.ts';

/** A program of ours running as a local process, its output in `logFile`. */
export interface LoggedProcess {
  readonly name: string;
  readonly process: ChildProcess;
  readonly logFile: string;
  /** SIGTERM, then SIGKILL after 10 s; resolves once it has exited. */
  stop(): Promise<void>;
}

export interface SpawnLoggedOptions {
  readonly env: NodeJS.ProcessEnv;
  /** Appended to; its folder is created. */
  readonly logFile: string;
  /** In a process group of its own, which a signal to the group reaches with its children. @default false */
  readonly ownGroup?: boolean;
  /** Left running after this process exits (`tracing:up`, `argocd:up`). @default false */
  readonly outlive?: boolean;
}

/** Starts `command` with its output in `options.logFile`. */
export function spawnLogged(
  name: string,
  command: string,
  args: readonly string[],
  options: SpawnLoggedOptions,
): LoggedProcess {
  mkdirSync(dirname(options.logFile), { recursive: true });
  const fd = openSync(options.logFile, 'a');
  const child = spawn(command, args, {
    env: options.env,
    stdio: ['ignore', fd, fd],
    detached: (options.ownGroup ?? false) || (options.outlive ?? false),
  });
  closeSync(fd);
  if (options.outlive) child.unref();
  // A program that could not be started at all (ENOENT, EACCES) says so where its output would be.
  child.once('error', (error) =>
    writeFileSync(options.logFile, `[${name}] could not start: ${error.message}\n`, { flag: 'a' }),
  );
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const running = () => child.exitCode === null && child.signalCode === null && child.pid !== undefined;
  return {
    name,
    process: child,
    logFile: options.logFile,
    async stop() {
      if (!running()) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** The last `lines` lines of a log file, for an error message. */
export function logTail(logFile: string, lines = 20): string {
  return existsSync(logFile) ? readFileSync(logFile, 'utf8').split('\n').slice(-lines).join('\n') : '(no log)';
}

/** Polls `url` until it answers 2xx while `running` runs; fails with its log's tail otherwise. */
export async function awaitHealthy(running: LoggedProcess, url: string, timeoutMs = 60_000): Promise<void> {
  const child = running.process;
  try {
    await eventually(
      `${running.name} to answer ${url}`,
      async () => {
        if (child.exitCode !== null || child.signalCode !== null) throw new Error('exited');
        return (await fetch(url).catch(() => undefined))?.ok; // undefined: not listening yet
      },
      { timeoutMs, intervalMs: 200, stopOnError: true },
    );
    return;
  } catch {
    // Exited, or not healthy in time: its own log says why.
  }
  throw new Error(
    `${running.name} did not become healthy at ${url} (exit code ${child.exitCode ?? 'none'}${child.signalCode ? `, ${child.signalCode}` : ''}); log ${running.logFile}:\n${logTail(running.logFile)}`,
  );
}
