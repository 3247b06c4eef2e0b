import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { CLUSTER_ENV, ROOT } from './env.ts';

/** Stops the test cluster, unless KEEP_CLUSTER=1 asks to keep it for the next run. */
export default function globalTeardown(): void {
  if (process.env.KEEP_CLUSTER === '1') return;
  execFileSync('bash', [join(ROOT, 'scripts/cluster.sh'), 'down'], { env: CLUSTER_ENV, stdio: 'inherit' });
}
