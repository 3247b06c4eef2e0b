import { controlPlaneProbeConditions } from '../../lib/tracing/collector/control-plane.ts';
import {
  assertValidBackends,
  backendExporter,
  EXPORT_QUEUE,
  EXPORT_RETRY,
  exporterAuth,
  exporterTls,
  ForwardingAuth,
} from '../../lib/tracing/collector/exporters.ts';
import {
  CollectorSampling,
  healthCheckConditions,
  processorChain,
  tailSampling,
} from '../../lib/tracing/collector/processors.ts';
import { assertValidReceiverSecurity, otlpReceivers } from '../../lib/tracing/collector/receivers.ts';
import { assertValidRouting, tracePipelines } from '../../lib/tracing/collector/routing.ts';
import { assertReplicasSeeWholeTraces, collectorConfig, collectorTelemetry } from '../../lib/tracing/otel-collector.ts';

// The pieces collectorConfig composes, each on its own: test/unit/tracing.test.ts proves the
// composed documents, these the branches it does not reach.

const JAEGER = { name: 'jaeger', endpoint: 'jaeger.tracing.svc:4317' };
const secret = (secretName: string, key = 'key') => ({ secretName, key });

describe('exporters: one per backend, with its TLS and its credentials', () => {
  test('bearer-token: bearertokenauth/<backend> reads the token from <BACKEND>_BEARER_TOKEN, fed by the Secret', () => {
    expect(exporterAuth('vendor-eu', ForwardingAuth.bearerToken(secret('vendor', 'token')))).toEqual({
      authenticator: 'bearertokenauth/vendor-eu',
      extension: { token: '${env:VENDOR_EU_BEARER_TOKEN}' },
      env: { name: 'VENDOR_EU_BEARER_TOKEN', valueFrom: { secretKeyRef: { name: 'vendor', key: 'token' } } },
    });
  });

  test('basic: basicauth/<backend> as a client, the username inline and the password from <BACKEND>_PASSWORD', () => {
    expect(exporterAuth('central', ForwardingAuth.basic('tracing', secret('central', 'password')))).toEqual({
      authenticator: 'basicauth/central',
      extension: { client_auth: { username: 'tracing', password: '${env:CENTRAL_PASSWORD}' } },
      env: { name: 'CENTRAL_PASSWORD', valueFrom: { secretKeyRef: { name: 'central', key: 'password' } } },
    });
  });

  test('oauth2-client-credentials: oauth2client/<backend> with the token URL, the scopes when given, the secret from <BACKEND>_CLIENT_SECRET', () => {
    const credentials = {
      tokenUrl: 'https://idp.example/token',
      clientId: 'collector',
      clientSecret: secret('idp', 'secret'),
    };
    const auth = ForwardingAuth.oauth2ClientCredentials(credentials);
    expect(
      exporterAuth(
        'idp',
        ForwardingAuth.oauth2ClientCredentials({ ...credentials, scopes: ['traces.write', 'openid'] }),
      ),
    ).toEqual({
      authenticator: 'oauth2client/idp',
      extension: {
        client_id: 'collector',
        client_secret: '${env:IDP_CLIENT_SECRET}',
        token_url: 'https://idp.example/token',
        scopes: ['traces.write', 'openid'],
      },
      env: { name: 'IDP_CLIENT_SECRET', valueFrom: { secretKeyRef: { name: 'idp', key: 'secret' } } },
    });
    expect(exporterAuth('idp', auth).extension).not.toHaveProperty('scopes');
  });

  test('TLS: gRPC is plaintext only when tls is unset; an HTTP backend follows its URL; a Secret brings a private CA, and a client certificate for mutual TLS', () => {
    expect(exporterTls(JAEGER)).toEqual({ tls: { insecure: true }, secretMounts: [] });
    expect(exporterTls({ name: 'h', protocol: 'http', endpoint: 'https://otlp.example.net' })).toEqual({
      secretMounts: [],
    });
    expect(exporterTls({ ...JAEGER, tls: {} })).toEqual({ tls: { min_version: '1.2' }, secretMounts: [] });
    expect(exporterTls({ ...JAEGER, tls: { secretName: 'jaeger-ca' } })).toEqual({
      tls: { ca_file: '/etc/otelcol/tls/jaeger/ca.crt', min_version: '1.2' },
      secretMounts: [{ secretName: 'jaeger-ca', mountPath: '/etc/otelcol/tls/jaeger', keys: ['ca.crt'] }],
    });
    expect(exporterTls({ ...JAEGER, tls: { secretName: 'jaeger-client', clientCertificate: true } })).toEqual({
      tls: {
        ca_file: '/etc/otelcol/tls/jaeger/ca.crt',
        cert_file: '/etc/otelcol/tls/jaeger/tls.crt',
        key_file: '/etc/otelcol/tls/jaeger/tls.key',
        min_version: '1.2',
      },
      secretMounts: [
        { secretName: 'jaeger-client', mountPath: '/etc/otelcol/tls/jaeger', keys: ['ca.crt', 'tls.crt', 'tls.key'] },
      ],
    });
  });

  test('the exporter names its authenticator, queues and retries through outages, and is otlp_http/<name> for an HTTP backend', () => {
    const exporter = backendExporter({
      name: 'central',
      protocol: 'http',
      endpoint: 'https://otlp.central.example',
      auth: ForwardingAuth.basic('u', secret('central')),
    });
    expect(exporter.id).toBe('otlp_http/central');
    expect(exporter.exporter).toEqual({
      endpoint: 'https://otlp.central.example',
      auth: { authenticator: 'basicauth/central' },
      retry_on_failure: EXPORT_RETRY,
      sending_queue: EXPORT_QUEUE,
    });
    expect(Object.keys(exporter.extensions)).toEqual(['basicauth/central']);
    expect(exporter.env.map((e) => e.name)).toEqual(['CENTRAL_PASSWORD']);
    const plain = backendExporter(JAEGER);
    expect(plain.id).toBe('otlp_grpc/jaeger');
    expect(plain.exporter).not.toHaveProperty('auth');
    expect([plain.extensions, plain.env, plain.secretMounts]).toEqual([{}, [], []]);
  });

  test.each([
    ['no backend', [], /W: name at least one backend to export to/],
    [
      'a name with capitals or underscores',
      [{ name: 'Jaeger_1', endpoint: 'j:4317' }],
      /backend name 'Jaeger_1' must be lower-case letters, digits and dashes/,
    ],
    ['a name used twice', [JAEGER, { ...JAEGER, endpoint: 'other:4317' }], /two backends are named 'jaeger'/],
    [
      "the name of the collector's own receiver",
      [{ name: 'receiver', endpoint: 'j:4317' }],
      /backend name 'receiver' is taken by the collector's own receiver settings/,
    ],
    [
      'an OTLP/HTTP endpoint without scheme',
      [{ name: 'h', protocol: 'http', endpoint: 'otlp.example.net:4318' }],
      /backend 'h' speaks OTLP\/HTTP: its endpoint must be an http\(s\):\/\/ base URL, got 'otlp.example.net:4318'/,
    ],
    [
      'gRPC credentials without tls',
      [{ ...JAEGER, auth: ForwardingAuth.basic('u', secret('p')) }],
      /backend 'jaeger' would send its basic credentials in clear text; set tls/,
    ],
    [
      'tls to an http:// endpoint',
      [{ name: 'h', protocol: 'http', endpoint: 'http://h:4318', tls: { secretName: 'ca' } }],
      /backend 'h' has tls settings but an http:\/\/ endpoint; use https:\/\//,
    ],
    [
      'a client certificate without its Secret',
      [{ ...JAEGER, tls: { clientCertificate: true } }],
      /backend 'jaeger' wants a client certificate: name the Secret holding tls.crt and tls.key in tls.secretName/,
    ],
  ] as const)('%s is refused, saying what to change', (_, backends, error) => {
    expect(() => assertValidBackends(backends, 'W')).toThrow(error);
  });
});

