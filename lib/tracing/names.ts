// Names, ports and images the trace stack's constructs share, and the tests and `npm run tracing:up`
// read back.

/** Namespace of the trace stack's charts. */
export const TRACING_NAMESPACE = 'tracing';

/**
 * Images, pinned to the releases the tests build from source (scripts/binaries.sh): Jaeger v2.13.0,
 * whose tools (HotROD, the index cleaner) carry the release's v1 number, 1.76.0, and the
 * OpenTelemetry Collector's contrib distribution 0.159.0, a superset of the components the
 * synthesized configs use (scripts/otelcol-builder.yaml).
 */
export const TRACING_IMAGES = {
  jaeger: 'jaegertracing/jaeger:2.13.0',
  hotrod: 'jaegertracing/example-hotrod:1.76.0',
  esIndexCleaner: 'jaegertracing/jaeger-es-index-cleaner:1.76.0',
  collector: 'otel/opentelemetry-collector-contrib:0.159.0',
  /** Puts OIDC in front of Jaeger's UI (JaegerProduction's `oidc`). */
  oauth2Proxy: 'quay.io/oauth2-proxy/oauth2-proxy:v7.15.6',
} as const;

/** Ports of Jaeger v2 (the defaults of its receivers and extensions), by the port names the manifests use. */
export const JAEGER_PORTS = {
  'otlp-grpc': 4317,
  'otlp-http': 4318,
  'thrift-http': 14268,
  'thrift-compact': 6831,
  'thrift-binary': 6832,
  query: 16686,
  'query-grpc': 16685,
  health: 13133,
  metrics: 8888,
} as const;

/** Ports of the OpenTelemetry Collector as this package configures it. */
export const COLLECTOR_PORTS = {
  'otlp-grpc': 4317,
  'otlp-http': 4318,
  health: 13133,
  metrics: 8888,
} as const;

/** HotROD's ports: the frontend serves the UI and /dispatch; the others are its internal services. */
export const HOTROD_PORTS = {
  frontend: 8080,
  customer: 8081,
  driver: 8082,
  route: 8083,
} as const;

/** The health-check paths whose spans the collector drops (spec §1.9: noise). */
export const HEALTH_CHECK_PATHS = ['/healthz', '/readyz', '/livez', '/health'] as const;

/** Labels of one trace-stack component; the instance is named like its Deployment (Polaris's metadataAndInstanceMismatched). */
export function tracingLabels(name: string, component: string): Record<string, string> {
  return {
    'app.kubernetes.io/name': name,
    'app.kubernetes.io/instance': name,
    'app.kubernetes.io/component': component,
    'app.kubernetes.io/part-of': 'website-stack',
  };
}

/** The in-cluster address of a Service: `<name>.<namespace>.svc` (no cluster domain, so any domain works). */
export function serviceHost(name: string, namespace: string): string {
  return `${name}.${namespace}.svc`;
}
