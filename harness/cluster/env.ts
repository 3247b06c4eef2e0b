// Where the test clusters live; shared by the global setups, teardowns and the tests.
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AUDIT_POLICY } from './audit.ts';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** A local cluster of scripts/cluster.sh that tests start, use and stop. */
export interface TestCluster {
  /** scripts/cluster.sh's environment for this cluster (its directory, name and audit policy). */
  readonly env: NodeJS.ProcessEnv;
  /** An administrator's kubeconfig. */
  readonly kubeconfig: string;
  /** kubectl, with a discovery cache of this cluster's own. */
  readonly kubectl: string;
  /** The API server's audit log: ServiceAccounts' requests (harness/cluster/audit-policy.yaml), one JSON event per line. */
  readonly auditLog: string;
}

/** Runs that must not share a cluster (two checkouts, parallel work) set WEBSITE_STACK_TEST_CLUSTER. */
const PREFIX = process.env.WEBSITE_STACK_TEST_CLUSTER ?? 'test';

/** The test cluster `<prefix><suffix>`, in .cluster/ of this checkout. */
export function testCluster(suffix = ''): TestCluster {
  const dir = join(ROOT, '.cluster', `${PREFIX}${suffix}`);
  const name = `website-stack-${PREFIX}${suffix}`;
  return {
    env: {
      ...process.env,
      WEBSITE_STACK_CLUSTER_DIR: dir,
      WEBSITE_STACK_CLUSTER_NAME: name,
      WEBSITE_STACK_CLUSTER_AUDIT_POLICY: AUDIT_POLICY,
    },
    kubeconfig: join(dir, 'kubeconfig'),
    kubectl: join(dir, 'bin', 'kubectl'),
    auditLog: join(dir, 'kwok', 'clusters', name, 'logs', 'audit.log'),
  };
}

/** The cluster the cluster project's suites share, one suite at a time. */
const SHARED = testCluster();
export const CLUSTER_ENV = SHARED.env;
export const KUBECONFIG = SHARED.kubeconfig;
export const KUBECTL = SHARED.kubectl;
export const AUDIT_LOG = SHARED.auditLog;

/**
 * The isolated project's cluster (test/isolated/), for suites that would disturb others on the
 * same cluster: the chaos run restarts the API server and etcd; the image test runs the operator
 * in website-system, holding its Lease, and points the CRD's conversion at its container.
 */
export const ISOLATED_CLUSTER = testCluster('-isolated');

/**
 * The argocd project's cluster (test/argocd/): Argo CD syncs dist/ into it, owning the CRD, the
 * operator's namespace and the trace stack's, which no other suite may touch meanwhile.
 */
export const ARGOCD_CLUSTER = testCluster('-argocd');

/**
 * The node project's cluster (test/node/): one real node (scripts/real-node.sh) where every pod
 * runs, so it takes the whole of dist/ as users apply it; one such node per machine.
 */
export const NODE_CLUSTER = testCluster('-node');
