// The production trace stack as users apply it (`kubectl apply -f dist/tracing-production-*/`) on
// the cluster with the real node: every pod under its probes, storage outside the cluster reached as
// a user reaches an external database (a Service without a selector and its EndpointSlice naming the
// host, as ECK's Service or a managed Cassandra would be), the Secrets a user creates, and OIDC on
// the UI against a real Keycloak over HTTPS with a CA of its own. The servers run on the host,
// listening on the node's gateway address. The production folders use the namespace `tracing`, as
// dist/tracing-dev/ does: each suite starts without it and leaves none behind.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '../../harness/cluster/env.ts';
import { chartInMemory } from '../../harness/manifests.ts';
import {
  clusterIP,
  connects,
  dist,
  getJson,
  kubectl,
  NODE,
  ok,
  readyPods,
  startClient,
} from '../../harness/node/node.ts';
import { eventually } from '../../harness/process/poll.ts';
import { type Cassandra, startCassandra } from '../../harness/trace/cassandra.ts';
import { es } from '../../harness/trace/elasticsearch.ts';
import { INDEX_PREFIX, productionSecrets } from '../../harness/trace/production.ts';
import { type SharedServices, startServices } from '../../harness/trace/services.ts';
import { HOTROD_SERVICES, type JaegerTrace, testPki, wholeDispatchTrace } from '../../harness/trace/traces.ts';
import { RESTRICTED_NAMESPACE_LABELS } from '../../lib/security.ts';
import { HotRod } from '../../lib/tracing/hotrod.ts';

const NS = 'tracing';
/** The host as the node's pods reach it (scripts/real-node.sh): the servers listen there. */
const HOST = '172.31.254.1';
/** Where the servers keep their state and logs, for reading after a run. */
const SERVICES_DIR = join(ROOT, 'test-results', 'node-services');
/** Elasticsearch's wall clock runs this far behind (libfaketime): the indices it creates are that old. */
const ES_CLOCK_DAYS_BEHIND = 10;
const CLIENT_NS = 'outside-production';
/** An application's namespace: HotROD, sending to the gateway with a client certificate. */
const APP_NS = 'shop';
/** Where browsers would come back after login; the tests use bearer tokens, which need no browser. */
const REDIRECT_URL = 'https://jaeger.example.com/oauth2/callback';

/** The Secrets, as `kubectl create secret generic` makes them. */
async function createSecrets(secrets: Record<string, Record<string, string>>, namespace = NS): Promise<void> {
  for (const [name, data] of Object.entries(secrets))
    await ok(['apply', '-f', '-'], {
      input: JSON.stringify({
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name, namespace },
        type: 'Opaque',
        stringData: data,
      }),
    });
}

/**
 * A storage server outside the cluster under the name dist/ gives it: a Service without a selector
 * and an EndpointSlice naming the host, what a user writes for a database the cluster does not run.
 * Resolves once a pod reaches the server by that name: a user's database Service exists long before
 * the stack, whereas here kube-proxy and CoreDNS learn of it seconds before Jaeger starts. A Jaeger
 * that meets the ClusterIP still rejected (kube-proxy's rule for a Service it knows without endpoints)
 * exits at start and restarts, which 'nothing crash-looped' rightly reports.
 */
async function externalService(name: string, port: number): Promise<void> {
  await ok(['apply', '-f', '-'], {
    input: JSON.stringify({
      apiVersion: 'v1',
      kind: 'List',
      items: [
        {
          apiVersion: 'v1',
          kind: 'Service',
          metadata: { name, namespace: NS },
          spec: { ports: [{ name: 'storage', port, targetPort: port, protocol: 'TCP' }] },
        },
        {
          apiVersion: 'discovery.k8s.io/v1',
          kind: 'EndpointSlice',
          metadata: { name: `${name}-external`, namespace: NS, labels: { 'kubernetes.io/service-name': name } },
          addressType: 'IPv4',
          ports: [{ name: 'storage', port, protocol: 'TCP' }],
          endpoints: [{ addresses: [HOST] }],
        },
      ],
    }),
  });
  await eventually(`${name}.${NS}.svc:${port} to be reachable from a pod`, () =>
    connects(CLIENT_NS, 'client', `${name}.${NS}.svc`, port),
  );
}

/** The namespace gone, with everything in it (dist/tracing-dev/'s, or a previous suite's). */
async function withoutTracingNamespace(): Promise<void> {
  await ok(['delete', 'namespace', NS, '--ignore-not-found', '--wait=true', '--timeout=180s']);
}

