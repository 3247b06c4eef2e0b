import { NODE_CLUSTER } from '../cluster/env.ts';
import { stopTestCluster } from '../cluster/global-teardown.ts';

export default function globalTeardown(): void {
  stopTestCluster(NODE_CLUSTER);
}
