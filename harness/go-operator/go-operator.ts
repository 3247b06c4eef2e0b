// The definitions of the benchmark's Go peer (bench/go-operator/main.go, run by bench/go-operator.ts)
// that the unit tests check: where it runs, its RBAC, and the template it renders Websites from.
import { readFileSync } from 'node:fs';
import { DEFAULT_GROUP } from '../../lib/website/schema.ts';
import type { KubeObject } from '../../operator/src/controller/kube-api.ts';
import { workloadTemplates } from '../operator/workload-template.ts';

/** The controller-runtime release the Go peer is built on: its go.mod's, the one place it is pinned. */
export const CONTROLLER_RUNTIME_VERSION = (() => {
  const mod = readFileSync(new URL('../../bench/go-operator/go.mod', import.meta.url), 'utf8');
  const match = /^\s*sigs\.k8s\.io\/controller-runtime (v\S+)$/m.exec(mod);
  if (!match) throw new Error('bench/go-operator/go.mod requires no sigs.k8s.io/controller-runtime');
  return match[1];
})();

/** Where the Go peer runs: its ServiceAccount, its Lease and the Websites it reconciles (apart from ours). */
export const GO_OPERATOR_NS = 'go-website-operator';
export const GO_OPERATOR_SERVICE_ACCOUNT = 'go-website-operator';
/** Its LeaderElectionID (bench/go-operator/main.go). */
export const GO_OPERATOR_LEASE = 'go-website-operator';

/**
 * The template bench/go-operator/main.go renders from: renderWorkload's Deployment and Service with
 * the program's placeholders (its `placeholder*` constants) where a Website's values go; it sets
 * spec.replicas itself.
 */
export function goOperatorTemplate(): { deployment: KubeObject; service: KubeObject } {
  return workloadTemplates({
    name: 'go-placeholder-name',
    namespace: 'go-placeholder-ns',
    uid: 'go-placeholder-uid',
    text: 'go-placeholder-text',
    background: 'go-placeholder-background',
    foreground: 'go-placeholder-foreground',
    replicas: 1,
  });
}

/**
 * Its namespace, ServiceAccount, Role and RoleBinding: what controller-runtime's book would grant
 * (kubebuilder's `+kubebuilder:rbac` markers): dist/'s Role for Websites and their children, Events
 * (create and patch: client-go's recorder patches a repeated Event's count) and its Lease.
 */
export function goOperatorRbacManifests(group = DEFAULT_GROUP): KubeObject[] {
  const ns = GO_OPERATOR_NS;
  const name = GO_OPERATOR_SERVICE_ACCOUNT;
  const all = ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'];
  return [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } },
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace: ns } },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name, namespace: ns },
      rules: [
        {
          apiGroups: [group],
          resources: ['websites', 'websites/status'],
          verbs: ['get', 'list', 'watch', 'update', 'patch'],
        },
        { apiGroups: ['apps'], resources: ['deployments'], verbs: all },
        { apiGroups: [''], resources: ['services'], verbs: all },
        { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] },
        { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'create', 'update'] },
      ],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name, namespace: ns },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
      subjects: [{ kind: 'ServiceAccount', name, namespace: ns }],
    },
  ] as KubeObject[];
}