describe('receivers: OTLP over gRPC and HTTP, with the same TLS and authentication of senders', () => {
  test('open by default: both protocols on every interface, nothing from the pod', () => {
    expect(otlpReceivers({})).toEqual({
      receivers: { otlp: { protocols: { grpc: { endpoint: '0.0.0.0:4317' }, http: { endpoint: '0.0.0.0:4318' } } } },
      extensions: {},
      env: [],
      secretMounts: [],
    });
  });

  test('TLS from the Secret, verifying clients against its ca.crt unless requireClientCertificate is false', () => {
    const mutual = otlpReceivers({ tls: { secretName: 'collector-tls' } });
    const tls = {
      cert_file: '/etc/otelcol/tls/receiver/tls.crt',
      key_file: '/etc/otelcol/tls/receiver/tls.key',
      client_ca_file: '/etc/otelcol/tls/receiver/ca.crt',
      min_version: '1.2',
    };
    expect(mutual.receivers.otlp.protocols).toEqual({
      grpc: { endpoint: '0.0.0.0:4317', tls },
      http: { endpoint: '0.0.0.0:4318', tls },
    });
    expect(mutual.secretMounts).toEqual([
      { secretName: 'collector-tls', mountPath: '/etc/otelcol/tls/receiver', keys: ['ca.crt', 'tls.crt', 'tls.key'] },
    ]);
    const server = otlpReceivers({ tls: { secretName: 'collector-tls', requireClientCertificate: false } });
    expect(server.receivers.otlp.protocols.grpc?.tls).not.toHaveProperty('client_ca_file');
    expect(server.secretMounts).toEqual([
      { secretName: 'collector-tls', mountPath: '/etc/otelcol/tls/receiver', keys: ['tls.crt', 'tls.key'] },
    ]);
  });

  test('a bearer token (from RECEIVER_BEARER_TOKEN) or an OIDC issuer authenticates senders on both protocols', () => {
    const bearer = otlpReceivers({ bearerToken: secret('senders', 'token') });
    expect(bearer.extensions).toEqual({ 'bearertokenauth/receiver': { token: '${env:RECEIVER_BEARER_TOKEN}' } });
    expect(bearer.env).toEqual([
      { name: 'RECEIVER_BEARER_TOKEN', valueFrom: { secretKeyRef: { name: 'senders', key: 'token' } } },
    ]);
    expect(bearer.receivers.otlp.protocols.grpc?.auth).toEqual({ authenticator: 'bearertokenauth/receiver' });
    expect(bearer.receivers.otlp.protocols.http?.auth).toEqual({ authenticator: 'bearertokenauth/receiver' });
    const oidc = otlpReceivers({ oidc: { issuerUrl: 'https://idp.example', audience: 'collector' } });
    expect(oidc.extensions).toEqual({ 'oidc/receiver': { issuer_url: 'https://idp.example', audience: 'collector' } });
    expect(oidc.env).toEqual([]);
    expect(oidc.receivers.otlp.protocols.http?.auth).toEqual({ authenticator: 'oidc/receiver' });
  });

  test('bearer token and OIDC together are refused', () => {
    expect(() =>
      assertValidReceiverSecurity(
        { bearerToken: secret('s'), oidc: { issuerUrl: 'https://idp.example', audience: 'a' } },
        'W',
      ),
    ).toThrow('W: receiverSecurity takes bearerToken or oidc, not both');
    expect(() => assertValidReceiverSecurity({ bearerToken: secret('s') }, 'W')).not.toThrow();
  });
});