/** Waits for the collector, query and gateway pods, Ready on the real node under their probes. */
async function productionPods(): Promise<Record<'collector' | 'query' | 'gateway', any[]>> {
  return {
    collector: await readyPods(NS, 'app.kubernetes.io/name=jaeger-collector', 2, 300_000),
    query: await readyPods(NS, 'app.kubernetes.io/name=jaeger-query', 2, 300_000),
    gateway: await readyPods(NS, 'app.kubernetes.io/name=otel-collector', 1, 300_000),
  };
}

/**
 * HotROD in the application's namespace, as a platform team deploys it with the HotRod construct:
 * sending to the production gateway with the client certificate of the Secret `otel-client`.
 */
async function startHotRod(): Promise<void> {
  await ok(['create', 'namespace', APP_NS]);
  await ok(['label', 'namespace', APP_NS, ...Object.entries(RESTRICTED_NAMESPACE_LABELS).map(([k, v]) => `${k}=${v}`)]);
  await createSecrets(
    { 'otel-client': { 'ca.crt': pki.ca, 'tls.crt': pki.clientCert, 'tls.key': pki.clientKey } },
    APP_NS,
  );
  const chart = chartInMemory('shop');
  new HotRod(chart, 'HotRod', {
    namespace: APP_NS,
    otlpEndpoint: 'https://otel-collector.tracing.svc:4318',
    jaegerUiUrl: 'https://jaeger.example.com',
    clientTls: { secretName: 'otel-client' },
  });
  await ok(['apply', '-f', '-'], {
    input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: chart.toJson() }),
  });
  await readyPods(APP_NS, 'app.kubernetes.io/name=hotrod', 1);
}

/** A HotROD /dispatch, its whole trace read back through oauth2-proxy with alice's token. */
async function dispatchThroughQuery(services: SharedServices): Promise<JaegerTrace> {
  const response = await fetch(`http://${await clusterIP(APP_NS, 'hotrod')}:8080/dispatch?customer=123`);
  expect(response.status).toBe(200);
  const token = await services.keycloak.token(services.keycloak.users.allowed);
  const base = `http://${await clusterIP(NS, 'jaeger-query')}:4180`;
  const trace = await eventually(
    'the whole /dispatch trace in Jaeger query',
    () => wholeDispatchTrace(base, { authorization: `Bearer ${token}` }),
    { timeoutMs: 120_000 },
  );
  expect(new Set(trace.spans.map((s) => trace.processes[s.processID].serviceName))).toEqual(new Set(HOTROD_SERVICES));
  return trace;
}

/** The query API through oauth2-proxy at the query Service, with `token` as a bearer token when given. */
async function queryApi(path: string, token?: string): Promise<Response> {
  const base = `http://${await clusterIP(NS, 'jaeger-query')}:4180`;
  return fetch(`${base}${path}`, { headers: token ? { authorization: `Bearer ${token}` } : {}, redirect: 'manual' });
}

/**
 * What each production folder's NetworkPolicies say (the table of docs/use/network-policies.md), probed
 * from another namespace.
 */
async function expectPoliciesEnforced(pods: Awaited<ReturnType<typeof productionPods>>): Promise<void> {
  const ip = (pod: any) => pod.status.podIP;
  const [collector] = pods.collector;
  const [query] = pods.query;
  const [gatewayPod] = pods.gateway;
  const probes = {
    'gateway OTLP/gRPC (open to every namespace)': [ip(gatewayPod), 4317],
    'gateway OTLP/HTTP (open to every namespace)': [ip(gatewayPod), 4318],
    'gateway metrics (Prometheus only)': [ip(gatewayPod), 8888],
    'Jaeger collector OTLP (the gateway only)': [ip(collector), 4317],
    'Jaeger collector metrics (Prometheus only)': [ip(collector), 8888],
    'query through oauth2-proxy (open)': [ip(query), 4180],
    'query metrics (Prometheus only)': [ip(query), 8888],
  } as const;
  const seen: Record<string, boolean> = {};
  for (const [what, [address, port]] of Object.entries(probes))
    seen[what] = await connects(CLIENT_NS, 'client', address, port);
  expect(seen).toEqual({
    'gateway OTLP/gRPC (open to every namespace)': true,
    'gateway OTLP/HTTP (open to every namespace)': true,
    'gateway metrics (Prometheus only)': false,
    'Jaeger collector OTLP (the gateway only)': false,
    'Jaeger collector metrics (Prometheus only)': false,
    'query through oauth2-proxy (open)': true,
    'query metrics (Prometheus only)': false,
  });
}

