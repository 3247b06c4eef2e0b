import { k8s } from 'cdk8s-plus-34';
import { Construct } from 'constructs';
import { DEFAULT_GROUP } from '../website/schema.ts';
import { GATEWAY_API_GROUP, type WebsiteGateway } from '../workload/website-route.ts';
import { websiteOwns } from '../workload/website-workload.ts';
import {
  LEASE_NAME,
  OPERATOR_NAME,
  operatorLabels,
  WEBHOOK_SECRET_NAME,
  type WebhookCertificateMode,
} from './names.ts';
import type { WatchNamespaces } from './watch-namespaces.ts';

export interface OperatorRbacProps {
  /** Namespace of the ServiceAccount, and of the Role and RoleBinding of the Lease and webhook Secret. */
  readonly namespace: string;
  /**
   * Where the operator is granted the Website rules (websiteRules): a Role and RoleBinding in each
   * namespace of a list (in its own namespace, the rules join its Role there), or a ClusterRole
   * and ClusterRoleBinding for all namespaces.
   * @default the operator's own namespace only: one Role with the Website, Lease and Secret rules
   */
  readonly watchNamespaces?: WatchNamespaces;
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
   * The platform's Gateway the Websites' routes attach to: the Website rules grant HTTPRoutes too,
   * and a Role in the Gateway's namespace lets the operator read its Gateways (gatewayRules).
   * @default no Gateway: nothing of the Gateway API is granted
   */
  readonly gateway?: WebsiteGateway;
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
 * The Role rules of spec §5, for `group`, plus `patch` on deployments and services (every kind a
 * Website owns, websiteOwns; with a Gateway, httproutes too): the operator ensures its children by
 * server-side apply, which is an HTTP PATCH (creating through apply needs `create` too, which the
 * spec grants). Granted in every namespace the operator watches.
 */
export function websiteRules(group: string = DEFAULT_GROUP, gateway = false): k8s.PolicyRule[] {
  return [
    {
      apiGroups: [group],
      resources: ['websites', 'websites/status'],
      verbs: ['get', 'list', 'watch', 'update', 'patch'],
    },
    ...websiteOwns(gateway).map((owned) => ({
      apiGroups: [owned.group],
      resources: [owned.resource],
      verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'],
    })),
    { apiGroups: [''], resources: ['events'], verbs: ['create'] },
  ];
}

/**
 * In the Gateway's namespace: read its Gateways (whose listeners tell http from https for
 * `status.url`). Nothing else of the Gateway: the routes' status says whether it accepted them.
 */
export function gatewayRules(): k8s.PolicyRule[] {
  return [{ apiGroups: [GATEWAY_API_GROUP], resources: ['gateways'], verbs: ['get', 'list', 'watch'] }];
}

/**
 * The Lease rules of leader election, in the operator's namespace: create cannot be limited by
 * resourceNames in RBAC, so it is a rule of its own; get and update only the named Lease.
 */
export function leaseRules(leaseName: string = LEASE_NAME): k8s.PolicyRule[] {
  return [
    { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create'] },
    { apiGroups: ['coordination.k8s.io'], resources: ['leases'], resourceNames: [leaseName], verbs: ['get', 'update'] },
  ];
}

/**
 * The Role of an operator that watches its own namespace: websiteRules, plus leaseRules when
 * leader election is on. Pass `false` for `leaderElection` when the operator runs without it.
 */
export function operatorRoleRules(
  group: string = DEFAULT_GROUP,
  leaderElection: { readonly leaseName: string } | false = { leaseName: LEASE_NAME },
): k8s.PolicyRule[] {
  return [...websiteRules(group), ...(leaderElection ? leaseRules(leaderElection.leaseName) : [])];
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
 * The operator's ServiceAccount and its least-privilege RBAC:
 * - in its own namespace, a Role and RoleBinding: the Website rules when it watches that namespace
 *   (the default), the Lease rules, and in built-in certificate mode the webhook Secret's;
 * - in each other namespace it watches, a Role and RoleBinding with the Website rules; or, when it
 *   watches all namespaces, a ClusterRole and ClusterRoleBinding with them;
 * - in built-in certificate mode, a ClusterRole and ClusterRoleBinding for the Website CRD.
 * Names of objects outside the operator's namespace carry that namespace, so two installations
 * (say, for two API groups) watching the same namespaces do not overwrite each other's grants.
 */
export class OperatorRbac extends Construct {
  public readonly serviceAccount: k8s.KubeServiceAccount;
  /** In the operator's namespace; absent when the operator needs nothing there. */
  public readonly role?: k8s.KubeRole;
  public readonly roleBinding?: k8s.KubeRoleBinding;
  /** The Website rules in each watched namespace other than the operator's own. */
  public readonly watchRoles: k8s.KubeRole[] = [];
  public readonly watchRoleBindings: k8s.KubeRoleBinding[] = [];
  /** Watching all namespaces only: the Website rules, cluster-wide. */
  public readonly watchClusterRole?: k8s.KubeClusterRole;
  public readonly watchClusterRoleBinding?: k8s.KubeClusterRoleBinding;
  /** With a Gateway outside the operator's namespace: the Gateway rules there (gatewayRules). */
  public readonly gatewayRole?: k8s.KubeRole;
  public readonly gatewayRoleBinding?: k8s.KubeRoleBinding;
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
    const watched = props.watchNamespaces ? props.watchNamespaces.namespaces : [props.namespace];
    const bind = (kind: 'Role' | 'ClusterRole', roleName: string) => ({
      apiGroup: 'rbac.authorization.k8s.io',
      kind,
      name: roleName,
    });

    this.serviceAccount = new k8s.KubeServiceAccount(this, 'ServiceAccount', { metadata });
    const gateway = props.gateway !== undefined;
    const gatewayHere = props.gateway?.namespace === props.namespace;
    const rules = [
      ...(watched?.includes(props.namespace) ? websiteRules(props.group, gateway) : []),
      ...(gatewayHere ? gatewayRules() : []),
      ...(leaderElection ? leaseRules(props.leaseName) : []),
      ...(operatorCertificates ? webhookSecretRules(props.webhookSecretName) : []),
    ];
    if (rules.length > 0) {
      this.role = new k8s.KubeRole(this, 'Role', { metadata, rules });
      this.roleBinding = new k8s.KubeRoleBinding(this, 'RoleBinding', {
        metadata,
        roleRef: bind('Role', name),
        subjects,
      });
    }
    for (const namespace of watched ?? []) {
      if (namespace === props.namespace) continue;
      const watchMetadata = { name: `${name}-${props.namespace}`, namespace, labels: operatorLabels('rbac') };
      this.watchRoles.push(
        new k8s.KubeRole(this, `Role-${namespace}`, {
          metadata: watchMetadata,
          rules: [
            ...websiteRules(props.group, gateway),
            ...(props.gateway?.namespace === namespace ? gatewayRules() : []),
          ],
        }),
      );
      this.watchRoleBindings.push(
        new k8s.KubeRoleBinding(this, `RoleBinding-${namespace}`, {
          metadata: watchMetadata,
          roleRef: bind('Role', watchMetadata.name),
          subjects,
        }),
      );
    }
    if (props.gateway && !gatewayHere && !watched?.includes(props.gateway.namespace)) {
      const gatewayMetadata = {
        name: `${name}-gateway-${props.namespace}`,
        namespace: props.gateway.namespace,
        labels: operatorLabels('rbac'),
      };
      this.gatewayRole = new k8s.KubeRole(this, 'GatewayRole', { metadata: gatewayMetadata, rules: gatewayRules() });
      this.gatewayRoleBinding = new k8s.KubeRoleBinding(this, 'GatewayRoleBinding', {
        metadata: gatewayMetadata,
        roleRef: bind('Role', gatewayMetadata.name),
        subjects,
      });
    }
    // A ClusterRole bound to the ServiceAccount; `prefix` tells the two apart in construct ids.
    const clusterRole = (prefix: string, roleName: string, clusterRules: k8s.PolicyRule[]) => {
      const clusterMetadata = { name: roleName, labels: operatorLabels('rbac') };
      return [
        new k8s.KubeClusterRole(this, `${prefix}ClusterRole`, { metadata: clusterMetadata, rules: clusterRules }),
        new k8s.KubeClusterRoleBinding(this, `${prefix}ClusterRoleBinding`, {
          metadata: clusterMetadata,
          roleRef: bind('ClusterRole', roleName),
          subjects,
        }),
      ] as const;
    };
    if (!watched)
      [this.watchClusterRole, this.watchClusterRoleBinding] = clusterRole(
        'Watch',
        `${name}-${props.namespace}`,
        websiteRules(props.group, gateway),
      );
    if (operatorCertificates)
      [this.clusterRole, this.clusterRoleBinding] = clusterRole(
        '',
        `${name}-webhook-${props.namespace}`,
        webhookCrdRules(props.group),
      );
  }
}
