import { type Manifest, only, synth } from '../../harness/manifests.ts';
import { addressPort, urlPort } from '../../lib/network-policy.ts';
import { WebsiteOperator, type WebsiteOperatorProps } from '../../lib/operator/website-operator.ts';
import { DevelopmentTracingStack } from '../../lib/tracing/development-tracing-stack.ts';
import { ProductionStorage } from '../../lib/tracing/jaeger-production.ts';
import {
  ProductionTracingStack,
  type ProductionTracingStackProps,
} from '../../lib/tracing/production-tracing-stack.ts';
import { WebsiteWorkload } from '../../lib/workload/website-workload.ts';

/** A pod somewhere: its namespace and labels. */
interface Pod {
  readonly namespace: string;
  readonly labels: Readonly<Record<string, string>>;
}

const matches = (selector: Manifest | undefined, labels: Readonly<Record<string, string>>) =>
  selector !== undefined && Object.entries(selector.matchLabels ?? {}).every(([k, v]) => labels[k] === v);
/** Whether a peer of a policy in `policyNamespace` names `pod` (namespaces carry their kubernetes.io/metadata.name label). */
const peerMatches = (peer: Manifest, policyNamespace: string, pod: Pod) => {
  if (peer.ipBlock) return false;
  const inNamespace = peer.namespaceSelector
    ? matches(peer.namespaceSelector, { 'kubernetes.io/metadata.name': pod.namespace })
    : pod.namespace === policyNamespace;
  return inNamespace && (peer.podSelector ? matches(peer.podSelector, pod.labels) : true);
};
const portMatches = (rulePorts: Manifest[] | undefined, port: number, protocol: string) =>
  rulePorts === undefined ||
  rulePorts.some((p) => (p.protocol ?? 'TCP') === protocol && (p.port === undefined || p.port === port));

/**
 * Whether `policies` let `from` open a connection to `to` on `port`: the Kubernetes semantics
 * (a pod selected by no policy of a direction is open that way; otherwise some rule of a policy
 * selecting it must allow the flow), for pod-to-pod traffic.
 */
function allowed(policies: Manifest[], from: Pod, to: Pod, port: number, protocol = 'TCP'): boolean {
  const selecting = (pod: Pod, type: string) =>
    policies.filter(
      (p) =>
        p.metadata.namespace === pod.namespace &&
        matches(p.spec.podSelector, pod.labels) &&
        p.spec.policyTypes.includes(type),
    );
  // Egress from `from` and ingress into `to` follow the same rule, mirrored: `to`/`from` name the other end.
  const admits = (pod: Pod, type: 'Egress' | 'Ingress', other: Pod) => {
    const [rulesKey, peersKey] = type === 'Egress' ? ['egress', 'to'] : ['ingress', 'from'];
    const policiesOfPod = selecting(pod, type);
    return (
      policiesOfPod.length === 0 ||
      policiesOfPod.some((p) =>
        (p.spec[rulesKey] ?? []).some(
          (r: Manifest) =>
            (r[peersKey] === undefined ||
              r[peersKey].some((peer: Manifest) => peerMatches(peer, p.metadata.namespace, other))) &&
            portMatches(r.ports, port, protocol),
        ),
      )
    );
  };
  return admits(from, 'Egress', to) && admits(to, 'Ingress', from);
}

const podOf = (manifests: Manifest[], name: string): Pod => {
  const workload = manifests.find((m) => ['Deployment', 'CronJob'].includes(m.kind) && m.metadata.name === name)!;
  const template = workload.kind === 'CronJob' ? workload.spec.jobTemplate.spec.template : workload.spec.template;
  return { namespace: workload.metadata.namespace, labels: template.metadata.labels };
};
const policiesOf = (manifests: Manifest[]) => manifests.filter((m) => m.kind === 'NetworkPolicy');
const app: Pod = { namespace: 'shop', labels: { app: 'checkout' } };
const dns: Pod = { namespace: 'kube-system', labels: { 'k8s-app': 'kube-dns' } };
const prometheus: Pod = { namespace: 'monitoring', labels: { 'app.kubernetes.io/name': 'prometheus' } };

