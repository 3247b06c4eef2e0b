// The chaos project's own cluster: its faults restart the API server and etcd, so it runs beside
// the cluster project's suites without sharing their cluster.

import { CHAOS_CLUSTER } from '../cluster/env.ts';
import { startTestCluster } from '../cluster/global-setup.ts';

export default function globalSetup(): Promise<void> {
  return startTestCluster(CHAOS_CLUSTER);
}
