// The operator's objects exactly as dist/website-operator/website-operator.yaml ships them, and the
// one Role an operator outside the cluster needs besides.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export const OPERATOR_NS = 'website-system';

/** The operator's Namespace, ServiceAccount, Roles and bindings exactly as dist/website-operator/website-operator.yaml ships them (not its Deployment). */
export function operatorRbacManifests(): Array<Record<string, any>> {
  const kinds = ['Namespace', 'ServiceAccount', 'Role', 'RoleBinding', 'ClusterRole', 'ClusterRoleBinding'];
  return parseAllDocuments(readFileSync(join(ROOT, 'dist/website-operator/website-operator.yaml'), 'utf8'))
    .map((document) => document.toJS())
    .filter((manifest) => kinds.includes(manifest?.kind));
}

/** The webhook Service exactly as dist/website-operator/website-operator.yaml ships it: the CRD's conversion webhook calls it. */
export function webhookServiceManifest(): Record<string, any> {
  return parseAllDocuments(readFileSync(join(ROOT, 'dist/website-operator/website-operator.yaml'), 'utf8'))
    .map((document) => document.toJS())
    .find((manifest) => manifest?.kind === 'Service');
}

/**
 * What an operator outside the cluster needs besides dist/'s Role: making itself an endpoint of its
 * webhook Service (operator/src/webhook/local-service-endpoint.ts), given WEBHOOK_ADVERTISE_ADDRESS.
 * A user's own kubeconfig has this; the tests run the operator as its ServiceAccount, so they grant
 * it with this Role (nothing in dist/ does: in a pod the Service selects the pod).
 */
export function localEndpointRbacManifests(namespace = OPERATOR_NS): Array<Record<string, any>> {
  const name = 'website-operator-local-endpoint';
  return [
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name, namespace },
      rules: [
        { apiGroups: [''], resources: ['services'], verbs: ['get'] },
        {
          apiGroups: ['discovery.k8s.io'],
          resources: ['endpointslices'],
          verbs: ['list', 'create', 'patch', 'delete'],
        },
      ],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name, namespace },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
      subjects: [{ kind: 'ServiceAccount', name: 'website-operator', namespace }],
    },
  ];
}
