import { k8s } from 'cdk8s-plus-34';
import { Construct } from 'constructs';
import { assertOneOf, optionalFeature } from '../props.ts';
import { RESTRICTED_NAMESPACE_LABELS } from '../security.ts';
import { DEFAULT_GROUP } from '../website/schema.ts';
import type { ConversionWebhookService, IWebsiteCrdOperator } from '../website/website-crd.ts';
import { type WebsiteGateway, websiteGatewayProblems } from '../workload/website-route.ts';
import { CertManagerWebhookCertificate } from './cert-manager-webhook-certificate.ts';
import {
  LEASE_NAME,
  OPERATOR_NAME,
  OPERATOR_NAMESPACE,
  OPERATOR_PORTS,
  operatorLabels,
  WEBHOOK_CERTIFICATE_MODES,
  WEBHOOK_PATH,
  WEBHOOK_SECRET_NAME,
  WEBHOOK_SERVICE_NAME,
  WEBHOOK_SERVICE_PORT,
  type WebhookCertificateMode,
} from './names.ts';
import { OperatorDeployment, type OperatorResources } from './operator-deployment.ts';
import { OperatorFlowControl, type OperatorFlowControlOptions } from './operator-flow-control.ts';
import { OperatorNetworkPolicy, type OperatorNetworkPolicyOptions } from './operator-network-policy.ts';
import { OperatorRbac } from './operator-rbac.ts';
import type { WatchNamespaces } from './watch-namespaces.ts';
import { WebhookService } from './webhook-service.ts';
import { WebsiteIngressPolicy } from './website-ingress-policy.ts';

export interface WebsiteOperatorProps {
  /**
   * Namespace the operator runs in (and, by default, whose Websites it reconciles).
   * @default 'website-system'
   */
  readonly namespace?: string;
  /**
   * The namespaces whose Websites the operator reconciles, and where it is granted the Website
   * rules (spec §5's Role: websites, deployments, services, events):
   * - `WatchNamespaces.of('team-a', 'team-b')`: a Role and RoleBinding in each; outside the
   *   operator's namespace both are named after it (`website-operator-website-system`). Each
   *   namespace must exist before its Role can be applied. List `namespace` too to keep
   *   reconciling the Websites there;
   * - `WatchNamespaces.all()`: a ClusterRole and ClusterRoleBinding, named after the operator's
   *   namespace too.
   * The Lease and webhook Secret rules stay in the operator's namespace either way. The Deployment
   * passes the choice as `WATCH_NAMESPACE`.
   * @default the operator's own namespace only: the spec's single Role
   */
  readonly watchNamespaces?: WatchNamespaces;
  /**
   * Create the namespace, labelled to enforce Pod Security `restricted`.
   * @default true
   */
  readonly createNamespace?: boolean;
  /**
   * API group of the Website resource.
   * @default 'web.example.com'
   */
  readonly group?: string;
  /**
   * The operator's container image, as a fully qualified reference: registry host, repository,
   * and a tag or digest, for example `registry.acme.io/platform/website-operator:0.1.0` or
   * `ghcr.io/website-stack/website-operator@sha256:<digest>`. A short name such as
   * `website-operator:0.1.0` would be resolved by each node's container runtime in its own way
   * (Docker Hub for containerd, a search list for CRI-O). Build your own from the Dockerfile, or
   * use the published one.
   * @default DEFAULT_OPERATOR_IMAGE, 'ghcr.io/website-stack/website-operator:0.1.0'
   */
  readonly image?: string;
  /**
   * Operator pods; more than one needs leader election.
   * @default 1
   */
  readonly replicas?: number;
  /**
   * Elect a leader on a Lease so that only one replica reconciles.
   * @default true
   */
  readonly leaderElection?: boolean;
  /**
   * Base URL of the OTLP/HTTP endpoint the operator sends its traces to.
   * @default no tracing
   */
  readonly otlpEndpoint?: string;
  /**
   * Websites the operator is sized to hold: sets its memory request and limit and V8's heap cap
   * (OperatorDeployment.resourcesFor), and WEBSITE_CAPACITY, above which it logs a warning. With `resources`
   * too, their memory limit must hold this many.
   * @default DEFAULT_OPERATOR_CAPACITY (5000); with `resources` only, what their memory limit holds
   */
  readonly capacity?: number;
  /**
   * CPU and memory requests and limit.
   * @default OperatorDeployment.resourcesFor(capacity)
   */
  readonly resources?: OperatorResources;
  /**
   * Who provides the conversion webhook's certificate:
   * - `operator`: the operator creates a CA and serving certificate in Secret
   *   website-operator-webhook-tls, renews them and sets the CRD's caBundle. Needs no add-on; adds
   *   RBAC on that Secret (Role) and on the Website CRD (ClusterRole), each limited by name;
   * - `cert-manager`: cert-manager (installed separately) issues it from a self-signed CA; the Secret
   *   is mounted into the pod. No Secret or CRD RBAC. The WebsiteCrd given this operator carries
   *   the annotation with which cert-manager's cainjector sets the caBundle.
   * @default 'operator'
   */
  readonly webhookCertificates?: WebhookCertificateMode;
  /**
   * Give the operator's ServiceAccount a priority level of its own in the API server's Priority
   * and Fairness (OperatorFlowControl: a FlowSchema and a PriorityLevelConfiguration, both
   * cluster-scoped, Kubernetes 1.29 or later), with OperatorFlowControl's defaults unless
   * `flowControlOptions` tunes them. Off, the operator's requests fall into the built-in
   * `workload-low` level shared by every ServiceAccount.
   * @default false, or true when `flowControlOptions` is set
   */
  readonly flowControl?: boolean;
  /** Tunes `flowControl` (and turns it on). @default OperatorFlowControl's defaults */
  readonly flowControlOptions?: OperatorFlowControlOptions;
  /**
   * NetworkPolicies (OperatorNetworkPolicy): a default deny for this package's pods in the
   * namespace, and for the operator's pods exactly the flows it needs: the API server to the
   * conversion webhook (9443), Prometheus to the metrics port (8080); out to the API server, DNS
   * and, with `otlpEndpoint`, the traces' endpoint. By default any address on the webhook and API
   * server ports (whose addresses are each cluster's own), kube-dns, and Prometheus in
   * `monitoring`; `networkPolicyOptions` says where those are. They take effect only where the
   * cluster's network plugin enforces NetworkPolicies. Websites, also in this namespace, are not
   * selected.
   * @default true
   */
  readonly networkPolicy?: boolean;
  /** Where the peers of `networkPolicy` are. @default OperatorNetworkPolicy's defaults */
  readonly networkPolicyOptions?: OperatorNetworkPolicyOptions;
  /**
   * The platform's Gateway (Gateway API v1; the Gateway, its implementation and the Gateway API
   * CRDs are the platform's): each Website gets an HTTPRoute attached to it for its host,
   * `<name>-<namespace>.<domain>` or its `spec.host` under `hostSuffixes`, and `status.url` becomes
   * that address once the Gateway accepts the route. Adds the HTTPRoute rules to the Website rules
   * and a Role to read Gateways in the Gateway's namespace (which must exist); unless
   * `networkPolicy` is false, a NetworkPolicy in each watched namespace opens the Websites' web
   * port to the Gateway's data plane (WebsiteIngressPolicy, `gateway.dataPlane`).
   * @default no Gateway: no routes, no Gateway API RBAC, `status.url` the Service's in-cluster address
   */
  readonly gateway?: WebsiteGateway;
}