describe('the processor chain', () => {
  test('memory_limiter leaves a quarter of its share for spikes (at least 1 %); batch takes its timeout and size', () => {
    const { processors } = processorChain({
      memoryLimitPercentage: 50,
      batch: { timeout: '200ms', sendBatchSize: 10 },
    });
    expect(processors.memory_limiter).toEqual({
      check_interval: '1s',
      limit_percentage: 50,
      spike_limit_percentage: 13,
    });
    expect(processors.batch).toEqual({ timeout: '200ms', send_batch_size: 10 });
    expect(processorChain({ memoryLimitPercentage: 1 }).processors.memory_limiter).toMatchObject({
      spike_limit_percentage: 1,
    });
  });

  test('the chain: memory_limiter, head sampling, the trace-level decision, batch; each only when it has work', () => {
    expect(processorChain({}).chain).toEqual(['memory_limiter', 'probabilistic_sampler', 'tail_sampling', 'batch']);
    expect(processorChain({ sampling: CollectorSampling.always() }).chain).toEqual([
      'memory_limiter',
      'tail_sampling',
      'batch',
    ]);
    expect(processorChain({ sampling: CollectorSampling.probabilistic(5), healthCheckPaths: [] }).chain).toEqual([
      'memory_limiter',
      'probabilistic_sampler',
      'batch',
    ]);
    expect(processorChain({ sampling: CollectorSampling.tail({ percentage: 5 }), healthCheckPaths: [] }).chain).toEqual(
      ['memory_limiter', 'tail_sampling', 'batch'],
    );
  });

  test('tail sampling takes its threshold, decision wait and trace count, and sizes the decision cache from the count', () => {
    const tail = tailSampling(
      CollectorSampling.tail({ percentage: 5, latencyThresholdMs: 300, decisionWait: '30s', numTraces: 1000 })
        ._settings,
      [],
    );
    expect(tail).toEqual({
      decision_wait: '30s',
      num_traces: 1000,
      decision_cache: { sampled_cache_size: 2000, non_sampled_cache_size: 2000 },
      policies: [
        { name: 'errors', type: 'status_code', status_code: { status_codes: ['ERROR'] } },
        { name: 'slow', type: 'latency', latency: { threshold_ms: 300 } },
        { name: 'rest', type: 'probabilistic', probabilistic: { sampling_percentage: 5 } },
      ],
    });
    expect(tailSampling(CollectorSampling.always()._settings, [])).toBeUndefined();
  });

  test('health-check paths are matched literally: regular-expression characters in them are escaped', () => {
    expect(healthCheckConditions(['/status.json', 'ping'])[0]).toBe(
      'IsRootSpan() and IsMatch(attributes["url.path"], "^/(status\\\\.json|ping)/?$")',
    );
  });
});

