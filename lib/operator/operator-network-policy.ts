import type { k8s } from 'cdk8s-plus-34';
import { Construct } from 'constructs';
import {
  type ClusterPeers,
  DEFAULT_API_SERVER_PORTS,
  defaultDenyPolicy,
  dnsEgress,
  egressTo,
  ingressFrom,
  PROMETHEUS_PEERS,
  podNetworkPolicy,
  ports,
  urlPort,
} from '../network-policy.ts';

/**
 * Where the API server is, for a pod that calls it. The API server is not a pod: the `kubernetes`
 * Service's endpoints are the control-plane nodes' addresses (kubeadm, kwok, k3s), or a range of
 * the cloud provider's (managed clusters), reached through the Service's cluster IP, which the
 * node rewrites to one of them before any policy sees the packet. No selector names them, and
 * their addresses are each cluster's own, so by default egress is open on the API server's ports
 * to any address. Narrow it when you know them: `kubectl get endpointslices -n default -l
 * kubernetes.io/service-name=kubernetes` lists them, for example
 * `{ peers: [{ ipBlock: { cidr: '10.0.0.0/28' } }], ports: [6443] }`.
 */
export interface ApiServerPeers {
  /** @default any address (on `ports` only) */
  readonly peers?: k8s.NetworkPolicyPeer[];
  /** @default [443, 6443] */
  readonly ports?: number[];
}

export interface OperatorNetworkPolicyOptions extends ClusterPeers {
  /**
   * Who may call the conversion webhook (the pod's port 9443). Only the API server does, but like
   * `apiServer` it has no selector, and its source address is each cluster's own (a control-plane
   * node, a provider's range, a konnectivity agent pod), so by default any address may reach that
   * one port: the webhook only converts Websites between versions, over TLS, and holds nothing
   * to steal.
   * @default any address (on port 9443 only)
   */
  readonly webhookFrom?: k8s.NetworkPolicyPeer[];
  /** @default any address on ports 443 and 6443 */
  readonly apiServer?: ApiServerPeers;
  /**
   * Where the operator's traces go, when it sends them (`otlpEndpoint`): egress on that URL's port.
   * @default any address (on the endpoint's port only)
   */
  readonly otlpTo?: k8s.NetworkPolicyPeer[];
}

export interface OperatorNetworkPolicyProps extends OperatorNetworkPolicyOptions {
  readonly namespace: string;
  /** Name of the NetworkPolicy. */
  readonly name: string;
  readonly labels: Record<string, string>;
  /** Labels of the operator's pods. */
  readonly podSelector: Record<string, string>;
  /** Container ports the others may reach: the webhook's and the metrics'. Without a webhook port, no ingress but metrics. */
  readonly webhookPort?: number;
  readonly metricsPort?: number;
  /** The OTLP/HTTP base URL the operator sends traces to. @default none */
  readonly otlpEndpoint?: string;
}

/** Egress to the API server. */
export function apiServerEgress(apiServer: ApiServerPeers = {}): k8s.NetworkPolicyEgressRule {
  return egressTo(apiServer.peers, ports('TCP', ...(apiServer.ports ?? DEFAULT_API_SERVER_PORTS)));
}

/**
 * The network an operator pod needs, and nothing else: the package's default deny in its
 * namespace, and for its own pods ingress from the API server to the conversion webhook and from
 * Prometheus to the metrics port; egress to the API server, DNS, and the traces' endpoint. Its
 * probes come from its node, which no policy blocks.
 */
export class OperatorNetworkPolicy extends Construct {
  public readonly defaultDeny: k8s.KubeNetworkPolicy;
  public readonly policy: k8s.KubeNetworkPolicy;

  constructor(scope: Construct, id: string, props: OperatorNetworkPolicyProps) {
    super(scope, id);
    // The same object in both operators' units (they are alternatives in one namespace), like their CRD.
    this.defaultDeny = defaultDenyPolicy(this, 'DefaultDeny', 'website-stack-default-deny', props.namespace);
    const ingress: k8s.NetworkPolicyIngressRule[] = [];
    if (props.webhookPort !== undefined) ingress.push(ingressFrom(props.webhookFrom, ports('TCP', props.webhookPort)));
    if (props.metricsPort !== undefined)
      ingress.push(ingressFrom(props.prometheus ?? PROMETHEUS_PEERS, ports('TCP', props.metricsPort)));
    const egress = [apiServerEgress(props.apiServer), dnsEgress(props.dns)];
    if (props.otlpEndpoint) egress.push(egressTo(props.otlpTo, ports('TCP', urlPort(props.otlpEndpoint))));
    this.policy = podNetworkPolicy(this, 'Resource', {
      name: props.name,
      namespace: props.namespace,
      labels: props.labels,
      podSelector: props.podSelector,
      ingress,
      egress,
    });
  }
}
