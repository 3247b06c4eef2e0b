import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { ROOT, type TestCluster, testCluster } from './env.ts';

/** Stops `cluster`, unless KEEP_CLUSTER=1 asks to keep it for the next run. */
export function stopTestCluster(cluster: TestCluster): void {
  if (process.env.KEEP_CLUSTER === '1') return;
  execFileSync('bash', [join(ROOT, 'scripts/cluster.sh'), 'down'], { env: cluster.env, stdio: 'inherit' });
}

export default function globalTeardown(): void {
  stopTestCluster(testCluster());
}
