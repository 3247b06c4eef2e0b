import { k8s } from 'cdk8s-plus-34';
import { Construct } from 'constructs';
import { DEFAULT_GROUP } from '../website/schema.ts';
import { LEASE_NAME, OPERATOR_NAME, operatorLabels } from './names.ts';

export interface OperatorRbacProps {
  /** Namespace of the ServiceAccount, Role and RoleBinding: the namespace the operator watches. */
  readonly namespace: string;
  /**
   * API group of the Website resource.
   * @default 'web.example.com'
   */
  readonly group?: string;
  /**
   * Name of the ServiceAccount, Role and RoleBinding.
   * @default 'website-operator'
   */
  readonly name?: string;
  /**
   * Grant the Lease permissions leader election needs (only on the named Lease, except create).
   * @default true
   */
  readonly leaderElection?: boolean;
  /**
   * Name of the leader-election Lease.
   * @default 'website-operator'
   */
  readonly leaseName?: string;
}

/**
 * The Role rules of spec §5, for `group`, plus:
 * - `patch` on deployments and services: the operator ensures its children by server-side apply,
 *   which is an HTTP PATCH (creating through apply needs `create` too, which the spec grants);
 * - the Lease rules of leader election when it is on. Create cannot be limited by resourceNames
 *   in RBAC, so it is a rule of its own.
 * Pass `false` for `leaderElection` when the operator runs without it.
 */
export function operatorRoleRules(
  group: string = DEFAULT_GROUP,
  leaderElection: { readonly leaseName: string } | false = { leaseName: LEASE_NAME },
): k8s.PolicyRule[] {
  const rules: k8s.PolicyRule[] = [
    { apiGroups: [group], resources: ['websites', 'websites/status'], verbs: ['get', 'list', 'watch', 'update', 'patch'] },
    { apiGroups: ['apps'], resources: ['deployments'], verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'] },
    { apiGroups: [''], resources: ['services'], verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'] },
    { apiGroups: [''], resources: ['events'], verbs: ['create'] },
  ];
  if (leaderElection) {
    rules.push(
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create'] },
      {
        apiGroups: ['coordination.k8s.io'],
        resources: ['leases'],
        resourceNames: [leaderElection.leaseName],
        verbs: ['get', 'update'],
      },
    );
  }
  return rules;
}

/** The operator's ServiceAccount, its least-privilege Role and the RoleBinding between them. */
export class OperatorRbac extends Construct {
  public readonly serviceAccount: k8s.KubeServiceAccount;
  public readonly role: k8s.KubeRole;
  public readonly roleBinding: k8s.KubeRoleBinding;

  constructor(scope: Construct, id: string, props: OperatorRbacProps) {
    super(scope, id);
    const name = props.name ?? OPERATOR_NAME;
    const metadata = { name, namespace: props.namespace, labels: operatorLabels('rbac') };
    const leaderElection = props.leaderElection ?? true;

    this.serviceAccount = new k8s.KubeServiceAccount(this, 'ServiceAccount', { metadata });
    this.role = new k8s.KubeRole(this, 'Role', {
      metadata,
      rules: operatorRoleRules(props.group, leaderElection && { leaseName: props.leaseName ?? LEASE_NAME }),
    });
    this.roleBinding = new k8s.KubeRoleBinding(this, 'RoleBinding', {
      metadata,
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
      subjects: [{ kind: 'ServiceAccount', name, namespace: props.namespace }],
    });
  }
}