describe('the traces pipelines', () => {
  const EU = { name: 'eu', endpoint: 'jaeger.eu.svc:4317' };
  const VENDOR = { name: 'vendor', protocol: 'http', endpoint: 'https://otlp.vendor.example' } as const;
  const CHAIN = ['memory_limiter', 'tail_sampling', 'batch'];

  test('without routing: one pipeline from otlp through the chain to every backend', () => {
    expect(tracePipelines([JAEGER, VENDOR], CHAIN)).toEqual({
      filters: {},
      pipelines: {
        traces: { receivers: ['otlp'], processors: CHAIN, exporters: ['otlp_grpc/jaeger', 'otlp_http/vendor'] },
      },
    });
  });

  test('routing: a pipeline per routed backend, its filter right after memory_limiter keeping its route values and, for a default backend, what no route claims', () => {
    const { filters, pipelines } = tracePipelines([JAEGER, EU, VENDOR], CHAIN, {
      attribute: 'tenant',
      routes: [
        { value: 'eu', backends: ['eu', 'vendor'] },
        { value: 'acme', backends: ['vendor'] },
      ],
      defaultBackends: ['jaeger', 'vendor'],
    });
    expect(Object.keys(pipelines)).toEqual(['traces/eu', 'traces/vendor', 'traces/jaeger']);
    expect(pipelines['traces/vendor']).toEqual({
      receivers: ['otlp'],
      processors: ['memory_limiter', 'filter/route-vendor', 'tail_sampling', 'batch'],
      exporters: ['otlp_http/vendor'],
    });
    const claimed = 'resource.attributes["tenant"] == "eu" or resource.attributes["tenant"] == "acme"';
    expect(filters['filter/route-vendor'].traces.span).toEqual([
      `not (resource.attributes["tenant"] == "eu" or resource.attributes["tenant"] == "acme" or (resource.attributes["tenant"] == nil or not (${claimed})))`,
    ]);
    expect(filters['filter/route-jaeger'].traces.span).toEqual([
      `not ((resource.attributes["tenant"] == nil or not (${claimed})))`,
    ]);
  });

  test('with no routes every span is unclaimed: the default backends get all of them', () => {
    const { filters } = tracePipelines([JAEGER], CHAIN, {
      attribute: 'tenant',
      routes: [],
      defaultBackends: ['jaeger'],
    });
    expect(filters['filter/route-jaeger'].traces.span).toEqual([
      'not ((resource.attributes["tenant"] == nil or not (false)))',
    ]);
  });

  test('a route value listed twice, or a default backend that does not exist, is refused', () => {
    expect(() =>
      assertValidRouting(
        {
          attribute: 'tenant',
          routes: [
            { value: 'a', backends: ['jaeger'] },
            { value: 'a', backends: ['jaeger'] },
          ],
          defaultBackends: [],
        },
        [JAEGER],
        'W',
      ),
    ).toThrow("W: routing lists a value of 'tenant' twice");
    expect(() =>
      assertValidRouting({ attribute: 'tenant', routes: [], defaultBackends: ['jaeger', 'eu'] }, [JAEGER], 'W'),
    ).toThrow("W: routing names backend 'eu', which is not among the backends (jaeger)");
  });
});

