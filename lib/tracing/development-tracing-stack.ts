import { k8s } from 'cdk8s-plus-34';
import { Construct } from 'constructs';
import { RESTRICTED_NAMESPACE_LABELS } from '../security.ts';
import type { CollectorControlPlane } from './collector/control-plane.ts';
import { CollectorSampling } from './collector/processors.ts';
import { HotRod } from './hotrod.ts';
import type { JaegerAllInOneOptions } from './jaeger-all-in-one.ts';
import { JaegerAllInOne } from './jaeger-all-in-one.ts';
import { TRACING_NAMESPACE } from './names.ts';
import { OtelCollector } from './otel-collector.ts';
import {
  stackNetworkPolicy,
  type TracingNetworkPolicy,
  type TracingNetworkPolicyOptions,
} from './tracing-network-policy.ts';

export interface DevelopmentTracingStackProps {
  /** @default 'tracing' */
  readonly namespace?: string;
  /** Create the namespace, labelled to enforce Pod Security `restricted`. @default true */
  readonly createNamespace?: boolean;
  /** Jaeger all-in-one's settings (storage, OTLP switch). @default in memory, OTLP on */
  readonly jaeger?: JaegerAllInOneOptions;
  /** @default every trace: a developer wants to see each request */
  readonly sampling?: CollectorSampling;
  /**
   * The control plane's traces, in a pipeline of their own (OtelCollectorProps' `controlPlane`).
   * @default true
   */
  readonly controlPlane?: boolean;
  /** Tunes the control plane's pipeline. @default every trace but the API server's probes */
  readonly controlPlaneOptions?: CollectorControlPlane;
  /** Deploy HotROD, sending through the collector. @default true */
  readonly hotrod?: boolean;
  /**
   * NetworkPolicies (TracingNetworkPolicy): a default deny for the stack's pods, and per component
   * exactly its flows: applications to the collector (OTLP 4317/4318), the collector to Jaeger,
   * browsers to the UIs, Prometheus to the metrics ports, DNS. `true` takes the defaults (spans from
   * any pod of the cluster; UIs from any address; Prometheus in `monitoring`; kube-dns); an object
   * says where those are (`networkPolicyOptions`). They take effect only where the network plugin
   * enforces NetworkPolicies.
   * @default true
   */
  readonly networkPolicy?: boolean;
  /** Where the peers of `networkPolicy` are. @default TracingNetworkPolicy's defaults */
  readonly networkPolicyOptions?: TracingNetworkPolicyOptions;
}

/**
 * The development trace stack: Jaeger all-in-one (in memory), an OpenTelemetry Collector in
 * front of it, and HotROD sending to the collector. Applications set
 * `OTEL_EXPORTER_OTLP_ENDPOINT` to `collector.otlpHttpEndpoint`.
 */
export class DevelopmentTracingStack extends Construct {
  public readonly jaeger: JaegerAllInOne;
  public readonly collector: OtelCollector;
  public readonly hotrod?: HotRod;
  /** Unless `networkPolicy` is false: the stack's NetworkPolicies. */
  public readonly networkPolicy?: TracingNetworkPolicy;

  constructor(scope: Construct, id: string, props: DevelopmentTracingStackProps = {}) {
    super(scope, id);
    const namespace = props.namespace ?? TRACING_NAMESPACE;
    if (props.createNamespace ?? true) {
      new k8s.KubeNamespace(this, 'Namespace', {
        metadata: { name: namespace, labels: { ...RESTRICTED_NAMESPACE_LABELS } },
      });
    }
    this.jaeger = new JaegerAllInOne(this, 'Jaeger', { ...props.jaeger, namespace });
    this.collector = new OtelCollector(this, 'Collector', {
      namespace,
      sampling: props.sampling ?? CollectorSampling.always(),
      ...(props.controlPlane !== undefined ? { controlPlane: props.controlPlane } : {}),
      // The development default keeps every control-plane trace; options given with `controlPlane:
      // false` go through, for the collector to refuse the contradiction.
      ...(props.controlPlaneOptions !== undefined || props.controlPlane !== false
        ? { controlPlaneOptions: props.controlPlaneOptions ?? { percentage: 100 } }
        : {}),
      backends: [{ name: 'jaeger', endpoint: this.jaeger.otlpGrpcAddress }],
    });
    if (props.hotrod ?? true) {
      this.hotrod = new HotRod(this, 'HotRod', {
        namespace,
        otlpEndpoint: this.collector.otlpHttpEndpoint,
        jaegerUiUrl: this.jaeger.queryUrl,
      });
    }
    this.networkPolicy = stackNetworkPolicy(this, props.networkPolicy, props.networkPolicyOptions, {
      namespace,
      collector: this.collector,
      jaeger: this.jaeger,
      ...(this.hotrod ? { hotrod: this.hotrod } : {}),
    });
  }
}
