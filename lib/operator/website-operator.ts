import { k8s } from 'cdk8s-plus-34';
import { Construct } from 'constructs';
import { RESTRICTED_NAMESPACE_LABELS } from '../security.ts';
import { type OperatorResources, OperatorDeployment } from './operator-deployment.ts';
import { OperatorRbac } from './operator-rbac.ts';
import { LEASE_NAME, OPERATOR_NAMESPACE } from './names.ts';
import { WebhookService } from './webhook-service.ts';

export interface WebsiteOperatorProps {
  /**
   * Namespace the operator runs in and whose Websites it reconciles.
   * @default 'website-system'
   */
  readonly namespace?: string;
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
   * Container image, pinned by tag or digest.
   * @default 'website-operator:0.1.0'
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
   * CPU and memory requests and limit.
   * @default DEFAULT_OPERATOR_RESOURCES
   */
  readonly resources?: OperatorResources;
}

/** Everything that deploys the operator: namespace, ServiceAccount, Role, RoleBinding, Deployment, webhook Service. */
export class WebsiteOperator extends Construct {
  public readonly namespace: string;
  public readonly rbac: OperatorRbac;
  public readonly deployment: OperatorDeployment;
  public readonly webhookService: WebhookService;

  constructor(scope: Construct, id: string, props: WebsiteOperatorProps = {}) {
    super(scope, id);
    this.namespace = props.namespace ?? OPERATOR_NAMESPACE;
    const leaderElection = props.leaderElection ?? true;

    if (props.createNamespace ?? true) {
      new k8s.KubeNamespace(this, 'Namespace', {
        metadata: { name: this.namespace, labels: { ...RESTRICTED_NAMESPACE_LABELS } },
      });
    }
    this.rbac = new OperatorRbac(this, 'Rbac', {
      namespace: this.namespace,
      group: props.group,
      leaderElection,
      leaseName: LEASE_NAME,
    });
    this.deployment = new OperatorDeployment(this, 'Deployment', {
      namespace: this.namespace,
      serviceAccountName: this.rbac.serviceAccount.name,
      image: props.image,
      replicas: props.replicas,
      group: props.group,
      leaderElection,
      leaseName: LEASE_NAME,
      otlpEndpoint: props.otlpEndpoint,
      resources: props.resources,
    });
    this.webhookService = new WebhookService(this, 'WebhookService', { namespace: this.namespace });
  }
}
