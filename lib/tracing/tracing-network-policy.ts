import type { k8s } from 'cdk8s-plus-34';
import { Construct } from 'constructs';
import {
  ALL_PODS,
  addressPort,
  type ClusterPeers,
  defaultDenyPolicy,
  dnsEgress,
  egressTo,
  ingressFrom,
  type Peers,
  PROMETHEUS_PEERS,
  podNetworkPolicy,
  ports,
  urlPort,
} from '../network-policy.ts';
import { optionalFeature } from '../props.ts';
import type { CollectorBackend } from './collector/exporters.ts';
import type { CollectorReceiverSecurity } from './collector/receivers.ts';
import type { HotRod } from './hotrod.ts';
import type { JaegerAllInOne } from './jaeger-all-in-one.ts';
import type { JaegerProduction } from './jaeger-production.ts';
import { JAEGER_PORTS, tracingLabels } from './names.ts';
import type { OtelCollector } from './otel-collector.ts';
import { portProtocol, type TracingWorkload } from './tracing-workload.ts';

/** Where a trace stack's peers are: who sends spans, who opens the UIs, where the storage is. */
export interface TracingNetworkPolicyOptions extends ClusterPeers {
  /**
   * Who may send spans: the applications, to the collector's OTLP ports (4317, 4318), and in the
   * development stack to Jaeger's Thrift ports (14268, 6831/UDP, 6832/UDP) for clients that
   * predate OTLP. (Production Jaeger takes spans from the collector gateway only.)
   * @default ALL_PODS: every pod of the cluster, in any namespace
   */
  readonly spansFrom?: k8s.NetworkPolicyPeer[];
  /**
   * Who may open the UIs: Jaeger's UI and query API (16686, 16685, or oauth2-proxy's port with
   * OIDC) and HotROD's frontend (8080). Browsers reach them through an Ingress controller, a load
   * balancer or `kubectl port-forward`, each cluster's own.
   * @default any address (on those ports only)
   */
  readonly uiFrom?: k8s.NetworkPolicyPeer[];
  /**
   * Production: where Elasticsearch or Cassandra is, which runs outside the stack; reached on the
   * ports its server URLs or contact points name (9200, 9042 when they name none).
   * @default any address (on those ports only)
   */
  readonly storage?: k8s.NetworkPolicyPeer[];
  /**
   * Where the collector's further backends (`extraBackends`) and authentication servers (the
   * OIDC issuer of its receivers, OAuth2 token URLs) are, reached on the ports their endpoints name.
   * @default any address (on those ports only)
   */
  readonly backends?: k8s.NetworkPolicyPeer[];
}

export interface TracingNetworkPolicyProps {
  readonly namespace: string;
  readonly options: TracingNetworkPolicyOptions;
  readonly collector: OtelCollector;
  readonly jaeger: JaegerAllInOne | JaegerProduction;
  readonly hotrod?: HotRod;
  /** The collector's backends besides the stack's Jaeger. @default none */
  readonly extraBackends?: CollectorBackend[];
  /** @default open receivers */
  readonly receiverSecurity?: CollectorReceiverSecurity;
}

const isOtlp = (port: string) => port.startsWith('otlp-');
const isThrift = (port: string) => port.startsWith('thrift-');

/**
 * A trace stack's NetworkPolicies: a default deny for the stack's pods in its namespace, and one
 * policy per component opening exactly its flows: applications to the collector (OTLP), the
 * collector to Jaeger, Jaeger to its storage, browsers to the UIs, Prometheus to the metrics
 * ports, and DNS. Pods of others in the namespace (an Elasticsearch beside the stack) are left
 * alone: they do not carry the stack's part-of label.
 */
export class TracingNetworkPolicy extends Construct {
  public readonly policies: k8s.KubeNetworkPolicy[] = [];

