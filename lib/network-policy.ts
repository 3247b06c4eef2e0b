import { k8s } from 'cdk8s-plus-34';
import type { Construct } from 'constructs';

// NetworkPolicy building blocks the operator's and the trace stack's policies share. Every
// policy here lists both policy types, so a pod it selects accepts and opens exactly the flows
// listed, across all the policies that select it. Two things no policy can block (Kubernetes
// "Network Policies": what you can't do): traffic from the pod's own node, which is how the
// kubelet's probes arrive, and loopback inside the pod.

/** Peers of a flow; `undefined` means any address, limited only by the flow's ports. */
export type Peers = readonly k8s.NetworkPolicyPeer[] | undefined;

/** The cluster's DNS: CoreDNS (or kube-dns) pods in kube-system, as kubeadm and most distributions label them. */
export const KUBE_DNS_PEERS: readonly k8s.NetworkPolicyPeer[] = [
  {
    namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'kube-system' } },
    podSelector: { matchLabels: { 'k8s-app': 'kube-dns' } },
  },
];

/** Prometheus as the Prometheus Operator (kube-prometheus-stack) runs it: pods named `prometheus` in namespace `monitoring`. */
export const PROMETHEUS_PEERS: readonly k8s.NetworkPolicyPeer[] = [
  {
    namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } },
    podSelector: { matchLabels: { 'app.kubernetes.io/name': 'prometheus' } },
  },
];

/** Every pod of the cluster, in any namespace (and nothing outside the cluster). */
export const ALL_PODS: readonly k8s.NetworkPolicyPeer[] = [{ namespaceSelector: {} }];

/** Ports the API server listens on behind the `kubernetes` Service: 443 (most managed clusters) or 6443 (kubeadm, kwok, k3s). */
export const DEFAULT_API_SERVER_PORTS: readonly number[] = [443, 6443];

/** Where the cluster's shared services are, for the flows every component needs. */
export interface ClusterPeers {
  /**
   * The cluster's DNS servers, reached on port 53 (UDP and TCP).
   * @default KUBE_DNS_PEERS: pods labelled k8s-app=kube-dns in kube-system
   */
  readonly dns?: k8s.NetworkPolicyPeer[];
  /**
   * Who scrapes the metrics ports.
   * @default PROMETHEUS_PEERS: pods labelled app.kubernetes.io/name=prometheus in namespace monitoring
   */
  readonly prometheus?: k8s.NetworkPolicyPeer[];
}

/** A set of ports, one protocol each. */
export function ports(protocol: 'TCP' | 'UDP', ...numbers: readonly number[]): k8s.NetworkPolicyPort[] {
  return numbers.map((port) => ({ protocol, port: k8s.IntOrString.fromNumber(port) }));
}

/** Traffic on `to` ports from `peers` (any address when undefined). */
export function ingressFrom(peers: Peers, to: k8s.NetworkPolicyPort[]): k8s.NetworkPolicyIngressRule {
  // A rule without ports would open every port.
  if (to.length === 0) throw new Error('an ingress rule needs at least one port');
  return { ...(peers ? { from: [...peers] } : {}), ports: to };
}

/** Traffic to `peers` (any address when undefined) on `to` ports. */
export function egressTo(peers: Peers, to: k8s.NetworkPolicyPort[]): k8s.NetworkPolicyEgressRule {
  if (to.length === 0) throw new Error('an egress rule needs at least one port');
  return { ...(peers ? { to: [...peers] } : {}), ports: to };
}

/** Name lookups: port 53 over UDP, and TCP for answers too large for a datagram. */
export function dnsEgress(peers: readonly k8s.NetworkPolicyPeer[] = KUBE_DNS_PEERS): k8s.NetworkPolicyEgressRule {
  return egressTo(peers, [...ports('UDP', 53), ...ports('TCP', 53)]);
}

/** The port of a URL: its own, or its scheme's (80, 443). */
export function urlPort(url: string): number {
  const parsed = new URL(url);
  if (parsed.port) return Number(parsed.port);
  if (parsed.protocol === 'https:') return 443;
  if (parsed.protocol === 'http:') return 80;
  throw new Error(`'${url}' names no port and its scheme has no default one`);
}

/** The port of a `host:port` (or `[v6]:port`) address, or `fallback` when it names none. */
export function addressPort(address: string, fallback: number): number {
  const bracketed = /^\[[^\]]+\](?::(\d+))?$/.exec(address);
  if (bracketed) return bracketed[1] ? Number(bracketed[1]) : fallback;
  // A bare IPv6 address has several colons and no port.
  const parts = address.split(':');
  return parts.length === 2 && /^\d+$/.test(parts[1]) ? Number(parts[1]) : fallback;
}

export interface PodNetworkPolicyProps {
  readonly name: string;
  readonly namespace: string;
  readonly labels: Record<string, string>;
  /**
   * Labels of the pods it applies to: one label, `app.kubernetes.io/name`, which names exactly one
   * component's pods here. (Polaris's missingNetworkPolicy accepts only a policy whose matchLabels
   * hold exactly one of the pod's labels.)
   */
  readonly podSelector: Record<string, string>;
  /** What may reach the pods; none: nothing. */
  readonly ingress: k8s.NetworkPolicyIngressRule[];
  /** What the pods may reach; none: nothing. */
  readonly egress: k8s.NetworkPolicyEgressRule[];
}

/** A NetworkPolicy isolating the selected pods both ways, with exactly the listed flows open. */
export function podNetworkPolicy(scope: Construct, id: string, props: PodNetworkPolicyProps): k8s.KubeNetworkPolicy {
  if (Object.keys(props.podSelector).length !== 1)
    throw new Error(
      `NetworkPolicy ${props.name}: select the pods by one label (app.kubernetes.io/name), got ${JSON.stringify(props.podSelector)}`,
    );
  return new k8s.KubeNetworkPolicy(scope, id, {
    metadata: { name: props.name, namespace: props.namespace, labels: { ...props.labels } },
    spec: {
      podSelector: { matchLabels: { ...props.podSelector } },
      policyTypes: ['Ingress', 'Egress'],
      ingress: [...props.ingress],
      egress: [...props.egress],
    },
  });
}

/** Label every pod of this package carries, and that no Website pod carries. */
export const PART_OF = { 'app.kubernetes.io/part-of': 'website-stack' } as const;

/**
 * Default deny (named `name`) for this package's pods in `namespace`: every pod labelled
 * app.kubernetes.io/part-of=website-stack is isolated both ways, so a pod no other policy opens
 * a flow for gets none. It selects by that label rather than every pod of the namespace, which
 * may hold pods of others: Websites (in the operator's namespace), an Elasticsearch or Cassandra
 * beside the trace stack.
 */
export function defaultDenyPolicy(
  scope: Construct,
  id: string,
  name: string,
  namespace: string,
): k8s.KubeNetworkPolicy {
  return new k8s.KubeNetworkPolicy(scope, id, {
    metadata: { name, namespace, labels: { ...PART_OF } },
    spec: { podSelector: { matchLabels: { ...PART_OF } }, policyTypes: ['Ingress', 'Egress'] },
  });
}
