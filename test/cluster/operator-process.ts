// The operator process of harness/operator/operator-process.ts, bound to the test cluster, with the short
// leader-election timings and debug logs the tests rely on.

import { TEST_CLUSTER } from '../../harness/cluster/kube.ts';
import { serviceAccountKubeconfig as serviceAccountKubeconfigOf } from '../../harness/cluster/kubectl.ts';
import { OPERATOR_NS } from '../../harness/operator/operator-manifests.ts';
import { OperatorProcess as SharedOperatorProcess } from '../../harness/operator/operator-process.ts';

/** A kubeconfig holding only the test cluster's address and CA and a ServiceAccount token. */
export function serviceAccountKubeconfig(
  serviceAccount = 'website-operator',
  namespace = OPERATOR_NS,
): Promise<string> {
  return serviceAccountKubeconfigOf(TEST_CLUSTER, serviceAccount, namespace);
}

const TEST_ENV = {
  LEASE_DURATION_SECONDS: '4',
  RENEW_DEADLINE_SECONDS: '3',
  RETRY_PERIOD_SECONDS: '0.5',
  LOG_LEVEL: 'debug',
};

export type OperatorProcess = SharedOperatorProcess;
export const OperatorProcess = {
  /** Starts the operator and waits until its endpoints listen; `env` overrides the test defaults. */
  start: (identity: string, kubeconfig: string, env: Record<string, string> = {}): Promise<OperatorProcess> =>
    SharedOperatorProcess.start(identity, kubeconfig, { ...TEST_ENV, ...env }),
};
