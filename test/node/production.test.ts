// dist/tracing-production-cassandra/ as users apply it (`kubectl apply -f`) on the cluster with the
// real node: every pod under its probes, Cassandra outside the cluster reached as a user reaches an
// external database (a Service without a selector and its EndpointSlice naming the host, as a managed
// Cassandra would be), the Secrets a user creates, and OIDC on the UI against a real Keycloak over
// HTTPS with a CA of its own. The servers run on the host, listening on the node's gateway address.
// The folder uses the namespace `tracing`, as dist/tracing-dev/ does: the suite starts without it
// and leaves none behind. The Elasticsearch folder is tried the way its page tells a reader
// (docs/use/production-trace-stack.md, run by test/node-walkthroughs/walkthroughs.test.ts).
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '../../harness/cluster/env.ts';
import { chartInMemory } from '../../harness/manifests.ts';
import {
  clusterIP,
  connects,
  dist,
  kubectl,
  nodeProject as node,
  ok,
  readyPods,
  startClient,
} from '../../harness/node/node.ts';
import {
  expectNoRestarts,
  expectPoliciesEnforced,
  expectProxyInFront,
  type ProductionPods,
  productionPods,
} from '../../harness/node/production.ts';
import { eventually } from '../../harness/process/poll.ts';
import { type Cassandra, startCassandra } from '../../harness/trace/cassandra.ts';
import { type Keycloak, startKeycloak } from '../../harness/trace/keycloak.ts';
import { oidcSecret, tlsSecrets } from '../../harness/trace/production.ts';
import { HOTROD_SERVICES, type JaegerTrace, testPki, wholeDispatchTrace } from '../../harness/trace/traces.ts';
import { RESTRICTED_NAMESPACE_LABELS } from '../../lib/security.ts';
import { HotRod } from '../../lib/tracing/hotrod.ts';

const NS = 'tracing';
/** The host as the node's pods reach it (scripts/real-node.sh): the servers listen there. */
const HOST = '172.31.254.1';
/** Where Keycloak keeps its state and logs, for reading after a run. */
const KEYCLOAK_DIR = join(ROOT, 'test-results', 'node-services', 'keycloak');
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
async function dispatchThroughQuery(): Promise<JaegerTrace> {
  const response = await fetch(`http://${await clusterIP(APP_NS, 'hotrod')}:8080/dispatch?customer=123`);
  expect(response.status).toBe(200);
  const token = await keycloak.token(keycloak.users.allowed);
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

let keycloak: Keycloak;
const pki = testPki(['jaeger-collector.tracing.svc', 'otel-collector.tracing.svc']);

beforeAll(async () => {
  keycloak = await startKeycloak(KEYCLOAK_DIR, { address: HOST, httpsPort: 443 });
  await startClient(CLIENT_NS);
  await startHotRod();
}, 600_000);

afterAll(async () => {
  await kubectl(['delete', 'namespace', CLIENT_NS, APP_NS, '--wait=false']);
  await keycloak?.stop();
});

describe('dist/tracing-production-cassandra/ applied as is', () => {
  let cassandra: Cassandra;
  let pods: ProductionPods;

  beforeAll(async () => {
    cassandra = await startCassandra(join(mkdtempSync(join(tmpdir(), 'node-cassandra-')), 'node'), 9042, HOST);
    await withoutTracingNamespace();
    await ok(['create', 'namespace', NS]);
    await externalService('cassandra', 9042);
    await createSecrets({
      ...tlsSecrets(pki),
      // Keycloak's CA: the provider's certificate is signed by a private CA, as a company's is.
      'jaeger-oidc': { ...oidcSecret({ keycloak }, REDIRECT_URL)['jaeger-oidc'], 'provider-ca.crt': keycloak.ca! },
      // Cassandra's default superuser, as a fresh node has it.
      'jaeger-cassandra': { username: 'cassandra', password: 'cassandra' },
    });
    await ok(['apply', '-f', dist('tracing-production-cassandra')]);
    pods = await productionPods(node);
  }, 600_000);

  afterAll(async () => {
    await withoutTracingNamespace();
    await cassandra?.stop();
  }, 300_000);

  test('collector and query pods are Ready on the real node, with oauth2-proxy in front of query', async () => {
    expectProxyInFront(pods.query);
  });

  test("HotROD's /dispatch, sent from another namespace through the gateway over mutual TLS, is stored in Cassandra and read back whole through oauth2-proxy with a bearer token", async () => {
    const trace = await dispatchThroughQuery();
    expect((await queryApi(`/api/traces/${trace.traceID}`)).status).toBe(401);
  });

  test("the folder's NetworkPolicies are enforced: what the table of docs/use/network-policies.md opens answers, the rest is refused", async () => {
    await expectPoliciesEnforced(node, CLIENT_NS, pods);
  });

  test('nothing crash-looped', () => expectNoRestarts(node, [NS]));
});
