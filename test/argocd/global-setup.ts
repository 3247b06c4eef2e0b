// The argocd project's own cluster (ARGOCD_CLUSTER says why), created afresh: Argo CD must find
// nothing of dist/ in it, as a new cluster it is pointed at. Argo CD's binary is built (or waited
// for, while npm test's background build makes it) here, before any test starts, rather than inside
// a test's timeout.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { argoCdBinary } from '../../harness/argocd/argocd.ts';
import { ARGOCD_CLUSTER, ROOT } from '../../harness/cluster/env.ts';

export default function globalSetup(): void {
  const cluster = (command: string) =>
    execFileSync('bash', [join(ROOT, 'scripts/cluster.sh'), command], { env: ARGOCD_CLUSTER.env, stdio: 'inherit' });
  cluster('down');
  // The cluster first: on a cold machine Argo CD is the last binary npm test builds, and the cluster
  // comes up while it compiles.
  cluster('up');
  argoCdBinary();
}
