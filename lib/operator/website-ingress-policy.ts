import { k8s } from 'cdk8s-plus-34';
import { Construct } from 'constructs';
import { ingressFrom, PART_OF, ports } from '../network-policy.ts';
import { WEB_PORT } from '../workload/page.ts';

export interface WebsiteIngressPolicyProps {
  /** The namespace whose Websites it opens. */
  readonly namespace: string;
  /** Who may reach the Websites' web servers: the Gateway's data plane (its proxies' pods). */
  readonly from: k8s.NetworkPolicyPeer[];
}

/**
 * A NetworkPolicy `website-ingress-from-gateway` that opens the web port (8080) of every Website's
 * pods in `namespace` (labelled app.kubernetes.io/name=website) to the Gateway's data plane, as a
 * namespace that isolates its pods needs for its Websites to be served through the Gateway.
 * Ingress only (the pods reach nothing). Like any policy, it isolates the pods it selects: once it
 * applies, a Website's pods accept what this or another policy allows, and probes from their own
 * node; other in-cluster clients of the Website's Service need a policy of their own.
 */
export class WebsiteIngressPolicy extends Construct {
  public readonly policy: k8s.KubeNetworkPolicy;

  constructor(scope: Construct, id: string, props: WebsiteIngressPolicyProps) {
    super(scope, id);
    if (props.from.length === 0)
      throw new Error(
        `WebsiteIngressPolicy at '${this.node.path}': name the Gateway's data plane in 'from' (a policy with no peers would shut the Websites off)`,
      );
    this.policy = new k8s.KubeNetworkPolicy(this, 'Policy', {
      metadata: { name: 'website-ingress-from-gateway', namespace: props.namespace, labels: { ...PART_OF } },
      spec: {
        podSelector: { matchLabels: { 'app.kubernetes.io/name': 'website' } },
        policyTypes: ['Ingress'],
        ingress: [ingressFrom(props.from, ports('TCP', WEB_PORT))],
      },
    });
  }
}
