// The production stack exactly as dist/tracing-production-cassandra/tracing-production-cassandra.yaml ships it — the Collector
// gateway (mutual TLS for senders, tail sampling, health-check traces dropped whole), Jaeger's
// collector (mutual TLS on OTLP) and Jaeger's query as separate processes — on a real Apache
// Cassandra (scripts/cassandra.sh), credentials from Secrets.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import cassandraDriver from 'cassandra-driver';
import { type Cassandra, startCassandra } from '../../harness/trace/cassandra.ts';
import { oidcSecret, sendErrorTrace } from '../../harness/trace/production.ts';
import { type SharedServices, sharedServices } from '../../harness/trace/services.ts';
import {
  collectorOtlpPorts,
  hex,
  type LocalStack,
  OTLP_PROTOCOLS,
  otlpRequest,
  sendOtlpJsonTls,
  startStack,
  type TestPki,
  testPki,
} from '../../harness/trace/traces.ts';
import { sendHealthAndOrdinaryTraces, storedHealthSpans } from './health-traces.ts';

const CHART = 'tracing-production-cassandra';
const ORDER = ['jaeger-collector', 'jaeger-query', 'otel-collector'];

function secrets(services: SharedServices, pki: TestPki, password: string) {
  return {
    ...oidcSecret(services, 'http://127.0.0.1/oauth2/callback'),
    'jaeger-cassandra': { username: 'cassandra', password },
    'jaeger-collector-tls': { 'tls.crt': pki.serverCert, 'tls.key': pki.serverKey, 'ca.crt': pki.ca },
    'otel-collector-client-tls': { 'ca.crt': pki.ca, 'tls.crt': pki.clientCert, 'tls.key': pki.clientKey },
    // The gateway's serving certificate, and the CA its senders' certificates chain to.
    'otel-collector-tls': { 'tls.crt': pki.serverCert, 'tls.key': pki.serverKey, 'ca.crt': pki.ca },
  };
}

describe('the production stack on Cassandra', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cassandra-'));
  const pki = testPki(['jaeger-collector.tracing.svc', 'otel-collector.tracing.svc']);
  const sender = () => ({ ca: pki.ca, cert: pki.clientCert, key: pki.clientKey });
  let cassandra: Cassandra;
  let stack: LocalStack;
  // Jaeger query's own port, as its oauth2-proxy reaches it (test/trace/oidc.test.ts goes through the proxy).
  const jaegerQuery = () => stack.loopbackUrl('jaeger-query', 16686);

  beforeAll(async () => {
    cassandra = await startCassandra(join(dir, 'node'));
    stack = await startStack(CHART, {
      order: ORDER,
      secrets: secrets(await sharedServices(), pki, 'cassandra'),
      extraAddresses: { 'cassandra.tracing.svc:9042': cassandra.contactPoint },
    });
  }, 300_000);

  afterAll(async () => {
    await stack?.stop();
    await cassandra?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('an error trace sent to the gateway is kept, written by the collector and read back by the separate query process', async () => {
    const sent = await sendErrorTrace(stack, jaegerQuery(), sender());
    expect(sent.status).toBe(200);
    const trace = await sent.trace();
    const root = sent.root;
    expect(trace.spans.map((s) => s.operationName).sort()).toEqual(['POST /checkout', 'SELECT stock']);
    const child = trace.spans.find((s) => s.operationName === 'SELECT stock')!;
    expect(child.references).toEqual([expect.objectContaining({ refType: 'CHILD_OF', spanID: root })]);
  });

  // The production gateway's side of health-checks.test.ts's test on the development stack.
  test.each(OTLP_PROTOCOLS)(
    'over %s: not one span of a health check with children reaches Cassandra, failing and slow probes included; ordinary traces do, whole',
    async (protocol) => {
      const ports = collectorOtlpPorts(stack);
      // Late by 4 s: inside the gateway's 10 s decision_wait, as a slow service's child would be.
      const sent = await sendHealthAndOrdinaryTraces(protocol, ports, {
        service: `health-prod-${protocol.replace('/', '-')}`,
        tls: sender(),
        lateMs: 4000,
      });
      const stored = await storedHealthSpans(jaegerQuery(), sent, 90_000);
      expect(stored).toEqual(Object.fromEntries(sent.health.map((id) => [id, 0])));
    },
  );

  test("the schema Jaeger's collector created keeps traces 7 days: Cassandra's TTL on its trace, service and operation tables", async () => {
    const client = new cassandraDriver.Client({
      contactPoints: [cassandra.contactPoint],
      localDataCenter: 'datacenter1',
      credentials: { username: 'cassandra', password: 'cassandra' },
    });
    try {
      const result = await client.execute(
        "SELECT table_name, default_time_to_live FROM system_schema.tables WHERE keyspace_name = 'jaeger_v1_dc1'",
      );
      const ttl = Object.fromEntries(result.rows.map((row) => [row.table_name, row.default_time_to_live]));
      expect(ttl).toMatchObject({
        traces: 7 * 24 * 3600,
        service_names: 7 * 24 * 3600,
        operation_names_v2: 7 * 24 * 3600,
      });
    } finally {
      await client.shutdown();
    }
  });

  test("Jaeger's collector refuses OTLP from a client without a certificate, and accepts the gateway's", async () => {
    const post = (client: { cert?: string; key?: string }) =>
      sendOtlpJsonTls(
        `https://127.0.0.1:${stack.port('jaeger-collector', 'otlp-http')}`,
        otlpRequest('direct', [{ traceId: hex(16), spans: [{ name: 'direct' }] }]),
        { ca: pki.ca, ...client },
      );
    await expect(post({})).rejects.toThrow(/fetch failed/);
    expect(await post({ cert: pki.clientCert, key: pki.clientKey })).toBe(200);
  });

  test('the Cassandra password is in no log and no configuration file', () => {
    for (const r of stack.running) {
      expect([r.pod.name, readFileSync(r.logFile, 'utf8').includes('password: cassandra')]).toEqual([
        r.pod.name,
        false,
      ]);
      if (r.pod.config)
        expect([r.pod.name, readFileSync(r.pod.config.path, 'utf8').includes('cassandra\n')]).toEqual([
          r.pod.name,
          false,
        ]);
    }
  });

  test("a wrong password stops Jaeger's collector with Cassandra's refusal in its log", async () => {
    await expect(
      startStack(CHART, {
        order: ORDER,
        secrets: secrets(await sharedServices(), pki, 'not-the-password'),
        extraAddresses: { 'cassandra.tracing.svc:9042': cassandra.contactPoint },
      }),
    ).rejects.toThrow(
      /jaeger-collector did not become healthy[\s\S]*(Provided username cassandra and\/or password are incorrect|password are incorrect)/,
    );
  });
});
