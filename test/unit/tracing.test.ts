import { chartInMemory, expectPodSecurityRestricted } from '../../harness/manifests.ts';
import { localize } from '../../harness/trace/local-stack.ts';
import { ForwardingAuth } from '../../lib/tracing/collector/exporters.ts';
import { CollectorSampling } from '../../lib/tracing/collector/processors.ts';
import { type CollectorConfig, collectorConfigProblems } from '../../lib/tracing/collector-config.ts';
import { DevelopmentTracingStack } from '../../lib/tracing/development-tracing-stack.ts';
import { HotRod } from '../../lib/tracing/hotrod.ts';
import { AllInOneStorage, JaegerAllInOne } from '../../lib/tracing/jaeger-all-in-one.ts';
import { JaegerProduction, ProductionStorage } from '../../lib/tracing/jaeger-production.ts';
import { collectorConfig, OtelCollector } from '../../lib/tracing/otel-collector.ts';
import { ProductionTracingStack } from '../../lib/tracing/production-tracing-stack.ts';

const chart = () => chartInMemory();
const byKind = (objects: any[], kind: string) => objects.filter((o) => o.kind === kind);
const JAEGER = { name: 'jaeger', endpoint: 'jaeger.tracing.svc:4317' };

describe('the collector configuration (spec §2 "Collector configuration shape")', () => {
  test("the defaults are the spec's sample: OTLP on 0.0.0.0:4317/4318, batch 1s/1024, 1 % probabilistic, export over gRPC", () => {
    const { config } = collectorConfig({ backends: [JAEGER] });
    expect(config.receivers.otlp.protocols).toEqual({
      grpc: { endpoint: '0.0.0.0:4317' },
      http: { endpoint: '0.0.0.0:4318' },
    });
    expect(config.processors!.batch).toEqual({ timeout: '1s', send_batch_size: 1024 });
    expect(config.processors!.probabilistic_sampler).toEqual({ sampling_percentage: 1, mode: 'proportional' });
    expect(config.exporters['otlp_grpc/jaeger']).toMatchObject({
      endpoint: 'jaeger.tracing.svc:4317',
      tls: { insecure: true },
    });
    // The control plane's spans have a pipeline of their own (test/unit/collector-config.test.ts).
    expect(config.service.pipelines.traces.processors).toEqual([
      'memory_limiter',
      'filter/applications',
      'probabilistic_sampler',
      'tail_sampling',
      'batch',
    ]);
  });

  const HEALTH_DROP = {
    name: 'health-checks',
    type: 'drop',
    drop: {
      drop_sub_policy: [
        {
          name: 'health-check-root',
          type: 'ottl_condition',
          ottl_condition: {
            error_mode: 'ignore',
            span: [
              'IsRootSpan() and IsMatch(attributes["url.path"], "^/(healthz|readyz|livez|health)/?$")',
              'IsRootSpan() and IsMatch(attributes["http.route"], "^/(healthz|readyz|livez|health)/?$")',
              'IsRootSpan() and IsMatch(attributes["http.target"], "^/(healthz|readyz|livez|health)/?(\\\\?.*)?$")',
            ],
          },
        },
      ],
    },
  };

  test('tail sampling drops health-check traces whole, keeps errors, traces over the threshold and a percentage of the rest, and decides before batching', () => {
    const { config } = collectorConfig({ backends: [JAEGER], sampling: CollectorSampling.tail({ percentage: 1 }) });
    expect(config.processors!.tail_sampling).toEqual({
      decision_wait: '10s',
      num_traces: 50000,
      decision_cache: { sampled_cache_size: 100000, non_sampled_cache_size: 100000 },
      policies: [
        HEALTH_DROP,
        { name: 'errors', type: 'status_code', status_code: { status_codes: ['ERROR'] } },
        { name: 'slow', type: 'latency', latency: { threshold_ms: 1000 } },
        { name: 'rest', type: 'probabilistic', probabilistic: { sampling_percentage: 1 } },
      ],
    });
    expect(config.service.pipelines.traces.processors).toEqual([
      'memory_limiter',
      'filter/applications',
      'tail_sampling',
      'batch',
    ]);
  });

  test('without tail rules, health-check traces are still dropped whole (never span by span), decided a second after the root span arrives', () => {
    for (const sampling of [CollectorSampling.always(), CollectorSampling.probabilistic(10)] as const) {
      const { config } = collectorConfig({ backends: [JAEGER], sampling, controlPlane: false });
      expect(config.processors!.tail_sampling).toEqual({
        decision_wait: '10s',
        decision_wait_after_root_received: '1s',
        num_traces: 50000,
        decision_cache: { sampled_cache_size: 100000, non_sampled_cache_size: 100000 },
        policies: [HEALTH_DROP, { name: 'everything-else', type: 'always_sample' }],
      });
      expect(Object.keys(config.processors!).filter((id) => id.startsWith('filter'))).toEqual([]);
    }
  });

  test('healthCheckPaths: [] keeps health-check traces, and without tail sampling no trace-level decision (nor its single-replica rule) remains', () => {
    const options = {
      backends: [JAEGER],
      sampling: CollectorSampling.always(),
      healthCheckPaths: [],
      controlPlane: false,
    };
    expect(collectorConfig(options).config.service.pipelines.traces.processors).toEqual(['memory_limiter', 'batch']);
    expect(() => new OtelCollector(chart(), 'c', { ...options, replicas: 2 })).not.toThrow();
  });

  test('a tail_sampling processor with only drop policies, an empty drop or a fractional decision_wait_after_root_received is refused at synth', () => {
    const config: CollectorConfig = {
      receivers: { otlp: { protocols: { grpc: { endpoint: '0.0.0.0:4317' } } } },
      processors: {
        tail_sampling: {
          decision_wait: '10s',
          decision_wait_after_root_received: '500ms',
          num_traces: 10,
          policies: [
            { name: 'a', type: 'drop', drop: { drop_sub_policy: [] } },
            {
              name: 'b',
              type: 'drop',
              drop: {
                drop_sub_policy: [
                  { name: 'c', type: 'ottl_condition', ottl_condition: { error_mode: 'ignore', span: [] } },
                ],
              },
            },
          ],
        },
      },
      exporters: { 'otlp_grpc/jaeger': { endpoint: 'jaeger:4317' } },
      service: {
        pipelines: { traces: { receivers: ['otlp'], processors: ['tail_sampling'], exporters: ['otlp_grpc/jaeger'] } },
      },
    };
    expect(collectorConfigProblems(config)).toEqual([
      "processors.tail_sampling.decision_wait_after_root_received: '500ms' is not a whole number of seconds such as 1s (the processor decides in 1 s ticks)",
      'processors.tail_sampling.policies: name at least one policy that keeps traces (drop policies only discard), or every trace is dropped',
      'processors.tail_sampling.policies.a.drop.drop_sub_policy: name at least one policy (the trace is dropped when all of them match)',
      'processors.tail_sampling.policies.b.drop.c.ottl_condition.span: name at least one condition',
    ]);
  });

  test.each([-1, 100.5, Number.NaN])('a sampling percentage of %p fails at synth, saying the range', (percentage) => {
    expect(
      () =>
        new OtelCollector(chart(), 'c', { backends: [JAEGER], sampling: CollectorSampling.probabilistic(percentage) }),
    ).toThrow(/processors\.probabilistic_sampler\.sampling_percentage: .* is outside 0\.\.100/);
  });

  test('a pipeline naming an undefined component fails with the names that are defined', () => {
    const config: CollectorConfig = {
      receivers: { otlp: { protocols: { grpc: { endpoint: '0.0.0.0:4317' } } } },
      processors: { batch: { timeout: '1s', send_batch_size: 1024 } },
      exporters: { 'otlp_grpc/jaeger': { endpoint: 'jaeger:4317' } },
      service: {
        pipelines: {
          traces: {
            receivers: ['otlp'],
            processors: ['batch', 'probabilistic_sampler'],
            exporters: ['otlp_grpc/jaeger', 'otlp_grpc/other'],
          },
        },
      },
    };
    expect(collectorConfigProblems(config)).toEqual([
      "service.pipelines.traces.processors: 'probabilistic_sampler' is not defined under processors (defined: batch)",
      "service.pipelines.traces.exporters: 'otlp_grpc/other' is not defined under exporters (defined: otlp_grpc/jaeger)",
    ]);
  });

  test('other mistakes are each named: unknown types, unused components, bad endpoints and durations', () => {
    const config = {
      receivers: { otlp: { protocols: { http: { endpoint: 'localhost' } } } },
      processors: { batch: { timeout: 'soon', send_batch_size: 0 }, 'routing/x': {} },
      exporters: { 'otlp_grpc/a': { endpoint: 'http://jaeger:4317' }, 'otlp_http/b': { endpoint: 'jaeger:4318' } },
      service: { pipelines: { traces: { receivers: ['otlp'], processors: ['batch'], exporters: ['otlp_grpc/a'] } } },
    } as unknown as CollectorConfig;
    expect(collectorConfigProblems(config)).toEqual([
      "processors: 'routing/x' is of type 'routing', which this collector does not have (it has memory_limiter, batch, filter, probabilistic_sampler, tail_sampling, attributes)",
      "receivers.otlp.protocols.http.endpoint: 'localhost' is not host:port (a pod needs 0.0.0.0:<port>)",
      "processors.batch.timeout: 'soon' is not a duration such as 1s or 200ms",
      'processors.batch.send_batch_size: 0 is not a positive whole number',
      'processors.routing/x: defined but in no pipeline (remove it, or add it to one)',
      'exporters.otlp_http/b: defined but in no pipeline (remove it, or add it to one)',
      "exporters.otlp_grpc/a.endpoint: 'http://jaeger:4317' is not host:port (gRPC exporters take no scheme)",
      "exporters.otlp_http/b.endpoint: 'jaeger:4318' is not an http(s):// base URL",
    ]);
  });

  test('credentials come from Secrets as environment variables, never inline, and only over TLS', () => {
    const { config, env } = collectorConfig({
      backends: [
        {
          name: 'vendor',
          endpoint: 'otlp.vendor.example:443',
          tls: {},
          auth: ForwardingAuth.bearerToken({ secretName: 'vendor', key: 'token' }),
        },
        {
          name: 'central',
          endpoint: 'https://otlp.central.example',
          protocol: 'http',
          auth: ForwardingAuth.basic('tracing', { secretName: 'central', key: 'password' }),
        },
        {
          name: 'idp',
          endpoint: 'otlp.idp.example:443',
          tls: { secretName: 'idp-ca' },
          auth: ForwardingAuth.oauth2ClientCredentials({
            tokenUrl: 'https://idp.example/token',
            clientId: 'collector',
            clientSecret: { secretName: 'idp', key: 'secret' },
          }),
        },
      ],
      sampling: CollectorSampling.always(),
    });
    expect(config.extensions).toMatchObject({
      'bearertokenauth/vendor': { token: '${env:VENDOR_BEARER_TOKEN}' },
      'basicauth/central': { client_auth: { username: 'tracing', password: '${env:CENTRAL_PASSWORD}' } },
      'oauth2client/idp': {
        client_id: 'collector',
        client_secret: '${env:IDP_CLIENT_SECRET}',
        token_url: 'https://idp.example/token',
      },
    });
    expect(env).toEqual([
      { name: 'VENDOR_BEARER_TOKEN', valueFrom: { secretKeyRef: { name: 'vendor', key: 'token' } } },
      { name: 'CENTRAL_PASSWORD', valueFrom: { secretKeyRef: { name: 'central', key: 'password' } } },
      { name: 'IDP_CLIENT_SECRET', valueFrom: { secretKeyRef: { name: 'idp', key: 'secret' } } },
    ]);
    expect(config.service.extensions).toEqual([
      'health_check',
      'bearertokenauth/vendor',
      'basicauth/central',
      'oauth2client/idp',
    ]);
    expect(() =>
      collectorConfig({
        backends: [{ ...JAEGER, auth: ForwardingAuth.bearerToken({ secretName: 's', key: 'k' }) }],
      }),
    ).toThrow(/backend 'jaeger' would send its bearer-token credentials in clear text; set tls/);
    expect(() =>
      collectorConfig({
        backends: [
          {
            name: 'h',
            protocol: 'http',
            endpoint: 'http://x:4318',
            auth: ForwardingAuth.bearerToken({ secretName: 's', key: 'k' }),
          },
        ],
      }),
    ).toThrow(/use an https:\/\/ endpoint/);
  });

  test('routing by attribute: one pipeline per backend, each dropping what is not its own', () => {
    const { config } = collectorConfig({
      backends: [JAEGER, { name: 'eu', endpoint: 'jaeger.eu.svc:4317' }],
      sampling: CollectorSampling.always(),
      routing: { attribute: 'region', routes: [{ value: 'eu', backends: ['eu'] }], defaultBackends: ['jaeger'] },
    });
    expect(Object.keys(config.service.pipelines)).toEqual(['traces/eu', 'traces/jaeger', 'traces/control-plane']);
    expect(config.processors!['filter/route-eu']).toEqual({
      error_mode: 'ignore',
      traces: { span: ['not (resource.attributes["region"] == "eu")'] },
    });
    expect(config.processors!['filter/route-jaeger']).toEqual({
      error_mode: 'ignore',
      traces: { span: ['not ((resource.attributes["region"] == nil or not (resource.attributes["region"] == "eu")))'] },
    });
    expect(() =>
      collectorConfig({
        backends: [JAEGER],
        routing: { attribute: 'a', routes: [{ value: 'x', backends: ['nope'] }], defaultBackends: ['jaeger'] },
      }),
    ).toThrow(/routing names backend 'nope', which is not among the backends \(jaeger\)/);
  });

  test('per-trace decisions with several replicas are refused: traces would be split', () => {
    expect(
      () =>
        new OtelCollector(chart(), 'c', {
          backends: [JAEGER],
          sampling: CollectorSampling.tail({ percentage: 1 }),
          replicas: 2,
        }),
    ).toThrow(/tail sampling decides per trace; with 2 replicas traces would be split/);
    expect(() => new OtelCollector(chart(), 'c', { backends: [JAEGER], replicas: 3 })).toThrow(
      /dropping health-check traces whole \(healthCheckPaths: \[\] keeps them\) decides per trace; with 3 replicas/,
    );
  });
});

