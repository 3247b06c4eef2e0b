// The argocd project's own cluster (ARGOCD_CLUSTER says why), created afresh: Argo CD must find
// nothing of dist/ in it, as a new cluster it is pointed at.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { ARGOCD_CLUSTER, ROOT } from '../../harness/cluster/env.ts';

export default function globalSetup(): void {
  const cluster = (command: string) =>
    execFileSync('bash', [join(ROOT, 'scripts/cluster.sh'), command], { env: ARGOCD_CLUSTER.env, stdio: 'inherit' });
  cluster('down');
  cluster('up');
}