describe('the composed document', () => {
  test('authenticators are listed exporters first, then receivers; env and Secret mounts in the same order', () => {
    const { config, env, secretMounts } = collectorConfig({
      backends: [{ ...JAEGER, tls: { secretName: 'jaeger-ca' }, auth: ForwardingAuth.bearerToken(secret('jaeger')) }],
      receiverSecurity: { tls: { secretName: 'collector-tls' }, bearerToken: secret('senders') },
      logLevel: 'debug',
    });
    expect(config.service.extensions).toEqual(['health_check', 'bearertokenauth/jaeger', 'bearertokenauth/receiver']);
    expect(Object.keys(config.extensions!)).toEqual(config.service.extensions);
    expect(env.map((e) => e.name)).toEqual(['JAEGER_BEARER_TOKEN', 'RECEIVER_BEARER_TOKEN']);
    expect(secretMounts.map((m) => m.secretName)).toEqual(['jaeger-ca', 'collector-tls']);
    expect(config.service.telemetry).toEqual(collectorTelemetry('debug'));
    expect(collectorTelemetry().logs).toEqual({ level: 'info', encoding: 'json' });
  });

  test('several replicas are fine when no processor decides per trace', () => {
    const { config } = collectorConfig({
      backends: [JAEGER],
      sampling: CollectorSampling.always(),
      healthCheckPaths: [],
      controlPlane: false,
    });
    expect(() => assertReplicasSeeWholeTraces(config, undefined, 3, 'W')).not.toThrow();
    const decided = collectorConfig({ backends: [JAEGER] }).config;
    expect(() => assertReplicasSeeWholeTraces(decided, undefined, 1, 'W')).not.toThrow();
    expect(() => assertReplicasSeeWholeTraces(decided, undefined, 2, 'W')).toThrow(
      /^W: dropping health-check traces whole/,
    );
  });
});

