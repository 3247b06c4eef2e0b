// The package's public API: the constructs a cdk8s app composes, their props and the types those
// name, in every language jsii targets (TypeScript, Python, Java, Go). Everything here must pass
// jsii (`npm run build`): no unions of shapes (a class with static factories instead, such as
// CollectorSampling.tail), no function-typed props, no free functions or constants (jsii drops them
// silently; what users need is a static member). The operator and the tests reach the helpers
// behind these through lib/internal.ts.

export { ArgoSync, type ArgoSyncOptions } from './argocd.ts';
export type { LintExemption } from './lint.ts';
export type { ClusterPeers } from './network-policy.ts';
export {
  CertManagerWebhookCertificate,
  type CertManagerWebhookCertificateProps,
} from './operator/cert-manager-webhook-certificate.ts';
export type { OperatorResources } from './operator/operator-deployment.ts';
export { OperatorDeployment, type OperatorDeploymentProps } from './operator/operator-deployment.ts';
export {
  OperatorFlowControl,
  type OperatorFlowControlOptions,
  type OperatorFlowControlProps,
  type OperatorFlowControlQueuing,
  type ServiceAccountRef,
} from './operator/operator-flow-control.ts';
export {
  type ApiServerPeers,
  OperatorNetworkPolicy,
  type OperatorNetworkPolicyOptions,
  type OperatorNetworkPolicyProps,
} from './operator/operator-network-policy.ts';
export { OperatorRbac, type OperatorRbacProps } from './operator/operator-rbac.ts';
export { WatchNamespaces } from './operator/watch-namespaces.ts';
export { WebhookService, type WebhookServiceProps } from './operator/webhook-service.ts';
export { WebsiteIngressPolicy, type WebsiteIngressPolicyProps } from './operator/website-ingress-policy.ts';
export { WebsiteOperator, type WebsiteOperatorProps } from './operator/website-operator.ts';
export type { ReplicaSpread } from './scheduling.ts';
export {
  ShellOperator,
  type ShellOperatorNetworkPolicyOptions,
  type ShellOperatorProps,
} from './shell-operator/shell-operator.ts';
export type { CollectorControlPlane } from './tracing/collector/control-plane.ts';
export {
  type BackendTls,
  type CollectorBackend,
  ForwardingAuth,
  type OAuth2ClientCredentials,
} from './tracing/collector/exporters.ts';
export {
  type BatchOptions,
  type CollectorProcessorOptions,
  CollectorSampling,
  type TailSamplingOptions,
} from './tracing/collector/processors.ts';
export type { CollectorReceiverSecurity, ReceiverOidc, ReceiverTls } from './tracing/collector/receivers.ts';
export type { CollectorRoute, CollectorRouting } from './tracing/collector/routing.ts';
export type { SecretKeyRef } from './tracing/collector/secrets.ts';
export {
  DevelopmentTracingStack,
  type DevelopmentTracingStackProps,
} from './tracing/development-tracing-stack.ts';
export { HotRod, type HotRodClientTls, type HotRodProps } from './tracing/hotrod.ts';
export {
  AllInOneStorage,
  type BadgerStorageOptions,
  JaegerAllInOne,
  type JaegerAllInOneOptions,
  type JaegerAllInOneProps,
  type MemoryStorageOptions,
} from './tracing/jaeger-all-in-one.ts';
export {
  type CassandraProps,
  type CollectorScaling,
  type CredentialsSecret,
  type ElasticsearchProps,
  type JaegerCollectorTls,
  JaegerProduction,
  type JaegerProductionOptions,
  type JaegerProductionProps,
  ProductionStorage,
} from './tracing/jaeger-production.ts';
export type { QueryOidcProps } from './tracing/oauth2-proxy.ts';
export { type CollectorPipelineOptions, OtelCollector, type OtelCollectorProps } from './tracing/otel-collector.ts';
export { ProductionTracingStack, type ProductionTracingStackProps } from './tracing/production-tracing-stack.ts';
export {
  TracingNetworkPolicy,
  type TracingNetworkPolicyOptions,
  type TracingNetworkPolicyProps,
} from './tracing/tracing-network-policy.ts';
export {
  type SecretMount,
  type TracingResources,
  TracingWorkload,
  type TracingWorkloadProps,
  type WorkloadConfigFile,
  type WorkloadHealth,
  type WorkloadVolume,
} from './tracing/tracing-workload.ts';
export type { ReplicaBounds } from './website/schema.ts';
export type { WebsiteSpec } from './website/types.ts';
export { Website, type WebsiteProps } from './website/website.ts';
export {
  type ConversionWebhookService,
  type IWebsiteCrdOperator,
  WebsiteCrd,
  type WebsiteCrdProps,
  type WebsiteVersion,
} from './website/website-crd.ts';
export type { WebsiteGateway } from './workload/website-route.ts';