describe("WebsiteOperator's NetworkPolicies", () => {
  const operator = (props?: WebsiteOperatorProps) => synth((chart) => new WebsiteOperator(chart, 'op', props));
  const manifests = operator();
  const policies = policiesOf(manifests);
  const pod = podOf(manifests, 'website-operator');

  test('isolate the operator both ways and deny by default every pod of this package in the namespace', () => {
    expect(policies.map((p) => p.metadata.name).sort()).toEqual(['website-operator', 'website-stack-default-deny']);
    const deny = only(manifests, 'NetworkPolicy', 'website-stack-default-deny');
    expect(deny.spec).toEqual({
      podSelector: { matchLabels: { 'app.kubernetes.io/part-of': 'website-stack' } },
      policyTypes: ['Ingress', 'Egress'],
    });
  });

  test('let the API server reach the webhook (9443) from wherever it is, and Prometheus the metrics (8080), nothing else in', () => {
    const apiServerHost: Pod = { namespace: 'elsewhere', labels: {} };
    expect(allowed(policies, apiServerHost, pod, 9443)).toBe(true);
    expect(allowed(policies, prometheus, pod, 8080)).toBe(true);
    expect(allowed(policies, app, pod, 8080)).toBe(false);
    expect(allowed(policies, prometheus, pod, 9443)).toBe(true);
    expect(allowed(policies, app, pod, 8081)).toBe(false);
  });

  test('let the operator out to the API server (443, 6443) and DNS only', () => {
    const own = only(manifests, 'NetworkPolicy', 'website-operator');
    expect(own.spec.egress[0]).toEqual({
      ports: [
        { protocol: 'TCP', port: 443 },
        { protocol: 'TCP', port: 6443 },
      ],
    });
    expect(allowed(policies, pod, dns, 53, 'UDP')).toBe(true);
    expect(allowed(policies, pod, dns, 53, 'TCP')).toBe(true);
    expect(allowed(policies, pod, app, 80)).toBe(false);
  });

  test('leave the Websites in its namespace alone', () => {
    const [deployment] = synth(
      (chart) =>
        new WebsiteWorkload(chart, 'w', {
          website: {
            apiVersion: 'web.example.com/v1',
            kind: 'Website',
            metadata: { name: 'hello', namespace: 'website-system', uid: 'u' },
            spec: { title: 't', replicas: 1 },
          },
        }),
    );
    const website: Pod = { namespace: 'website-system', labels: deployment.spec.template.metadata.labels };
    expect(policies.filter((p) => matches(p.spec.podSelector, website.labels))).toEqual([]);
    expect(allowed(policies, app, website, 8080)).toBe(true);
  });

  test('take where the API server, the webhook callers, DNS and Prometheus are, and the traces endpoint', () => {
    const narrowed = operator({
      otlpEndpoint: 'http://otel-collector.tracing.svc:4318',
      networkPolicyOptions: {
        apiServer: { peers: [{ ipBlock: { cidr: '10.0.0.0/28' } }], ports: [6443] },
        webhookFrom: [{ ipBlock: { cidr: '10.0.0.0/28' } }],
        prometheus: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'observability' } } }],
        dns: [{ ipBlock: { cidr: '169.254.20.10/32' } }],
      },
    });
    const own = only(narrowed, 'NetworkPolicy', 'website-operator');
    expect(own.spec.ingress).toEqual([
      { from: [{ ipBlock: { cidr: '10.0.0.0/28' } }], ports: [{ protocol: 'TCP', port: 9443 }] },
      {
        from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'observability' } } }],
        ports: [{ protocol: 'TCP', port: 8080 }],
      },
    ]);
    expect(own.spec.egress).toEqual([
      { to: [{ ipBlock: { cidr: '10.0.0.0/28' } }], ports: [{ protocol: 'TCP', port: 6443 }] },
      {
        to: [{ ipBlock: { cidr: '169.254.20.10/32' } }],
        ports: [
          { protocol: 'UDP', port: 53 },
          { protocol: 'TCP', port: 53 },
        ],
      },
      { ports: [{ protocol: 'TCP', port: 4318 }] },
    ]);
    expect(operator({ networkPolicy: false }).some((m) => m.kind === 'NetworkPolicy')).toBe(false);
  });
});

