import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

/** Runs a command in `cwd` and returns its stdout; on failure, the error carries its whole output. */
export async function run(
  cwd: string,
  command: string,
  args: readonly string[],
  env: Readonly<Record<string, string>> = {},
): Promise<string> {
  try {
    const { stdout } = await execFileAsync(command, args, {
      cwd,
      env: { ...process.env, ...env },
      maxBuffer: 64 << 20,
    });
    return stdout;
  } catch (error) {
    const { stdout, stderr } = error as { stdout?: string; stderr?: string };
    throw new Error(`${command} ${args.join(' ')} failed in ${cwd}:\n${stdout ?? ''}\n${stderr ?? ''}`);
  }
}
