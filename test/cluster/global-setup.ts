import { testCluster } from '../../harness/cluster/env.ts';
import { startTestCluster } from '../../harness/cluster/test-cluster.ts';
import { tracingBinaries } from '../../harness/trace/local-stack.ts';

/**
 * One real cluster per test run, which the cluster project's suites share; and the trace stack's
 * binaries, which operator.test.ts runs (the operator traced into Jaeger): built here, before any
 * test starts, rather than inside a test's timeout.
 */
export default function globalSetup(): Promise<void> {
  tracingBinaries();
  return startTestCluster(testCluster());
}