describe("the development trace stack's NetworkPolicies", () => {
  const manifests = synth((chart) => new DevelopmentTracingStack(chart, 'dev'));
  const policies = policiesOf(manifests);
  const [collector, jaeger, hotrod] = ['otel-collector', 'jaeger', 'hotrod'].map((n) => podOf(manifests, n));

  test('select every pod of the stack by one policy of its own and the default deny', () => {
    for (const pod of [collector, jaeger, hotrod])
      expect(
        policies
          .filter((p) => matches(p.spec.podSelector, pod.labels))
          .map((p) => p.metadata.name)
          .sort(),
      ).toHaveLength(2);
  });

  test('carry spans from applications anywhere to the collector, from the collector to Jaeger, and no other way', () => {
    expect(allowed(policies, app, collector, 4317)).toBe(true);
    expect(allowed(policies, app, collector, 4318)).toBe(true);
    expect(allowed(policies, hotrod, collector, 4318)).toBe(true);
    expect(allowed(policies, collector, jaeger, 4317)).toBe(true);
    expect(allowed(policies, app, jaeger, 4317)).toBe(false);
    expect(allowed(policies, hotrod, jaeger, 4318)).toBe(false);
    expect(allowed(policies, collector, jaeger, 16686)).toBe(false);
  });

  test('open the UIs to browsers, the metrics to Prometheus, and DNS to all', () => {
    const browserSide: Pod = { namespace: 'ingress-nginx', labels: { app: 'ingress-nginx' } };
    expect(allowed(policies, browserSide, jaeger, 16686)).toBe(true);
    expect(allowed(policies, browserSide, hotrod, 8080)).toBe(true);
    expect(allowed(policies, browserSide, hotrod, 8081)).toBe(false);
    expect(allowed(policies, prometheus, collector, 8888)).toBe(true);
    expect(allowed(policies, prometheus, jaeger, 8888)).toBe(true);
    expect(allowed(policies, app, collector, 8888)).toBe(false);
    for (const pod of [collector, jaeger, hotrod]) expect(allowed(policies, pod, dns, 53, 'UDP')).toBe(true);
  });

  test("accept Jaeger's Thrift receivers (UDP too) from applications, for clients that predate OTLP", () => {
    expect(allowed(policies, app, jaeger, 6831, 'UDP')).toBe(true);
    expect(allowed(policies, app, jaeger, 14268)).toBe(true);
    expect(allowed(policies, app, jaeger, 6831, 'TCP')).toBe(false);
  });

  test("a Jaeger without OTLP (the spec's COLLECTOR_OTLP_ENABLED off) takes Thrift only", () => {
    const thriftOnly = synth((chart) => new DevelopmentTracingStack(chart, 'dev', { jaeger: { otlpEnabled: false } }));
    const jaegerPod = podOf(thriftOnly, 'jaeger');
    expect(allowed(policiesOf(thriftOnly), app, jaegerPod, 14268)).toBe(true);
    expect(
      only(thriftOnly, 'NetworkPolicy', 'jaeger').spec.ingress.flatMap((r: Manifest) =>
        r.ports.map((p: Manifest) => p.port),
      ),
    ).not.toContain(4317);
  });

  test('take who sends spans and who opens the UIs', () => {
    const narrowed = policiesOf(
      synth(
        (chart) =>
          new DevelopmentTracingStack(chart, 'dev', {
            networkPolicyOptions: {
              spansFrom: [{ namespaceSelector: { matchLabels: { team: 'shop' } } }],
              uiFrom: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'ingress-nginx' } } }],
            },
          }),
      ),
    );
    expect(allowed(narrowed, app, collector, 4318)).toBe(false);
    expect(allowed(narrowed, app, jaeger, 14268)).toBe(false);
    expect(allowed(narrowed, { namespace: 'ingress-nginx', labels: {} }, jaeger, 16686)).toBe(true);
    expect(allowed(narrowed, app, jaeger, 16686)).toBe(false);
  });
});