  constructor(scope: Construct, id: string, props: TracingNetworkPolicyProps) {
    super(scope, id);
    const { namespace, options } = props;
    const prometheus = options.prometheus ?? PROMETHEUS_PEERS;
    const dns = dnsEgress(options.dns);
    const byName = (name: string) => ({ 'app.kubernetes.io/name': name });
    const policy = (
      name: string,
      workload: { selector: Record<string, string>; component: string },
      ingress: k8s.NetworkPolicyIngressRule[],
      egress: k8s.NetworkPolicyEgressRule[],
    ) =>
      this.policies.push(
        podNetworkPolicy(this, name, {
          name,
          namespace,
          labels: tracingLabels(name, workload.component),
          podSelector: workload.selector,
          ingress,
          egress: [...egress, dns],
        }),
      );
    const pods = (workload: TracingWorkload): k8s.NetworkPolicyPeer[] => [
      { podSelector: { matchLabels: byName(workload.deployment.name) } },
    ];
    const named = (workload: TracingWorkload, filter: (name: string) => boolean): k8s.NetworkPolicyPort[] =>
      Object.entries(workload.ports)
        .filter(([name]) => filter(name))
        .flatMap(([name, port]) => ports(portProtocol(name), port));
    const metrics = (workload: TracingWorkload) =>
      ingressFrom(
        prometheus,
        named(workload, (n) => n === 'metrics'),
      );
    // A rule only for ports the workload has (Jaeger without OTLP has no OTLP ports).
    const onPorts = (peers: Peers, workload: TracingWorkload, filter: (name: string) => boolean) =>
      named(workload, filter).length > 0 ? [ingressFrom(peers, named(workload, filter))] : [];
    const spansFrom = options.spansFrom ?? ALL_PODS;
    const component = (workload: TracingWorkload) => ({
      selector: byName(workload.deployment.name),
      component: workload.selector['app.kubernetes.io/component'],
    });

    this.policies.push(defaultDenyPolicy(this, 'DefaultDeny', 'tracing-default-deny', namespace));

    // The collector: spans in from the applications, out to Jaeger and any further backends.
    const collector = props.collector.workload;
    const jaegerIngest = 'collector' in props.jaeger ? props.jaeger.collector : props.jaeger.workload;
    const outside: number[] = [
      ...(props.extraBackends ?? []).flatMap((b) => [
        b.protocol === 'http' ? urlPort(b.endpoint) : addressPort(b.endpoint, 4317),
        ...(b.auth?._settings.type === 'oauth2-client-credentials' ? [urlPort(b.auth._settings.tokenUrl)] : []),
      ]),
      ...(props.receiverSecurity?.oidc ? [urlPort(props.receiverSecurity.oidc.issuerUrl)] : []),
    ];
    policy(
      collector.deployment.name,
      component(collector),
      [ingressFrom(spansFrom, named(collector, isOtlp)), metrics(collector)],
      [
        // Where the collector's Jaeger exporter sends (otlpGrpcAddress), whether or not Jaeger listens there.
        egressTo(
          pods(jaegerIngest),
          ports('TCP', addressPort(props.jaeger.otlpGrpcAddress, JAEGER_PORTS['otlp-grpc'])),
        ),
        ...(outside.length > 0 ? [egressTo(options.backends, ports('TCP', ...new Set(outside)))] : []),
      ],
    );

    // Jaeger: OTLP from the collector; the UI from browsers.
    const ui = (workload: TracingWorkload) =>
      ingressFrom(
        options.uiFrom,
        named(workload, (n) => n === 'query' || n === 'query-grpc'),
      );
    if ('collector' in props.jaeger) {
      const jaeger = props.jaeger;
      const storage = egressTo(options.storage, ports('TCP', ...jaeger.storagePorts));
      policy(
        jaeger.collector.deployment.name,
        component(jaeger.collector),
        [...onPorts(pods(collector), jaeger.collector, isOtlp), metrics(jaeger.collector)],
        [storage],
      );
      const issuer =
        jaeger.oidcIssuerPort !== undefined ? [egressTo(options.backends, ports('TCP', jaeger.oidcIssuerPort))] : [];
      policy(
        jaeger.query.deployment.name,
        component(jaeger.query),
        [ui(jaeger.query), metrics(jaeger.query)],
        [storage, ...issuer],
      );
      if (jaeger.indexCleaner) {
        // Nothing may reach the index cleaner: it serves nothing.
        policy(
          jaeger.indexCleaner.name,
          { selector: byName(jaeger.indexCleaner.name), component: 'index-cleaner' },
          [],
          [storage],
        );
      }
    } else {
      const jaeger = props.jaeger.workload;
      // Thrift from the applications themselves: the collector speaks only OTLP.
      policy(
        jaeger.deployment.name,
        component(jaeger),
        [
          ...onPorts(pods(collector), jaeger, isOtlp),
          ...onPorts(spansFrom, jaeger, isThrift),
          ui(jaeger),
          metrics(jaeger),
        ],
        [],
      );
    }

    // HotROD: its frontend to browsers; its spans to the collector over OTLP/HTTP.
    if (props.hotrod) {
      const hotrod = props.hotrod.workload;
      policy(
        hotrod.deployment.name,
        component(hotrod),
        [
          ingressFrom(
            options.uiFrom,
            named(hotrod, (n) => n === 'frontend'),
          ),
        ],
        [
          egressTo(
            pods(collector),
            named(collector, (n) => n === 'otlp-http'),
          ),
        ],
      );
    }
  }
}

/**
 * A trace stack's NetworkPolicies as its `networkPolicy` and `networkPolicyOptions` props ask:
 * none when `networkPolicy` is false, the default peers unless options say where they are.
 */
export function stackNetworkPolicy(
  scope: Construct,
  enabled: boolean | undefined,
  options: TracingNetworkPolicyOptions | undefined,
  props: Omit<TracingNetworkPolicyProps, 'options'>,
): TracingNetworkPolicy | undefined {
  const where = `${scope.constructor.name} at '${scope.node.path}'`;
  const setting = optionalFeature(where, 'networkPolicy', enabled, options, true);
  return setting && new TracingNetworkPolicy(scope, 'NetworkPolicy', { ...props, options: setting });
}