describe('the trace-stack workloads', () => {
  test('every pod passes Pod Security restricted, pins its image and rolls on a config change', () => {
    const c = chart();
    new DevelopmentTracingStack(c, 'dev');
    const deployments = byKind(c.toJson(), 'Deployment');
    expect(deployments.map((d) => d.metadata.name).sort()).toEqual(['hotrod', 'jaeger', 'otel-collector']);
    for (const d of deployments) {
      const pod = d.spec.template.spec;
      expectPodSecurityRestricted(pod);
      for (const container of pod.containers) {
        expect(container.image).toMatch(/:[0-9v][^:]*$/);
        expect(container.resources.limits.memory).toBeDefined();
      }
    }
    const collector = deployments.find((d) => d.metadata.name === 'otel-collector');
    expect(collector.spec.template.metadata.annotations['website-stack.dev/config-hash']).toMatch(/^[0-9a-f]{16}$/);
  });

  test("HotROD finds the collector through OTEL_EXPORTER_OTLP_ENDPOINT, the collector's base URL", () => {
    const c = chart();
    new DevelopmentTracingStack(c, 'dev');
    const hotrod = byKind(c.toJson(), 'Deployment').find((d) => d.metadata.name === 'hotrod');
    expect(hotrod.spec.template.spec.containers[0].env).toEqual([
      { name: 'OTEL_EXPORTER_OTLP_ENDPOINT', value: 'http://otel-collector.tracing.svc:4318' },
    ]);
    expect(() => new HotRod(chart(), 'h', { otlpEndpoint: 'otel-collector:4318', jaegerUiUrl: 'http://j' })).toThrow(
      /base URL with scheme, host and port/,
    );
    // Probes connect without a request, so they leave no traces of their own.
    expect(hotrod.spec.template.spec.containers[0].readinessProbe).toMatchObject({ tcpSocket: { port: 'frontend' } });
  });

  test('HotROD sends to a gateway that requires mutual TLS with the client certificate of a Secret', () => {
    const c = chart();
    new HotRod(c, 'h', {
      otlpEndpoint: 'https://otel-collector.tracing.svc:4318',
      jaegerUiUrl: 'https://jaeger.example.com',
      namespace: 'shop',
      clientTls: { secretName: 'otel-client' },
    });
    const pod = byKind(c.toJson(), 'Deployment')[0].spec.template.spec;
    const dir = pod.containers[0].volumeMounts.find((m: any) => m.name === 'secret-0').mountPath;
    expect(pod.containers[0].env).toEqual([
      { name: 'OTEL_EXPORTER_OTLP_ENDPOINT', value: 'https://otel-collector.tracing.svc:4318' },
      { name: 'OTEL_EXPORTER_OTLP_CERTIFICATE', value: `${dir}/ca.crt` },
      { name: 'OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE', value: `${dir}/tls.crt` },
      { name: 'OTEL_EXPORTER_OTLP_CLIENT_KEY', value: `${dir}/tls.key` },
    ]);
    expect(pod.volumes.find((v: any) => v.name === 'secret-0').secret.secretName).toBe('otel-client');
    expect(
      () =>
        new HotRod(chart(), 'h', {
          otlpEndpoint: 'http://otel-collector:4318',
          jaegerUiUrl: 'http://j',
          clientTls: { secretName: 'otel-client' },
        }),
    ).toThrow(/clientTls needs an https:\/\/ otlpEndpoint/);
  });

  test('Jaeger all-in-one: memory bounded by max_traces; Badger on a claim with a span TTL and one writer at a time', () => {
    const memory = new JaegerAllInOne(chart(), 'j');
    expect((memory.config as any).extensions.jaeger_storage.backends.main).toEqual({ memory: { max_traces: 50000 } });
    const c = chart();
    const badger = new JaegerAllInOne(c, 'j', { storage: AllInOneStorage.badger({ spanTtl: '72h', size: '5Gi' }) });
    expect((badger.config as any).extensions.jaeger_storage.backends.main.badger).toMatchObject({
      ttl: { spans: '72h' },
      directories: { keys: '/var/lib/jaeger/keys' },
    });
    const objects = c.toJson();
    expect(byKind(objects, 'PersistentVolumeClaim')[0].spec.resources.requests.storage).toBe('5Gi');
    expect(byKind(objects, 'Deployment')[0].spec.strategy.type).toBe('Recreate');
    expect(() => new JaegerAllInOne(chart(), 'j', { storage: AllInOneStorage.badger({ spanTtl: '7 days' }) })).toThrow(
      /spanTtl must be a Go duration/,
    );
  });

  test('Jaeger all-in-one with OTLP off has only the Thrift receivers, and no OTLP ports', () => {
    const c = chart();
    const j = new JaegerAllInOne(c, 'j', { otlpEnabled: false });
    expect((j.config as any).service.pipelines.traces.receivers).toEqual(['jaeger']);
    const service = byKind(c.toJson(), 'Service')[0];
    expect(service.spec.ports.map((p: any) => p.name)).not.toContain('otlp-grpc');
    expect(service.spec.ports.filter((p: any) => p.protocol === 'UDP').map((p: any) => p.port)).toEqual([6831, 6832]);
  });
});

