// The isolated project's own cluster (ISOLATED_CLUSTER says why its suites need one), so that they
// run beside the cluster project's suites without sharing their cluster.

import { ISOLATED_CLUSTER } from '../cluster/env.ts';
import { startTestCluster } from '../cluster/global-setup.ts';

export default function globalSetup(): Promise<void> {
  return startTestCluster(ISOLATED_CLUSTER);
}
