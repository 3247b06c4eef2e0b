import { testCluster } from '../../harness/cluster/env.ts';
import { startTestCluster } from '../../harness/cluster/test-cluster.ts';

/** One real cluster per test run, which the cluster project's suites share. */
export default function globalSetup(): Promise<void> {
  return startTestCluster(testCluster());
}