describe('Jaeger for production', () => {
  const es = ProductionStorage.elasticsearch({
    serverUrls: ['https://es.example:9200'],
    credentials: { secretName: 'es' },
    caSecretName: 'es-ca',
  });

  test('collector and query are separate Deployments; the collector scales on CPU and keeps one replica through disruptions', () => {
    const c = chart();
    new JaegerProduction(c, 'j', { storage: es });
    const objects = c.toJson();
    expect(byKind(objects, 'Deployment').map((d) => [d.metadata.name, d.spec.replicas])).toEqual([
      ['jaeger-collector', 2],
      ['jaeger-query', 2],
    ]);
    expect(byKind(objects, 'HorizontalPodAutoscaler')[0].spec).toMatchObject({
      minReplicas: 2,
      maxReplicas: 10,
      scaleTargetRef: { name: 'jaeger-collector' },
    });
    expect(byKind(objects, 'PodDisruptionBudget')[0].spec.maxUnavailable).toBe(1);
  });

  test('collector and query each keep one replica through drains, and let pods that are not Ready go regardless', () => {
    const c = chart();
    new JaegerProduction(c, 'j', { storage: es });
    const budgets = byKind(c.toJson(), 'PodDisruptionBudget');
    expect(budgets.map((b) => [b.metadata.name, b.spec])).toEqual(
      ['jaeger-collector', 'jaeger-query'].map((name) => [
        name,
        {
          maxUnavailable: 1,
          unhealthyPodEvictionPolicy: 'AlwaysAllow',
          selector: { matchLabels: { 'app.kubernetes.io/name': name } },
        },
      ]),
    );
    const single = chart();
    new JaegerProduction(single, 'j', { storage: es, queryReplicas: 1 });
    expect(byKind(single.toJson(), 'PodDisruptionBudget').map((b) => b.metadata.name)).toEqual(['jaeger-collector']);
    expect(() => new JaegerProduction(chart(), 'j', { storage: es, queryReplicas: 0 })).toThrow(
      /queryReplicas must be a whole number >= 1, got 0/,
    );
  });

  test("collector and query replicas prefer other nodes and spread over zones, softly unless told; only their own rollout's pods count", () => {
    const podSpec = (
      spread?: { acrossNodes?: 'preferred' | 'required'; acrossZones?: 'preferred' | 'required' },
      name = 'jaeger-collector',
    ) => {
      const c = chart();
      new JaegerProduction(c, 'j', { storage: es, ...(spread ? { spread } : {}) });
      return byKind(c.toJson(), 'Deployment').find((d) => d.metadata.name === name).spec.template.spec;
    };
    const selector = {
      matchLabels: { 'app.kubernetes.io/name': 'jaeger-collector', 'app.kubernetes.io/component': 'collector' },
    };
    const term = {
      labelSelector: selector,
      matchLabelKeys: ['pod-template-hash'],
      topologyKey: 'kubernetes.io/hostname',
    };
    const soft = podSpec();
    expect(soft.affinity).toEqual({
      podAntiAffinity: { preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 100, podAffinityTerm: term }] },
    });
    expect(soft.topologySpreadConstraints).toEqual([
      {
        maxSkew: 1,
        topologyKey: 'topology.kubernetes.io/zone',
        whenUnsatisfiable: 'ScheduleAnyway',
        labelSelector: selector,
        matchLabelKeys: ['pod-template-hash'],
      },
    ]);
    expect(
      podSpec(undefined, 'jaeger-query').affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0]
        .podAffinityTerm.labelSelector.matchLabels['app.kubernetes.io/name'],
    ).toBe('jaeger-query');
    const hard = podSpec({ acrossNodes: 'required', acrossZones: 'required' });
    expect(hard.affinity).toEqual({ podAntiAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [term] } });
    expect(hard.topologySpreadConstraints[0].whenUnsatisfiable).toBe('DoNotSchedule');
  });

  test("the index cleaner's Jobs carry no TTL: the CronJob's history limits keep one success and three failures", () => {
    const c = chart();
    new JaegerProduction(c, 'j', { storage: es });
    const cleaner = byKind(c.toJson(), 'CronJob')[0];
    expect(cleaner.spec).toMatchObject({ successfulJobsHistoryLimit: 1, failedJobsHistoryLimit: 3 });
    expect(cleaner.spec.jobTemplate.spec.ttlSecondsAfterFinished).toBeUndefined();
  });

  test('Elasticsearch credentials come from the Secret (password as a re-read file), and a daily cleaner keeps 7 days', () => {
    const c = chart();
    const j = new JaegerProduction(c, 'j', { storage: es });
    expect((j.collectorConfig as any).extensions.jaeger_storage.backends.main.elasticsearch).toEqual({
      server_urls: ['https://es.example:9200'],
      indices: { index_prefix: 'jaeger' },
      auth: { basic: { username: '${env:ES_USERNAME}', password_file: '/etc/jaeger/storage/credentials/password' } },
      tls: { ca_file: '/etc/jaeger/storage/ca/ca.crt' },
    });
    const text = JSON.stringify(c.toJson());
    expect(text).not.toMatch(/"password":"[^$]/);
    const cleaner = byKind(c.toJson(), 'CronJob')[0];
    expect(cleaner.spec.schedule).toBe('55 23 * * *');
    const container = cleaner.spec.jobTemplate.spec.template.spec.containers[0];
    expect(container.args).toEqual(['7', 'https://es.example:9200']);
    expect(container.env).toEqual(
      expect.arrayContaining([
        { name: 'ES_PASSWORD', valueFrom: { secretKeyRef: { name: 'es', key: 'password' } } },
        { name: 'INDEX_PREFIX', value: 'jaeger' },
      ]),
    );
  });

  test('query traces itself only where it receives its own OTLP: all-in-one yes, the split query (no receiver) no', () => {
    const selfTracing = (config: any) => config.extensions.jaeger_query.enable_tracing;
    expect(selfTracing(new JaegerAllInOne(chart(), 'j').config)).toBe(true);
    expect(selfTracing(new JaegerAllInOne(chart(), 'j', { otlpEnabled: false }).config)).toBe(false);
    expect(selfTracing(new JaegerProduction(chart(), 'j', { storage: es }).queryConfig)).toBe(false);
  });

  test('Cassandra keeps traces 7 days by TTL; collector and query both create the schema when missing, whichever starts first', () => {
    const j = new JaegerProduction(chart(), 'j', {
      storage: ProductionStorage.cassandra({ servers: ['cassandra:9042'], credentials: { secretName: 'c' } }),
    });
    const schema = (config: any) => config.extensions.jaeger_storage.backends.main.cassandra.schema;
    expect(schema(j.collectorConfig)).toEqual({ keyspace: 'jaeger_v1_dc1', create: true, trace_ttl: '168h' });
    expect(schema(j.queryConfig)).toEqual(schema(j.collectorConfig));
    expect((j.collectorConfig as any).extensions.jaeger_storage.backends.main.cassandra.connection.auth.basic).toEqual({
      username: '${env:CASSANDRA_USERNAME}',
      password: '${env:CASSANDRA_PASSWORD}',
    });
  });

  test("mutual TLS on the collector: OTLP receivers need client certificates signed by the Secret's CA", () => {
    const j = new JaegerProduction(chart(), 'j', { storage: es, collectorTls: { secretName: 'tls' } });
    expect((j.collectorConfig as any).receivers.otlp.protocols.grpc.tls).toEqual({
      cert_file: '/etc/jaeger/tls/tls.crt',
      key_file: '/etc/jaeger/tls/tls.key',
      client_ca_file: '/etc/jaeger/tls/ca.crt',
      min_version: '1.2',
    });
  });

  test('the production stack refuses mutual TLS without a client certificate for its collector', () => {
    expect(
      () => new ProductionTracingStack(chart(), 's', { jaeger: { storage: es, collectorTls: { secretName: 'tls' } } }),
    ).toThrow(/set collectorClientTlsSecret/);
  });
});

