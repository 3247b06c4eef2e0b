// Where the test cluster lives; shared by the global setup, teardown and the tests.
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** Runs that must not share a cluster (two checkouts, parallel work) set WEBSITE_STACK_TEST_CLUSTER. */
const NAME = process.env.WEBSITE_STACK_TEST_CLUSTER ?? 'test';
export const CLUSTER_DIR = join(ROOT, '.cluster', NAME);
const CLUSTER_NAME = `website-stack-${NAME}`;
export const CLUSTER_ENV = {
  ...process.env,
  WEBSITE_STACK_CLUSTER_DIR: CLUSTER_DIR,
  WEBSITE_STACK_CLUSTER_NAME: CLUSTER_NAME,
  WEBSITE_STACK_CLUSTER_AUDIT_POLICY: join(ROOT, 'test/cluster/audit-policy.yaml'),
};
export const KUBECONFIG = join(CLUSTER_DIR, 'kubeconfig');
export const KUBECTL = join(CLUSTER_DIR, 'bin', 'kubectl');
/** The API server's audit log: ServiceAccounts' requests (test/cluster/audit-policy.yaml), one JSON event per line. */
export const AUDIT_LOG = join(CLUSTER_DIR, 'kwok', 'clusters', CLUSTER_NAME, 'logs', 'audit.log');
