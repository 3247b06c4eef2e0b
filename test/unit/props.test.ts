// What the jsii API leaves to run time: Python, Java and Go apps pass strings where TypeScript has
// literal types, and a flag and its options where TypeScript once took `boolean | Options`. Each
// construct checks them at synth and says what to change.
import { App, Chart } from 'cdk8s';
import {
  AllInOneStorage,
  CollectorSampling,
  DevelopmentTracingStack,
  ForwardingAuth,
  JaegerAllInOne,
  OtelCollector,
  ProductionStorage,
  ShellOperator,
  TracingWorkload,
  WebsiteCrd,
  WebsiteOperator,
} from '../../lib/index.ts';

const chart = () => new Chart(new App(), 'c');
// A string from another language, which TypeScript would refuse at compile time.
const untyped = (value: string): any => value;
const jaeger = { name: 'jaeger', endpoint: 'jaeger-collector.tracing.svc:4317' };
/** A TracingWorkload with `props` over the least it needs. */
const workload = (props: object) =>
  new TracingWorkload(chart(), 'w', {
    namespace: 'n',
    name: 'w',
    component: 'x',
    image: 'i',
    ports: { http: 80 },
    resources: { cpuRequest: '1m', memoryRequest: '1Mi', memoryLimit: '2Mi' },
    ...props,
  });

describe('a string outside the values a prop takes fails at synth, naming the prop and its values', () => {
  test.each([
    [
      'WebsiteOperator webhookCertificates',
      () => new WebsiteOperator(chart(), 'op', { webhookCertificates: untyped('vault') }),
      /WebsiteOperator at 'c\/op': webhookCertificates is 'vault'; give one of 'operator', 'cert-manager'/,
    ],
    [
      "a backend's protocol",
      () => new OtelCollector(chart(), 'col', { backends: [{ ...jaeger, protocol: untyped('tcp') }] }),
      /backend 'jaeger': protocol is 'tcp'; give one of 'grpc', 'http'/,
    ],
    [
      "the collector's logLevel",
      () => new OtelCollector(chart(), 'col', { backends: [jaeger], logLevel: untyped('trace') }),
      /logLevel is 'trace'; give one of 'debug', 'info', 'warn', 'error'/,
    ],
    [
      'a spread',
      () => workload({ replicas: 2, spread: { acrossNodes: untyped('always') } }),
      /spread: acrossNodes is 'always'; give one of 'preferred', 'required'/,
    ],
    [
      "a workload's strategy",
      () => workload({ strategy: 'BlueGreen' }),
      /strategy 'BlueGreen' is neither RollingUpdate nor Recreate/,
    ],
    [
      'a CRD version',
      () => new WebsiteCrd(chart(), 'crd', { versions: [{ name: 'v2', served: true, storage: true }] }),
      /unknown version 'v2': known versions are v1, v1beta1/,
    ],
  ])('%s', (_what, build, message) => {
    expect(build).toThrow(message);
  });
});

describe('a feature flag and its options', () => {
  test('options with the flag false contradict each other: an error naming both', () => {
    expect(
      () =>
        new WebsiteOperator(chart(), 'op', {
          networkPolicy: false,
          networkPolicyOptions: { apiServer: { ports: [6443] } },
        }),
    ).toThrow(
      "WebsiteOperator at 'c/op': networkPolicy is false but networkPolicyOptions is set: remove one of the two",
    );
    expect(() => new ShellOperator(chart(), 'sh', { networkPolicy: false, networkPolicyOptions: {} })).toThrow(
      /ShellOperator at 'c\/sh': networkPolicy is false but networkPolicyOptions is set/,
    );
    expect(
      () =>
        new DevelopmentTracingStack(chart(), 'dev', { controlPlane: false, controlPlaneOptions: { percentage: 5 } }),
    ).toThrow(/controlPlane is false but controlPlaneOptions is set/);
  });

  const kinds = (build: (c: Chart) => void) => {
    const c = chart();
    build(c);
    return c.toJson().map((o: { kind: string }) => o.kind);
  };

  test('options alone turn an optional feature on; the flag alone takes its defaults', () => {
    const flow = (props: object) => kinds((c) => new WebsiteOperator(c, 'op', props));
    expect(flow({})).not.toContain('FlowSchema');
    expect(flow({ flowControl: true })).toContain('FlowSchema');
    expect(flow({ flowControlOptions: { matchingPrecedence: 2000 } })).toContain('FlowSchema');
    expect(flow({ networkPolicy: false })).not.toContain('NetworkPolicy');
    expect(flow({})).toContain('NetworkPolicy');
  });

  test("the development stack's control plane: every trace by default, none of its pipeline when false", () => {
    const pipelines = (props: object) => {
      const stack = new DevelopmentTracingStack(chart(), 'dev', props);
      return Object.keys((stack.collector.config.service as { pipelines: object }).pipelines);
    };
    expect(pipelines({})).toContain('traces/control-plane');
    expect(pipelines({ controlPlane: false })).not.toContain('traces/control-plane');
  });
});

test('the factories of what TypeScript once wrote as unions of shapes say which kind they made', () => {
  expect(CollectorSampling.always().mode).toBe('always');
  expect(CollectorSampling.probabilistic(5).mode).toBe('probabilistic');
  expect(CollectorSampling.tail({ percentage: 1 }).mode).toBe('tail');
  expect(ForwardingAuth.bearerToken({ secretName: 's', key: 'k' }).type).toBe('bearer-token');
  expect(ForwardingAuth.basic('u', { secretName: 's', key: 'k' }).type).toBe('basic');
  expect(
    ForwardingAuth.oauth2ClientCredentials({
      tokenUrl: 'https://idp/token',
      clientId: 'c',
      clientSecret: { secretName: 's', key: 'k' },
    }).type,
  ).toBe('oauth2-client-credentials');
  expect(ProductionStorage.elasticsearch({ serverUrls: ['https://es:9200'] }).type).toBe('elasticsearch');
  expect(ProductionStorage.cassandra({ servers: ['cassandra:9042'] }).type).toBe('cassandra');
  expect(AllInOneStorage.memory().type).toBe('memory');
  expect(AllInOneStorage.badger({ spanTtl: '24h' }).type).toBe('badger');
  // And they configure what they name: badger storage makes the all-in-one's volume claim.
  const c = chart();
  expect(new JaegerAllInOne(c, 'j', { storage: AllInOneStorage.badger() }).volumeClaim).toBeDefined();
});
