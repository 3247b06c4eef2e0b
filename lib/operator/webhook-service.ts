import { k8s } from 'cdk8s-plus-34';
import { Construct } from 'constructs';
import { OPERATOR_NAME, operatorLabels, WEBHOOK_SERVICE_NAME, WEBHOOK_SERVICE_PORT } from './names.ts';

export interface WebhookServiceProps {
  /** Namespace of the operator. */
  readonly namespace: string;
  /**
   * Service name; the CRD's conversion webhook points at it.
   * @default 'website-operator-webhook'
   */
  readonly name?: string;
}

/** The Service the API server calls for conversion: port 443 to the operator's 9443. */
export class WebhookService extends Construct {
  public readonly service: k8s.KubeService;

  constructor(scope: Construct, id: string, props: WebhookServiceProps) {
    super(scope, id);
    this.service = new k8s.KubeService(this, 'Resource', {
      metadata: {
        name: props.name ?? WEBHOOK_SERVICE_NAME,
        namespace: props.namespace,
        labels: operatorLabels('webhook'),
      },
      spec: {
        type: 'ClusterIP',
        selector: { 'app.kubernetes.io/name': OPERATOR_NAME, 'app.kubernetes.io/component': 'controller' },
        ports: [
          {
            name: 'webhook',
            port: WEBHOOK_SERVICE_PORT,
            targetPort: k8s.IntOrString.fromString('webhook'),
            protocol: 'TCP',
          },
        ],
      },
    });
  }
}
