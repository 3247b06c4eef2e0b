// The isolated project's own cluster (ISOLATED_CLUSTER says why its suites need one), so that they
// run beside the cluster project's suites without sharing their cluster.

import { ISOLATED_CLUSTER } from '../../harness/cluster/env.ts';
import { startTestCluster } from '../../harness/cluster/test-cluster.ts';

export default function globalSetup(): Promise<void> {
  return startTestCluster(ISOLATED_CLUSTER);
}
