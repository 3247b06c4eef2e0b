import { k8s } from 'cdk8s-plus-34';
import { Construct } from 'constructs';
import { RESTRICTED_NAMESPACE_LABELS } from '../security.ts';
import type { CollectorControlPlane } from './collector/control-plane.ts';
import type { CollectorBackend } from './collector/exporters.ts';
import { CollectorSampling } from './collector/processors.ts';
import type { CollectorReceiverSecurity } from './collector/receivers.ts';
import type { JaegerProductionOptions } from './jaeger-production.ts';
import { JaegerProduction } from './jaeger-production.ts';
import { TRACING_NAMESPACE } from './names.ts';
import { OtelCollector } from './otel-collector.ts';
import {
  stackNetworkPolicy,
  type TracingNetworkPolicy,
  type TracingNetworkPolicyOptions,
} from './tracing-network-policy.ts';

export interface ProductionTracingStackProps {
  /** @default 'tracing' */
  readonly namespace?: string;
  /** Create the namespace, labelled to enforce Pod Security `restricted`. @default true */
  readonly createNamespace?: boolean;
  /** Jaeger's storage, TLS, OIDC and scaling. */
  readonly jaeger: JaegerProductionOptions;
  /**
   * A Secret with `ca.crt`, `tls.crt` and `tls.key`: the collector's client certificate for
   * Jaeger's mutual TLS. Required when `jaeger.collectorTls` requires client certificates.
   * @default plaintext to Jaeger
   */
  readonly collectorClientTlsSecret?: string;
  /** @default tail-based: errors, slower than 1 s, 1 % of the rest (spec §8) */
  readonly sampling?: CollectorSampling;
  /** Further backends the collector also exports to (a second Jaeger, a vendor). @default none */
  readonly extraBackends?: CollectorBackend[];
  /** @default open receivers inside the cluster */
  readonly receiverSecurity?: CollectorReceiverSecurity;
  /**
   * The control plane's traces, in a pipeline of their own (OtelCollectorProps' `controlPlane`).
   * @default true
   */
  readonly controlPlane?: boolean;
  /** Tunes the control plane's pipeline. @default errors, slower than 1 s, 10 % of the rest */
  readonly controlPlaneOptions?: CollectorControlPlane;
  /**
   * NetworkPolicies (TracingNetworkPolicy): a default deny for the stack's pods, and per component
   * exactly its flows: applications to the collector (OTLP 4317/4318), the collector to Jaeger, Jaeger to its storage (Elasticsearch or Cassandra),
   * browsers to the UIs, Prometheus to the metrics ports, DNS. `true` takes the defaults (spans from
   * any pod of the cluster; UIs from any address; Prometheus in `monitoring`; kube-dns; the storage at any address on its ports); an object
   * says where those are (`networkPolicyOptions`). They take effect only where the network plugin
   * enforces NetworkPolicies.
   * @default true
   */
  readonly networkPolicy?: boolean;
  /** Where the peers of `networkPolicy` are. @default TracingNetworkPolicy's defaults */
  readonly networkPolicyOptions?: TracingNetworkPolicyOptions;
}

/**
 * The production trace stack: Jaeger's collector and query split over Elasticsearch or
 * Cassandra, and an OpenTelemetry Collector gateway in front doing tail-based sampling.
 */
export class ProductionTracingStack extends Construct {
  public readonly jaeger: JaegerProduction;
  public readonly collector: OtelCollector;
  /** Unless `networkPolicy` is false: the stack's NetworkPolicies. */
  public readonly networkPolicy?: TracingNetworkPolicy;

  constructor(scope: Construct, id: string, props: ProductionTracingStackProps) {
    super(scope, id);
    const namespace = props.namespace ?? TRACING_NAMESPACE;
    if (props.createNamespace ?? true) {
      new k8s.KubeNamespace(this, 'Namespace', {
        metadata: { name: namespace, labels: { ...RESTRICTED_NAMESPACE_LABELS } },
      });
    }
    const mutual = props.jaeger.collectorTls && (props.jaeger.collectorTls.requireClientCertificate ?? true);
    if (mutual && !props.collectorClientTlsSecret) {
      throw new Error(
        `ProductionTracingStack at '${this.node.path}': Jaeger's collector requires client certificates; set collectorClientTlsSecret to the Secret holding the collector's`,
      );
    }
    this.jaeger = new JaegerProduction(this, 'Jaeger', { ...props.jaeger, namespace });
    const tls =
      props.collectorClientTlsSecret ?? (props.jaeger.collectorTls ? props.jaeger.collectorTls.secretName : undefined);
    this.collector = new OtelCollector(this, 'Collector', {
      namespace,
      sampling: props.sampling ?? CollectorSampling.tail({ percentage: 1 }),
      backends: [
        {
          name: 'jaeger',
          endpoint: this.jaeger.otlpGrpcAddress,
          ...(tls ? { tls: { secretName: tls, clientCertificate: props.collectorClientTlsSecret !== undefined } } : {}),
        },
        ...(props.extraBackends ?? []),
      ],
      ...(props.receiverSecurity ? { receiverSecurity: props.receiverSecurity } : {}),
      ...(props.controlPlane !== undefined ? { controlPlane: props.controlPlane } : {}),
      ...(props.controlPlaneOptions !== undefined ? { controlPlaneOptions: props.controlPlaneOptions } : {}),
    });
    this.networkPolicy = stackNetworkPolicy(this, props.networkPolicy, props.networkPolicyOptions, {
      namespace,
      collector: this.collector,
      jaeger: this.jaeger,
      ...(props.extraBackends ? { extraBackends: props.extraBackends } : {}),
      ...(props.receiverSecurity ? { receiverSecurity: props.receiverSecurity } : {}),
    });
  }
}
