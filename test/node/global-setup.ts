// The node project's cluster, created afresh with its real node (scripts/real-node.sh): the
// node's binaries and images are built first when not cached.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { NODE_CLUSTER, ROOT } from '../../harness/cluster/env.ts';

export default function globalSetup(): void {
  const cluster = (...args: string[]) =>
    execFileSync('bash', [join(ROOT, 'scripts/cluster.sh'), ...args], { env: NODE_CLUSTER.env, stdio: 'inherit' });
  cluster('down');
  cluster('up', '--real-node');
}