/** oauth2-proxy in every query pod, and Jaeger's own UI port not among the pod's ports. */
function expectProxyInFront(queryPods: any[]): void {
  for (const pod of queryPods) {
    expect(pod.spec.nodeName).toBe(NODE);
    const names = pod.status.containerStatuses.map((c: any) => c.name).sort();
    expect(names).toEqual(['oauth2-proxy', 'query']);
    const ports = pod.spec.containers.flatMap((c: any) => (c.ports ?? []).map((p: any) => p.containerPort));
    expect(ports).toContain(4180);
    expect(ports).not.toContain(16686);
  }
}

/**
 * No container of the namespace restarted: nothing crash-looped while its Secrets and storage were
 * there. A restart is reported with how its last run ended and that run's last log lines.
 */
async function expectNoRestarts(): Promise<void> {
  const restarted = (await getJson(['pods', '-n', NS])).items.flatMap((p: any) =>
    (p.status.containerStatuses ?? [])
      .filter((c: any) => c.restartCount > 0)
      .map((c: any) => ({ pod: p.metadata.name, container: c.name, restarts: c.restartCount, last: c.lastState })),
  );
  const reports = await Promise.all(
    restarted.map(async ({ pod, container, restarts, last }: any) => {
      const previous = await kubectl(['logs', '-n', NS, pod, '-c', container, '--previous', '--tail=15']);
      return `${pod}/${container}: ${restarts} (last run: ${JSON.stringify(last)}):\n${previous.stdout || previous.stderr}`;
    }),
  );
  expect(reports).toEqual([]);
}

let services: SharedServices;
let stopServices: () => Promise<void>;
const pki = testPki(['jaeger-collector.tracing.svc', 'otel-collector.tracing.svc']);

beforeAll(async () => {
  // Elasticsearch's clock runs behind so that the index cleaner, run by hand, has indices to delete:
  // it deletes by an index's creation date, which Elasticsearch sets from its own clock.
  const started = await startServices(SERVICES_DIR, {
    address: HOST,
    elasticsearchPort: 9200,
    elasticsearchClockOffset: `-${ES_CLOCK_DAYS_BEHIND}d`,
    keycloakHttpsPort: 443,
  });
  services = started.services;
  stopServices = started.stop;
  await startClient(CLIENT_NS);
  await startHotRod();
}, 600_000);

afterAll(async () => {
  await kubectl(['delete', 'namespace', CLIENT_NS, APP_NS, '--wait=false']);
  await stopServices?.();
});