describe("the production trace stack's NetworkPolicies", () => {
  const production = (props: Partial<ProductionTracingStackProps> & Pick<ProductionTracingStackProps, 'jaeger'>) =>
    synth((chart) => new ProductionTracingStack(chart, 'prod', props));
  const elasticsearch = production({
    jaeger: {
      storage: ProductionStorage.elasticsearch({
        serverUrls: ['https://es.storage.svc:9200', 'https://es-2.storage.svc'],
      }),
    },
  });
  const policies = policiesOf(elasticsearch);
  const [gateway, jaegerCollector, query, cleaner] = [
    'otel-collector',
    'jaeger-collector',
    'jaeger-query',
    'jaeger-es-index-cleaner',
  ].map((n) => podOf(elasticsearch, n));
  const storage: Pod = { namespace: 'storage', labels: { 'elasticsearch.k8s.elastic.co/cluster-name': 'es' } };

  test('let spans through the gateway to Jaeger, and only Jaeger to the storage, on the ports of its URLs', () => {
    expect(allowed(policies, app, gateway, 4317)).toBe(true);
    expect(allowed(policies, gateway, jaegerCollector, 4317)).toBe(true);
    expect(allowed(policies, app, jaegerCollector, 4317)).toBe(false);
    expect(allowed(policies, app, jaegerCollector, 14268)).toBe(false);
    for (const pod of [jaegerCollector, query, cleaner]) {
      expect(allowed(policies, pod, storage, 9200)).toBe(true);
      expect(allowed(policies, pod, storage, 443)).toBe(true);
    }
    expect(allowed(policies, jaegerCollector, storage, 9300)).toBe(false);
    expect(allowed(policies, gateway, storage, 9200)).toBe(false);
    expect(allowed(policies, app, cleaner, 80)).toBe(false);
  });

  test("reach Cassandra on its contact points' ports, and only the peers given as storage", () => {
    const cassandra = policiesOf(
      production({
        jaeger: { storage: ProductionStorage.cassandra({ servers: ['cassandra-0.db', 'cassandra-1.db:9142'] }) },
        networkPolicyOptions: {
          storage: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'db' } } }],
        },
      }),
    );
    const db: Pod = { namespace: 'db', labels: { app: 'cassandra' } };
    expect(allowed(cassandra, jaegerCollector, db, 9042)).toBe(true);
    expect(allowed(cassandra, jaegerCollector, db, 9142)).toBe(true);
    expect(allowed(cassandra, jaegerCollector, storage, 9042)).toBe(false);
  });

  test("open the collector's further backends and the receivers' OIDC issuer on their ports", () => {
    const extra = only(
      production({
        jaeger: { storage: ProductionStorage.cassandra({ servers: ['c'] }) },
        extraBackends: [
          { name: 'vendor', endpoint: 'https://otlp.vendor.example', protocol: 'http' },
          { name: 'mirror', endpoint: 'mirror.example:14317', tls: {} },
        ],
        receiverSecurity: { oidc: { issuerUrl: 'https://login.example:8443/realms/x', audience: 'otel' } },
      }),
      'NetworkPolicy',
      'otel-collector',
    );
    expect(extra.spec.egress[1]).toEqual({ ports: [443, 14317, 8443].map((port) => ({ protocol: 'TCP', port })) });
  });
});

describe('ports from addresses', () => {
  test('a URL names its port, or its scheme does', () => {
    expect([urlPort('https://es:9200'), urlPort('https://es'), urlPort('http://es')]).toEqual([9200, 443, 80]);
  });
  test('a host:port names its port; a bare host or IPv6 address takes the fallback', () => {
    expect([
      addressPort('c:9142', 9042),
      addressPort('c', 9042),
      addressPort('[fd00::1]:9142', 9042),
      addressPort('fd00::1', 9042),
    ]).toEqual([9142, 9042, 9142, 9042]);
  });
});
