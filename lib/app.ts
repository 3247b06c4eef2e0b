import { App, type AppProps, Chart, YamlOutputType } from 'cdk8s';
import { argoSync } from './argocd.ts';
import { OPERATOR_NAMESPACE } from './operator/names.ts';
import { WebsiteOperator } from './operator/website-operator.ts';
import { ShellOperator } from './shell-operator/shell-operator.ts';
import { DevelopmentTracingStack } from './tracing/development-tracing-stack.ts';
import { ProductionTracingStack, type ProductionTracingStackProps } from './tracing/production-tracing-stack.ts';
import { WebsiteCrd } from './website/website-crd.ts';
import { Website } from './website/website.ts';

/** Argo CD waves: the CRD first, then the operator, then Websites (they need both). */
export const SYNC_WAVES = { crd: -1, operator: 0, samples: 1 } as const;

/** The charts `npm run synth` writes to dist/, one file per chart, named after the chart. */
export function buildApp(props: AppProps = {}): App {
  const app = new App({ yamlOutputType: YamlOutputType.FILE_PER_CHART, outputFileExtension: '.yaml', ...props });

  const crdChart = new Chart(app, 'website-crd');
  const operatorChart = new Chart(app, 'website-operator');
  const operator = new WebsiteOperator(operatorChart, 'Operator');
  // The CRD takes from the operator its webhook Service and its certificate mode's annotations.
  new WebsiteCrd(crdChart, 'Website', { operator });
  argoSync(crdChart, { wave: SYNC_WAVES.crd });
  argoSync(operatorChart, { wave: SYNC_WAVES.operator });

  // The alternative to website-operator, never deployed beside it (README: "The shell operator").
  const shellOperatorChart = new Chart(app, 'website-shell-operator');
  new ShellOperator(shellOperatorChart, 'ShellOperator');
  argoSync(shellOperatorChart, { wave: SYNC_WAVES.operator });

  const samples = new Chart(app, 'website-samples', { namespace: OPERATOR_NAMESPACE });
  new Website(samples, 'hello', {
    metadata: { name: 'hello' },
    spec: { title: 'Hello from website-stack', replicas: 2 },
  });
  new Website(samples, 'docs', {
    metadata: { name: 'docs' },
    spec: { title: 'Team docs', replicas: 1, color: '#4CAF50' },
  });
  argoSync(samples, { wave: SYNC_WAVES.samples, syncOptions: ['SkipDryRunOnMissingResource=true'] });

  // The trace stack: one of the three per cluster (README: "The trace stack").
  new DevelopmentTracingStack(new Chart(app, 'tracing-dev'), 'Tracing');
  new ProductionTracingStack(new Chart(app, 'tracing-production-elasticsearch'), 'Tracing', {
    ...PRODUCTION_TRACING,
    jaeger: {
      ...PRODUCTION_TRACING.jaeger,
      // ECK's names for an Elasticsearch called `elasticsearch` in the tracing namespace.
      storage: {
        type: 'elasticsearch',
        serverUrls: ['https://elasticsearch-es-http.tracing.svc:9200'],
        caSecretName: 'elasticsearch-es-http-certs-public',
        credentials: { secretName: 'jaeger-elasticsearch' },
      },
    },
  });
  new ProductionTracingStack(new Chart(app, 'tracing-production-cassandra'), 'Tracing', {
    ...PRODUCTION_TRACING,
    jaeger: { ...PRODUCTION_TRACING.jaeger, storage: { type: 'cassandra', servers: ['cassandra.tracing.svc:9042'], credentials: { secretName: 'jaeger-cassandra' } } },
  });

  return app;
}

/**
 * What both production charts share: mutual TLS between the collector gateway and Jaeger's
 * collector, from Secrets cert-manager (or the user) fills (README: "The trace stack").
 */
const PRODUCTION_TRACING: Omit<ProductionTracingStackProps, 'jaeger'> & { jaeger: Omit<ProductionTracingStackProps['jaeger'], 'storage'> } = {
  jaeger: { collectorTls: { secretName: 'jaeger-collector-tls' } },
  collectorClientTlsSecret: 'otel-collector-client-tls',
};
