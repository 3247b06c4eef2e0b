import { k8s } from 'cdk8s-plus-34';
import { Construct } from 'constructs';
import { DEFAULT_GROUP } from '../website/schema.ts';
import { LEASE_NAME, OPERATOR_NAME, WEBHOOK_SECRET_NAME, type WebhookCertificateMode, operatorLabels } from './names.ts';

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
  /**
   * Who fills the conversion webhook's TLS Secret. `operator` adds the rules of
   * webhookSecretRules (to the Role) and webhookCrdRules (to a ClusterRole); `cert-manager` adds
   * nothing, since cert-manager writes the Secret and its cainjector the CRD.
   * @default 'operator'
   */
  readonly webhookCertificates?: WebhookCertificateMode;
  /**
   * Name of the conversion webhook's TLS Secret.
   * @default 'website-operator-webhook-tls'
   */
  readonly webhookSecretName?: string;
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

/**
 * Built-in certificate mode, in the operator's namespace, on the webhook's TLS Secret only:
 * - `create`, which RBAC cannot limit by resourceNames (the authorizer sees no name before the
 *   object exists): the operator creates the Secret on first start. This allows creating other
 *   Secrets in the namespace too, but reading none of them;
 * - `get` and `update` of that one Secret: read it, and renew it with the resourceVersion read.
 * No list, watch or delete: the operator polls the one Secret it knows by name.
 */
export function webhookSecretRules(secretName: string = WEBHOOK_SECRET_NAME): k8s.PolicyRule[] {
  return [
    { apiGroups: [''], resources: ['secrets'], verbs: ['create'] },
    { apiGroups: [''], resources: ['secrets'], resourceNames: [secretName], verbs: ['get', 'update'] },
  ];
}

/**
 * Built-in certificate mode, cluster-wide (CRDs are cluster-scoped), on the Website CRD only:
 * `get` to compare its conversion webhook's caBundle, `patch` to set it when the CA changes (only
 * the caBundle: the Service it calls is the manifest's). RBAC cannot narrow a patch to one field,
 * so this allows changing the rest of this one CRD too; cert-manager mode needs no such rule.
 */
export function webhookCrdRules(group: string = DEFAULT_GROUP): k8s.PolicyRule[] {
  return [
    {
      apiGroups: ['apiextensions.k8s.io'],
      resources: ['customresourcedefinitions'],
      resourceNames: [`websites.${group}`],
      verbs: ['get', 'patch'],
    },
  ];
}

/**
 * The operator's ServiceAccount, its least-privilege Role and the RoleBinding between them; in
 * built-in certificate mode also a ClusterRole and ClusterRoleBinding for the Website CRD, named
 * after the namespace because cluster-scoped names must not collide between installations.
 */
export class OperatorRbac extends Construct {
  public readonly serviceAccount: k8s.KubeServiceAccount;
  public readonly role: k8s.KubeRole;
  public readonly roleBinding: k8s.KubeRoleBinding;
  /** Built-in certificate mode only: the Website CRD rules (webhookCrdRules). */
  public readonly clusterRole?: k8s.KubeClusterRole;
  public readonly clusterRoleBinding?: k8s.KubeClusterRoleBinding;

  constructor(scope: Construct, id: string, props: OperatorRbacProps) {
    super(scope, id);
    const name = props.name ?? OPERATOR_NAME;
    const metadata = { name, namespace: props.namespace, labels: operatorLabels('rbac') };
    const leaderElection = props.leaderElection ?? true;
    const operatorCertificates = (props.webhookCertificates ?? 'operator') === 'operator';
    const subjects = [{ kind: 'ServiceAccount', name, namespace: props.namespace }];

    this.serviceAccount = new k8s.KubeServiceAccount(this, 'ServiceAccount', { metadata });
    this.role = new k8s.KubeRole(this, 'Role', {
      metadata,
      rules: [
        ...operatorRoleRules(props.group, leaderElection && { leaseName: props.leaseName ?? LEASE_NAME }),
        ...(operatorCertificates ? webhookSecretRules(props.webhookSecretName) : []),
      ],
    });
    this.roleBinding = new k8s.KubeRoleBinding(this, 'RoleBinding', {
      metadata,
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
      subjects,
    });
    if (operatorCertificates) {
      const clusterMetadata = { name: `${name}-webhook-${props.namespace}`, labels: operatorLabels('rbac') };
      this.clusterRole = new k8s.KubeClusterRole(this, 'ClusterRole', { metadata: clusterMetadata, rules: webhookCrdRules(props.group) });
      this.clusterRoleBinding = new k8s.KubeClusterRoleBinding(this, 'ClusterRoleBinding', {
        metadata: clusterMetadata,
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: clusterMetadata.name },
        subjects,
      });
    }
  }
}
