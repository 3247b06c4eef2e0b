import { cpSync, existsSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { NODE_CLUSTER, ROOT } from '../../harness/cluster/env.ts';
import { stopTestCluster } from '../../harness/cluster/test-cluster.ts';

/** The node's component and container logs go to test-results/node/ before the cluster goes. */
export default function globalTeardown(): void {
  const node = join(dirname(NODE_CLUSTER.kubeconfig), 'real-node');
  const out = join(ROOT, 'test-results', 'node');
  rmSync(out, { recursive: true, force: true });
  for (const logs of ['logs', 'pod-logs'])
    if (existsSync(join(node, logs))) cpSync(join(node, logs), join(out, logs), { recursive: true, dereference: true });
  stopTestCluster(NODE_CLUSTER);
}