/**
 * Everything that deploys the operator: namespace, ServiceAccount, Roles and RoleBindings (in each
 * watched namespace, or a ClusterRole for all of them: `watchNamespaces`), Deployment,
 * webhook Service, and what the webhook certificate mode needs (a ClusterRole and its binding, or
 * cert-manager Issuers and Certificates), NetworkPolicies; with `flowControl`, its FlowSchema and
 * priority level.
 *
 * Pass it to the Website CRD, which takes its group, webhook Service and annotations from it:
 * `new WebsiteCrd(chart, 'crd', { operator })`.
 */
export class WebsiteOperator extends Construct implements IWebsiteCrdOperator {
  public readonly namespace: string;
  /** API group of the Websites it reconciles. */
  public readonly group: string;
  /** Where it serves the CRD's conversion webhook: its webhook Service. */
  public readonly conversionWebhook: ConversionWebhookService;
  public readonly rbac: OperatorRbac;
  public readonly deployment: OperatorDeployment;
  public readonly webhookService: WebhookService;
  /** cert-manager mode only: the Issuers and Certificates of the webhook certificate. */
  public readonly webhookCertificate?: CertManagerWebhookCertificate;
  /** With `flowControl` only: the operator's FlowSchema and PriorityLevelConfiguration. */
  public readonly flowControl?: OperatorFlowControl;
  /** Unless `networkPolicy` is false: the default deny and the operator's own NetworkPolicy. */
  public readonly networkPolicy?: OperatorNetworkPolicy;
  /**
   * With a `gateway` (and `networkPolicy` not false): in each namespace it watches, the policy
   * opening the Websites' web port to the Gateway's data plane. None when it watches all namespaces.
   */
  public readonly websiteIngressPolicies: WebsiteIngressPolicy[] = [];
  /**
   * Annotations the Website CRD needs for this operator's webhook certificate mode (cert-manager's
   * CA injection; none in operator mode, where the operator sets the caBundle itself). A WebsiteCrd
   * given this operator adds them.
   */
  public readonly crdAnnotations: Record<string, string>;

