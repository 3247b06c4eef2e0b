import { join } from 'node:path';
import { ApiObject, App, Chart, YamlOutputType } from 'cdk8s';
import type { IConstruct } from 'constructs';
import { ArgoSync } from './argocd.ts';
import { OPERATOR_NAMESPACE } from './operator/names.ts';
import { WebsiteOperator } from './operator/website-operator.ts';
import { ShellOperator } from './shell-operator/shell-operator.ts';
import { DevelopmentTracingStack } from './tracing/development-tracing-stack.ts';
import { ProductionStorage } from './tracing/jaeger-production.ts';
import { ProductionTracingStack, type ProductionTracingStackProps } from './tracing/production-tracing-stack.ts';
import { Website } from './website/website.ts';
import { WebsiteCrd } from './website/website-crd.ts';

/** Argo CD waves: the CRD first, then the operator, then Websites (they need both). */
export const SYNC_WAVES = { crd: -1, operator: 0, samples: 1 } as const;

/**
 * Argo CD waves inside a trace stack: the namespace, configuration and Services first; then
 * Jaeger (the backend); then the Collector that exports to it; then HotROD, which sends to the
 * Collector; autoscalers and disruption budgets last, so one reporting no metrics yet (no
 * metrics-server) never holds up a workload.
 */
export const TRACING_SYNC_WAVES = { config: 0, jaeger: 1, collector: 2, hotrod: 3, scaling: 4 } as const;

/**
 * dist/'s folders of which a cluster runs exactly one per group: each folder of a group replaces
 * the others (they define the same objects with other content), by pointing the same Argo CD
 * Application at it (docs/use/dist-and-argocd.md: "Syncing with Argo CD").
 */
export const DIST_ALTERNATIVES: readonly (readonly string[])[] = [
  ['website-operator', 'website-shell-operator'],
  ['tracing-dev', 'tracing-production-elasticsearch', 'tracing-production-cassandra'],
];

/**
 * What `npm run synth` writes: one folder of `outdir` per deployable unit, which one Argo CD
 * Application syncs whole, keyed by folder name. Each unit is an App of its own writing one file
 * per chart into `<outdir>/<unit>/`; every object in it must carry a sync wave (synth fails
 * otherwise).
 */
export function buildDist(outdir: string = process.env.CDK8S_OUTDIR ?? 'dist'): Record<string, App> {
  const units: Record<string, App> = {};
  const unit = (name: string): App => {
    const app = new App({
      yamlOutputType: YamlOutputType.FILE_PER_CHART,
      outputFileExtension: '.yaml',
      outdir: join(outdir, name),
    });
    ArgoSync.requireWaves(app);
    units[name] = app;
    return app;
  };

  // The Website API with its operator: the CRD (wave -1), then the operator.
  const operatorUnit = unit('website-operator');
  const operatorChart = new Chart(operatorUnit, 'website-operator');
  const operator = new WebsiteOperator(operatorChart, 'Operator');
  ArgoSync.apply(operatorChart, { wave: SYNC_WAVES.operator });
  websiteCrdChart(operatorUnit, operator);

  // The alternative to website-operator, never deployed beside it (docs/use/shell-operator.md).
  // It carries the very same CRD, so that switching an Application between the two keeps the CRD,
  // and with it every Website.
  const shellUnit = unit('website-shell-operator');
  websiteCrdChart(shellUnit, operator);
  const shellOperatorChart = new Chart(shellUnit, 'website-shell-operator');
  new ShellOperator(shellOperatorChart, 'ShellOperator');
  ArgoSync.apply(shellOperatorChart, { wave: SYNC_WAVES.operator });

  const samples = new Chart(unit('website-samples'), 'website-samples', { namespace: OPERATOR_NAMESPACE });
  new Website(samples, 'hello', {
    metadata: { name: 'hello' },
    spec: { title: 'Hello from website-stack', replicas: 2 },
  });
  new Website(samples, 'docs', {
    metadata: { name: 'docs' },
    spec: { title: 'Team docs', replicas: 1, color: '#4CAF50' },
  });
  ArgoSync.apply(samples, { wave: SYNC_WAVES.samples, syncOptions: ['SkipDryRunOnMissingResource=true'] });

  // The trace stack: one of the three per cluster (docs/use/trace-stack.md).
  tracingSync(new DevelopmentTracingStack(new Chart(unit('tracing-dev'), 'tracing-dev'), 'Tracing'));
  tracingSync(
    new ProductionTracingStack(
      new Chart(unit('tracing-production-elasticsearch'), 'tracing-production-elasticsearch'),
      'Tracing',
      {
        ...PRODUCTION_TRACING,
        jaeger: {
          ...PRODUCTION_TRACING.jaeger,
          // ECK's names for an Elasticsearch called `elasticsearch` in the tracing namespace.
          storage: ProductionStorage.elasticsearch({
            serverUrls: ['https://elasticsearch-es-http.tracing.svc:9200'],
            caSecretName: 'elasticsearch-es-http-certs-public',
            credentials: { secretName: 'jaeger-elasticsearch' },
            // The version said, not asked of the cluster at start (8's mappings also serve 9), and no
            // probe before use: ECK's Service routes to ready nodes anyway.
            version: 8,
            clientHealthCheck: false,
          }),
        },
      },
    ),
  );
  tracingSync(
    new ProductionTracingStack(
      new Chart(unit('tracing-production-cassandra'), 'tracing-production-cassandra'),
      'Tracing',
      {
        ...PRODUCTION_TRACING,
        jaeger: {
          ...PRODUCTION_TRACING.jaeger,
          storage: ProductionStorage.cassandra({
            servers: ['cassandra.tracing.svc:9042'],
            credentials: { secretName: 'jaeger-cassandra' },
          }),
        },
      },
    ),
  );

  return units;
}