describe('localize (cluster addresses → local ones, the only change the tests make to dist/ configs)', () => {
  const addresses = {
    'jaeger.tracing.svc:4317': '127.0.0.1:5001',
    '0.0.0.0:4318': '127.0.0.1:5002',
    '/etc/otelcol/tls/ca.crt': '/tmp/x/ca.crt',
    '0.0.0.0:8888': '127.0.0.1:5003',
  };

  test('replaces whole addresses and paths wherever they appear, and nothing else', () => {
    const doc = {
      a: 'jaeger.tracing.svc:4317',
      b: 'http://jaeger.tracing.svc:4317/v1',
      c: ['0.0.0.0:4318', '0.0.0.0:43180', 'xjaeger.tracing.svc:4317', 'jaeger.tracing.svc:4317.example'],
      d: { ca_file: '/etc/otelcol/tls/ca.crt', other: '/etc/otelcol/tls/ca.crt.bak' },
      e: { prometheus: { host: '0.0.0.0', port: 8888 } },
      f: 42,
    };
    // The expected document mirrors the input key by key, so each key reads as one case.
    expect(localize(doc, addresses)).toEqual({
      a: '127.0.0.1:5001',
      b: 'http://127.0.0.1:5001/v1',
      c: ['127.0.0.1:5002', '0.0.0.0:43180', 'xjaeger.tracing.svc:4317', 'jaeger.tracing.svc:4317.example'],
      d: { ca_file: '/tmp/x/ca.crt', other: '/etc/otelcol/tls/ca.crt.bak' },
      e: { prometheus: { host: '127.0.0.1', port: 5003 } },
      f: 42,
    });
  });
});
