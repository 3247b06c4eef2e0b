// The test cluster through harness/cluster/kubectl.ts, and the objects the cluster tests create.
import { randomBytes } from 'node:crypto';
import { restrictedContainerSecurityContext, restrictedPodSecurityContext } from '../../lib/security.ts';
import { KUBECONFIG, KUBECTL } from './env.ts';
import {
  type ClusterAccess,
  clusterEndpoint,
  type KubectlOptions,
  type KubectlResult,
  kubectlOk,
  kubectl as run,
} from './kubectl.ts';

/** The test cluster, as an administrator. */
export const TEST_CLUSTER: ClusterAccess = { kubeconfig: KUBECONFIG, kubectl: KUBECTL };

/** kubectl(), ok(), getJson() and loadClusterInfo() against `cluster`. */
export function commandsFor(cluster: ClusterAccess) {
  const ok = (args: readonly string[], options: KubectlOptions = {}): Promise<string> =>
    kubectlOk(cluster, args, options);
  return {
    /** Runs the real kubectl; never throws on a non-zero exit. */
    kubectl: (args: readonly string[], options: KubectlOptions = {}): Promise<KubectlResult> =>
      run(cluster, args, options),
    /** Like kubectl(), but fails the test with kubectl's own message when the command fails. */
    ok,
    /** kubectl get -o json, parsed. */
    getJson: async (args: readonly string[], options: KubectlOptions = {}): Promise<any> =>
      JSON.parse(await ok(['get', ...args, '-o', 'json'], options)),
    /** The cluster's address and CA file. */
    loadClusterInfo: (): Promise<{ server: string; ca: string }> => clusterEndpoint(cluster),
  };
}

/** The commands against the test cluster the cluster project's suites share. */
export const { kubectl, ok, getJson, loadClusterInfo } = commandsFor(TEST_CLUSTER);

/** A fresh namespace for one test file, and its removal. */
export async function createNamespace(prefix: string, labels: Record<string, string> = {}): Promise<string> {
  const name = `${prefix}-${randomBytes(3).toString('hex')}`;
  await ok(['apply', '-f', '-'], {
    input: JSON.stringify({
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name, labels: { 'website-stack/test': 'true', ...labels } },
    }),
  });
  return name;
}

export async function deleteNamespace(name: string): Promise<void> {
  await kubectl(['delete', 'namespace', name, '--wait=false', '--ignore-not-found']);
}

/** A v1 Website manifest. */
/** Creates `object` (a manifest) with kubectl create. */
export function create(object: object): Promise<string> {
  return ok(['create', '-f', '-'], { input: JSON.stringify(object) });
}

export function website(
  name: string,
  namespace: string,
  spec: Record<string, unknown>,
  extra: Record<string, unknown> = {},
) {
  return { apiVersion: 'web.example.com/v1', kind: 'Website', metadata: { name, namespace, ...extra }, spec };
}

/** A Deployment `website-<instance>` like the operator's children, Pod Security restricted; `metadata` is merged in. */
export function testDeployment(instance: string, namespace: string, metadata: Record<string, unknown> = {}) {
  const labels = { 'app.kubernetes.io/name': 'website', 'app.kubernetes.io/instance': instance };
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: `website-${instance}`, namespace, labels, ...metadata },
    spec: {
      replicas: 1,
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: {
          securityContext: restrictedPodSecurityContext(),
          containers: [
            {
              name: 'web',
              image: 'nginxinc/nginx-unprivileged:1.28.0-alpine',
              securityContext: restrictedContainerSecurityContext(),
            },
          ],
        },
      },
    },
  };
}