describe("the control plane's pipeline", () => {
  const isControlPlane =
    '(resource.attributes["service.name"] == "apiserver" or resource.attributes["service.name"] == "etcd" or resource.attributes["service.name"] == "kubelet")';

  test('by default: traces/control-plane keeps the API server, etcd and the kubelet, which every other pipeline drops before its sampling', () => {
    // The whole default chain: test/unit/tracing.test.ts, "the defaults are the spec's sample".
    const { config } = collectorConfig({ backends: [JAEGER] });
    expect(config.service.pipelines.traces.processors?.slice(0, 2)).toEqual(['memory_limiter', 'filter/applications']);
    expect(config.processors!['filter/applications']).toEqual({
      error_mode: 'ignore',
      traces: { span: [isControlPlane] },
    });
    expect(config.service.pipelines['traces/control-plane']).toEqual({
      receivers: ['otlp'],
      processors: ['memory_limiter', 'filter/control-plane', 'tail_sampling/control-plane', 'batch'],
      exporters: ['otlp_grpc/jaeger'],
    });
    expect(config.processors!['filter/control-plane']).toEqual({
      error_mode: 'ignore',
      traces: { span: [`not ${isControlPlane}`] },
    });
  });

  test("its tail sampling keeps errors, requests slower than 1 s and 10 % of the rest, and drops the API server's probes", () => {
    const { config } = collectorConfig({ backends: [JAEGER] });
    expect(config.processors!['tail_sampling/control-plane']).toEqual(
      tailSampling(
        CollectorSampling.tail({ percentage: 10, latencyThresholdMs: 1000 })._settings,
        ['/healthz', '/readyz', '/livez', '/health'],
        controlPlaneProbeConditions,
      ),
    );
    const custom = collectorConfig({
      backends: [JAEGER],
      controlPlaneOptions: { services: ['kube-apiserver'], percentage: 25, latencyThresholdMs: 300 },
      healthCheckPaths: ['/livez'],
    }).config;
    expect(custom.processors!['tail_sampling/control-plane']).toEqual(
      tailSampling(
        CollectorSampling.tail({ percentage: 25, latencyThresholdMs: 300 })._settings,
        ['/livez'],
        controlPlaneProbeConditions,
      ),
    );
    expect(custom.processors!['filter/applications']).toEqual({
      error_mode: 'ignore',
      traces: { span: ['(resource.attributes["service.name"] == "kube-apiserver")'] },
    });
  });

  test("the API server's probes are matched by their server span at any depth, with their checks (/readyz/etcd), literally", () => {
    expect(controlPlaneProbeConditions(['/readyz', '/a.b'])).toEqual([
      'kind == SPAN_KIND_SERVER and IsMatch(attributes["url.path"], "^/(readyz|a\\\\.b)(/[^/]*)?$")',
      'kind == SPAN_KIND_SERVER and IsMatch(attributes["http.target"], "^/(readyz|a\\\\.b)(/[^/]*)?(\\\\?.*)?$")',
    ]);
  });

  test('keeping every one (the development stack) decides a second after the root; with no probes to drop, nothing decides per trace', () => {
    const every = collectorConfig({ backends: [JAEGER], controlPlaneOptions: { percentage: 100 } }).config;
    expect(every.processors!['tail_sampling/control-plane']).toMatchObject({
      decision_wait_after_root_received: '1s',
      policies: [
        { name: 'health-checks', type: 'drop' },
        { name: 'everything-else', type: 'always_sample' },
      ],
    });
    const none = collectorConfig({
      backends: [JAEGER],
      sampling: CollectorSampling.always(),
      healthCheckPaths: [],
      controlPlaneOptions: { percentage: 100 },
    }).config;
    expect(none.service.pipelines['traces/control-plane'].processors).toEqual([
      'memory_limiter',
      'filter/control-plane',
      'batch',
    ]);
    expect(() => assertReplicasSeeWholeTraces(none, CollectorSampling.always(), 3, 'W')).not.toThrow();
  });

  test('with routing, control-plane spans go to the default backends; false leaves the pipeline out', () => {
    const routed = collectorConfig({
      backends: [JAEGER, { name: 'eu', endpoint: 'eu.example.com:4317' }],
      routing: { attribute: 'tenant', routes: [{ value: 'eu', backends: ['eu'] }], defaultBackends: ['jaeger'] },
    }).config;
    expect(routed.service.pipelines['traces/control-plane'].exporters).toEqual(['otlp_grpc/jaeger']);
    for (const name of ['traces/eu', 'traces/jaeger'])
      expect(routed.service.pipelines[name].processors).toContain('filter/applications');
    const off = collectorConfig({ backends: [JAEGER], controlPlane: false }).config;
    expect(Object.keys(off.service.pipelines)).toEqual(['traces']);
    expect(
      Object.keys(off.processors!).filter((id) => id.includes('control-plane') || id === 'filter/applications'),
    ).toEqual([]);
  });

  test('several replicas would split its traces; settings it cannot run with are refused by name', () => {
    const { config } = collectorConfig({
      backends: [JAEGER],
      sampling: CollectorSampling.always(),
      healthCheckPaths: [],
    });
    expect(() => assertReplicasSeeWholeTraces(config, CollectorSampling.always(), 2, 'W')).toThrow(
      /^W: the control plane's tail sampling \(controlPlane: false leaves it out\) decides per trace/,
    );
    expect(() => collectorConfig({ backends: [JAEGER], controlPlaneOptions: { services: [] } }, 'W')).toThrow(
      'W: controlPlane.services must name at least one service, none empty',
    );
    expect(() => collectorConfig({ backends: [JAEGER], controlPlaneOptions: { percentage: 101 } }, 'W')).toThrow(
      'W: controlPlane.percentage is 101; give a percentage between 0 and 100',
    );
    expect(() => collectorConfig({ backends: [JAEGER], controlPlaneOptions: { latencyThresholdMs: 0 } }, 'W')).toThrow(
      'W: controlPlane.latencyThresholdMs is 0; give a whole number of ms above 0',
    );
  });
});