  constructor(scope: Construct, id: string, props: WebsiteOperatorProps = {}) {
    super(scope, id);
    const where = `WebsiteOperator at '${this.node.path}'`;
    this.namespace = props.namespace ?? OPERATOR_NAMESPACE;
    this.group = props.group ?? DEFAULT_GROUP;
    const leaderElection = props.leaderElection ?? true;
    assertOneOf(where, 'webhookCertificates', props.webhookCertificates, WEBHOOK_CERTIFICATE_MODES);
    const webhookCertificates = props.webhookCertificates ?? 'operator';
    const gatewayProblems = props.gateway ? websiteGatewayProblems(props.gateway) : [];
    if (gatewayProblems.length > 0) throw new Error(`${where}: gateway ${gatewayProblems.join('; ')}`);

    if (props.createNamespace ?? true) {
      new k8s.KubeNamespace(this, 'Namespace', {
        metadata: { name: this.namespace, labels: { ...RESTRICTED_NAMESPACE_LABELS } },
      });
    }
    this.rbac = new OperatorRbac(this, 'Rbac', {
      namespace: this.namespace,
      watchNamespaces: props.watchNamespaces,
      group: this.group,
      leaderElection,
      leaseName: LEASE_NAME,
      webhookCertificates,
      webhookSecretName: WEBHOOK_SECRET_NAME,
      gateway: props.gateway,
    });
    this.deployment = new OperatorDeployment(this, 'Deployment', {
      namespace: this.namespace,
      watchNamespaces: props.watchNamespaces,
      serviceAccountName: this.rbac.serviceAccount.name,
      image: props.image,
      replicas: props.replicas,
      group: this.group,
      leaderElection,
      leaseName: LEASE_NAME,
      otlpEndpoint: props.otlpEndpoint,
      capacity: props.capacity,
      resources: props.resources,
      webhookCertificates,
      webhookSecretName: WEBHOOK_SECRET_NAME,
      webhookServiceName: WEBHOOK_SERVICE_NAME,
      gateway: props.gateway,
    });
    this.webhookService = new WebhookService(this, 'WebhookService', {
      namespace: this.namespace,
      name: WEBHOOK_SERVICE_NAME,
    });
    this.conversionWebhook = {
      name: WEBHOOK_SERVICE_NAME,
      namespace: this.namespace,
      port: WEBHOOK_SERVICE_PORT,
      path: WEBHOOK_PATH,
    };
    if (webhookCertificates === 'cert-manager') {
      this.webhookCertificate = new CertManagerWebhookCertificate(this, 'WebhookCertificate', {
        namespace: this.namespace,
        serviceName: WEBHOOK_SERVICE_NAME,
        secretName: WEBHOOK_SECRET_NAME,
      });
    }
    this.crdAnnotations = this.webhookCertificate?.crdAnnotations ?? {};
    const flowControl = optionalFeature(where, 'flowControl', props.flowControl, props.flowControlOptions, false);
    if (flowControl) {
      this.flowControl = new OperatorFlowControl(this, 'FlowControl', {
        ...flowControl,
        serviceAccount: { name: this.rbac.serviceAccount.name, namespace: this.namespace },
      });
    }
    const networkPolicy = optionalFeature(
      where,
      'networkPolicy',
      props.networkPolicy,
      props.networkPolicyOptions,
      true,
    );
    if (networkPolicy) {
      this.networkPolicy = new OperatorNetworkPolicy(this, 'NetworkPolicy', {
        ...networkPolicy,
        namespace: this.namespace,
        name: OPERATOR_NAME,
        labels: operatorLabels('controller'),
        podSelector: { 'app.kubernetes.io/name': OPERATOR_NAME },
        webhookPort: OPERATOR_PORTS.webhook,
        metricsPort: OPERATOR_PORTS.metrics,
        ...(props.otlpEndpoint ? { otlpEndpoint: props.otlpEndpoint } : {}),
      });
      // With WatchNamespaces.all() there is no list of namespaces to open: add a
      // WebsiteIngressPolicy to each namespace whose Websites the Gateway serves.
      const gateway = props.gateway;
      const watched = props.watchNamespaces ? props.watchNamespaces.namespaces : [this.namespace];
      for (const namespace of gateway ? (watched ?? []) : [])
        this.websiteIngressPolicies.push(
          new WebsiteIngressPolicy(this, `WebsiteIngress-${namespace}`, {
            namespace,
            from: gateway!.dataPlane ?? [
              { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': gateway!.namespace } } },
            ],
          }),
        );
    }
  }
}
