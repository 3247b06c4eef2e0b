// An address of this machine at which the local API server reaches a process running here (the
// operator outside the cluster) through a Service. A Service's endpoints may not be loopback
// addresses (127.0.0.0/8, ::1: the API server refuses them), so the test adds an address of its
// own, from a private range, to the loopback interface for its duration: the API server's calls
// to it stay on this machine. Needs root (CAP_NET_ADMIN), as the image test's network namespace does.
import { execFileSync } from 'node:child_process';

export class TestHostAddress {
  readonly address: string;

  /** `id` (the process id by default) picks the address, so concurrent test files get their own. */
  constructor(id = process.pid) {
    this.address = `10.214.${1 + (Math.floor(id / 250) % 250)}.${1 + (id % 250)}`;
    this.close();
    try {
      execFileSync('ip', ['addr', 'add', `${this.address}/32`, 'dev', 'lo'], { stdio: ['ignore', 'pipe', 'pipe'] });
    } catch (error) {
      const stderr = String((error as { stderr?: Buffer }).stderr ?? '').trim();
      throw new Error(
        `could not add ${this.address}/32 to the loopback interface (${stderr}): the webhook tests need root (CAP_NET_ADMIN)`,
      );
    }
  }

  close(): void {
    try {
      execFileSync('ip', ['addr', 'del', `${this.address}/32`, 'dev', 'lo'], { stdio: 'ignore' });
    } catch {
      // not there
    }
  }
}
