import { ISOLATED_CLUSTER } from '../../harness/cluster/env.ts';
import { stopTestCluster } from '../../harness/cluster/test-cluster.ts';

export default function globalTeardown(): void {
  stopTestCluster(ISOLATED_CLUSTER);
}
