import { testCluster } from '../../harness/cluster/env.ts';
import { stopTestCluster } from '../../harness/cluster/test-cluster.ts';

export default function globalTeardown(): void {
  stopTestCluster(testCluster());
}