/** The Website CRD, in the wave before either operator's. */
/** The Website CRD, which takes from the operator its group, webhook Service and certificate annotations. */
function websiteCrdChart(app: App, operator: WebsiteOperator): void {
  const chart = new Chart(app, 'website-crd');
  new WebsiteCrd(chart, 'Website', { operator });
  ArgoSync.apply(chart, { wave: SYNC_WAVES.crd });
}

const WORKLOAD_KINDS = ['Deployment', 'StatefulSet', 'DaemonSet', 'Job', 'CronJob'];
const SCALING_KINDS = ['HorizontalPodAutoscaler', 'PodDisruptionBudget'];

/** A trace stack's waves (TRACING_SYNC_WAVES); a workload of no known component fails synth. */
function tracingSync(stack: DevelopmentTracingStack | ProductionTracingStack): void {
  ArgoSync.apply(stack, { wave: TRACING_SYNC_WAVES.config });
  const components: [IConstruct | undefined, number][] = [
    [stack.jaeger, TRACING_SYNC_WAVES.jaeger],
    [stack.collector, TRACING_SYNC_WAVES.collector],
    ['hotrod' in stack ? stack.hotrod : undefined, TRACING_SYNC_WAVES.hotrod],
  ];
  for (const [component, wave] of components) if (component) ArgoSync.apply(component, { wave, kinds: WORKLOAD_KINDS });
  ArgoSync.apply(stack, { wave: TRACING_SYNC_WAVES.scaling, kinds: SCALING_KINDS });
  const known = components.flatMap(([component]) => component?.node.findAll() ?? []);
  const stray = stack.node
    .findAll()
    .find((c): c is ApiObject => c instanceof ApiObject && WORKLOAD_KINDS.includes(c.kind) && !known.includes(c));
  if (stray)
    throw new Error(
      `${stray.node.path}: a ${stray.kind} of no known trace-stack component; give it a wave in TRACING_SYNC_WAVES`,
    );
}

/**
 * What both production charts share, from Secrets cert-manager (or the user) fills (docs/use/trace-stack.md:
 * "What the charts configure"): mutual TLS from applications to the collector gateway (spec §5: production
 * collectors require mutual TLS or OIDC; OTLP without a client certificate is refused), and
 * between the gateway and Jaeger's collector; and OIDC on the UI (spec §5: "OIDC or mutual TLS on the
 * UI"), whose provider and addresses are the user's own, so they come from the Secret `jaeger-oidc`
 * with the client's credentials.
 */
const PRODUCTION_TRACING: Omit<ProductionTracingStackProps, 'jaeger'> & {
  jaeger: Omit<ProductionTracingStackProps['jaeger'], 'storage'>;
} = {
  jaeger: {
    collectorTls: { secretName: 'jaeger-collector-tls' },
    oidc: {
      issuerUrl: { secretName: 'jaeger-oidc', key: 'issuer-url' },
      clientId: { secretName: 'jaeger-oidc', key: 'client-id' },
      clientSecret: { secretName: 'jaeger-oidc', key: 'client-secret' },
      cookieSecret: { secretName: 'jaeger-oidc', key: 'cookie-secret' },
      redirectUrl: { secretName: 'jaeger-oidc', key: 'redirect-url' },
      backendLogoutUrl: { secretName: 'jaeger-oidc', key: 'backend-logout-url' },
      providerCa: { secretName: 'jaeger-oidc', key: 'provider-ca.crt' },
    },
  },
  collectorClientTlsSecret: 'otel-collector-client-tls',
  receiverSecurity: { tls: { secretName: 'otel-collector-tls' } },
};