describe('dist/tracing-production-elasticsearch/ applied as is', () => {
  let pods: Awaited<ReturnType<typeof productionPods>>;
  let traceId: string;

  beforeAll(async () => {
    await withoutTracingNamespace();
    // As the steps of docs/use/production-trace-stack.md go: the namespace, the storage's Service and
    // the Secrets, then the folder.
    // (Secrets created after it would race the pods: oauth2-proxy could start before its provider's
    // CA is in its optional volume, fail discovery and restart once.)
    await ok(['create', 'namespace', NS]);
    await externalService('elasticsearch-es-http', 9200);
    await createSecrets({
      ...productionSecrets(services, pki, REDIRECT_URL),
      'jaeger-oidc': {
        ...productionSecrets(services, pki, REDIRECT_URL)['jaeger-oidc'],
        // Keycloak's CA: the provider's certificate is signed by a private CA, as a company's is.
        'provider-ca.crt': services.keycloak.ca!,
      },
    });
    await ok(['apply', '-f', dist('tracing-production-elasticsearch')]);
    pods = await productionPods();
  }, 600_000);

  afterAll(withoutTracingNamespace, 300_000);

  test('collector and query pods are Ready on the real node, with oauth2-proxy in front of query', async () => {
    for (const pod of [...pods.collector, ...pods.query, ...pods.gateway]) expect(pod.spec.nodeName).toBe(NODE);
    expectProxyInFront(pods.query);
  });

  test("HotROD's /dispatch, sent from another namespace through the gateway over mutual TLS, is written to Elasticsearch as the jaeger user and read back whole through oauth2-proxy with a bearer token", async () => {
    const trace = await dispatchThroughQuery(services);
    traceId = trace.traceID;
    // Every span of the trace is stored. Delivery is at least once: an export the gateway retried
    // after a timeout, while the collector had already written it, stores a span twice, and query
    // shows it once. So the distinct span ids are compared, not the number of documents.
    const stored = await es(services, 'POST', `/${INDEX_PREFIX}-span-*/_search`, {
      body: {
        size: 0,
        query: { term: { traceID: traceId } },
        aggs: { spans: { terms: { field: 'spanID', size: 10_000 } } },
      },
    });
    const storedIds: string[] = stored.body.aggregations.spans.buckets.map((b: { key: string }) => b.key);
    expect(storedIds.sort()).toEqual(trace.spans.map((s) => s.spanID).sort());
  });

  test('the query API refuses requests without a token (401) and with a forged one', async () => {
    expect((await queryApi('/api/services')).status).toBe(401);
    const token = await services.keycloak.token(services.keycloak.users.allowed);
    const [header, payload, signature] = token.split('.');
    const forged = `${header}.${payload}.${signature.slice(0, -4)}AAAA`;
    expect((await queryApi('/api/services', forged)).status).toBe(401);
    const answered = await queryApi('/api/services', token);
    expect(answered.status).toBe(200);
    expect(((await answered.json()) as { data: string[] }).data).toEqual(expect.arrayContaining(HOTROD_SERVICES));
  });

  test("the index cleaner, run once by hand from its CronJob, deletes Jaeger's indices older than 7 days and the trace with them", async () => {
    // Every index this node holds was created 10 days ago by its clock; the cleaner keeps 7 days.
    const before = await es(services, 'GET', `/${INDEX_PREFIX}-*?flat_settings=true`);
    const indices = Object.keys(before.body);
    expect(indices).toEqual(expect.arrayContaining([expect.stringMatching(new RegExp(`^${INDEX_PREFIX}-span-`))]));
    for (const name of indices)
      expect(Date.now() - Number(before.body[name].settings['index.creation_date'])).toBeGreaterThan(
        (ES_CLOCK_DAYS_BEHIND - 1) * 86_400_000,
      );
    await ok(['create', 'job', '--from=cronjob/jaeger-es-index-cleaner', 'cleaner-by-hand', '-n', NS]);
    await ok(['wait', '--for=condition=Complete', 'job/cleaner-by-hand', '-n', NS, '--timeout=180s']);
    const log = await ok(['logs', 'job/cleaner-by-hand', '-n', NS]);
    expect(log).toContain('Deleting indices');
    for (const name of indices) expect(log).toContain(name);
    const after = await es(services, 'GET', `/${INDEX_PREFIX}-*`);
    expect(Object.keys(after.body)).toEqual([]);
    expect(
      (await queryApi(`/api/traces/${traceId}`, await services.keycloak.token(services.keycloak.users.allowed))).status,
    ).toBe(404);
  });

  test("the folder's NetworkPolicies are enforced: what the table of docs/use/network-policies.md opens answers, the rest is refused", async () => {
    await expectPoliciesEnforced(pods);
  });

  test('nothing crash-looped', expectNoRestarts);
});

describe('dist/tracing-production-cassandra/ applied as is', () => {
  let cassandra: Cassandra;
  let pods: Awaited<ReturnType<typeof productionPods>>;

  beforeAll(async () => {
    cassandra = await startCassandra(join(mkdtempSync(join(tmpdir(), 'node-cassandra-')), 'node'), 9042, HOST);
    await withoutTracingNamespace();
    await ok(['create', 'namespace', NS]);
    await externalService('cassandra', 9042);
    const {
      'jaeger-elasticsearch': _es,
      'elasticsearch-es-http-certs-public': _ca,
      ...shared
    } = productionSecrets(services, pki, REDIRECT_URL);
    await createSecrets({
      ...shared,
      'jaeger-oidc': { ...shared['jaeger-oidc'], 'provider-ca.crt': services.keycloak.ca! },
      // Cassandra's default superuser, as a fresh node has it.
      'jaeger-cassandra': { username: 'cassandra', password: 'cassandra' },
    });
    await ok(['apply', '-f', dist('tracing-production-cassandra')]);
    pods = await productionPods();
  }, 600_000);

  afterAll(async () => {
    await withoutTracingNamespace();
    await cassandra?.stop();
  }, 300_000);

  test('collector and query pods are Ready on the real node, with oauth2-proxy in front of query', async () => {
    for (const pod of [...pods.collector, ...pods.query, ...pods.gateway]) expect(pod.spec.nodeName).toBe(NODE);
    expectProxyInFront(pods.query);
  });

  test("HotROD's /dispatch, sent from another namespace through the gateway over mutual TLS, is stored in Cassandra and read back whole through oauth2-proxy with a bearer token", async () => {
    const trace = await dispatchThroughQuery(services);
    expect((await queryApi(`/api/traces/${trace.traceID}`)).status).toBe(401);
  });

  test("the folder's NetworkPolicies are enforced: what the table of docs/use/network-policies.md opens answers, the rest is refused", async () => {
    await expectPoliciesEnforced(pods);
  });

  test('nothing crash-looped', expectNoRestarts);
});
