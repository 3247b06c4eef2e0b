// The production stack exactly as dist/tracing-production-elasticsearch/ ships it — the Collector
// gateway (mutual TLS for senders, tail sampling), Jaeger's collector (mutual TLS on OTLP) and
// Jaeger's query as separate processes, with oauth2-proxy in the query pod — on a real
// Elasticsearch 8 with HTTPS and users (scripts/elasticsearch.sh), credentials and the CA from the
// Secrets the chart names. The index cleaner is the CronJob's own program with the CronJob's
// arguments and environment. Elasticsearch and Keycloak are the trace project's shared servers.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually } from '../../harness/process/poll.ts';
import { freePort } from '../../harness/process/ports.ts';
import { es } from '../../harness/trace/elasticsearch.ts';
import { builtBinaries, chartManifests, planCronJob } from '../../harness/trace/local-stack.ts';
import {
  CHART,
  dayBefore,
  esAddress,
  INDEX_PREFIX,
  productionSecrets,
  sendErrorTrace,
  startHotRod,
} from '../../harness/trace/production.ts';
import { type SharedServices, sharedServices } from '../../harness/trace/services.ts';
import { type LocalStack, startStack, testPki, wholeDispatchTrace } from '../../harness/trace/traces.ts';

const ORDER = ['jaeger-collector', 'jaeger-query', 'otel-collector'];

describe('the production stack on Elasticsearch, as dist/ ships it', () => {
  const dir = mkdtempSync(join(tmpdir(), 'es-stack-'));
  const pki = testPki(['jaeger-collector.tracing.svc', 'otel-collector.tracing.svc']);
  const sender = () => ({ ca: pki.ca, cert: pki.clientCert, key: pki.clientKey });
  let services: SharedServices;
  let stack: LocalStack;
  let jaeger: string;

  beforeAll(async () => {
    services = await sharedServices();
    const queryPort = await freePort();
    stack = await startStack(CHART, {
      order: ORDER,
      secrets: productionSecrets(services, pki, `http://127.0.0.1:${queryPort}/oauth2/callback`),
      extraAddresses: esAddress(services),
      preferredPorts: { 'jaeger-query/query': queryPort },
    });
    // Jaeger query's own port, as its oauth2-proxy reaches it (test/trace/oidc.test.ts goes through the proxy).
    jaeger = stack.loopbackUrl('jaeger-query', 16686);
  }, 300_000);

  afterAll(async () => {
    await stack?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('an error trace sent to the gateway is kept, written to Elasticsearch by the collector as the jaeger user, and read back by the separate query process', async () => {
    const sent = await sendErrorTrace(stack, jaeger, sender());
    expect(sent.status).toBe(200);
    const trace = await sent.trace();
    expect(trace.spans.map((s) => s.operationName).sort()).toEqual(['POST /checkout', 'SELECT stock']);
    // Jaeger's ES 8 path: composable index templates, and today's daily indices.
    const templates = await es(services, 'GET', `/_index_template/${INDEX_PREFIX}-*`);
    expect(templates.body.index_templates.map((t: { name: string }) => t.name).sort()).toEqual(
      expect.arrayContaining([`${INDEX_PREFIX}-service`, `${INDEX_PREFIX}-span`]),
    );
    const indices = await es(services, 'GET', `/${INDEX_PREFIX}-span-${dayBefore(0)}`);
    expect(indices.status).toBe(200);
  });

  test('a HotROD /dispatch trace goes through the gateway over mutual TLS into Elasticsearch and comes back whole from query', async () => {
    const hotrod = await startHotRod(`https://127.0.0.1:${stack.port('otel-collector', 'otlp-http')}`, pki, dir);
    try {
      const response = await fetch(`http://127.0.0.1:${hotrod.port}/dispatch?customer=123`);
      expect(response.status).toBe(200);
      // Kept by the gateway's tail sampling for its latency (the database query alone takes 1.5 s).
      const trace = await eventually('the whole /dispatch trace in Jaeger', () => wholeDispatchTrace(jaeger), 120_000);
      expect(new Set(trace.spans.map((s) => s.traceID))).toEqual(new Set([trace.traceID]));
    } finally {
      await hotrod.stop();
    }
  });

  test('the jaeger user reaches only jaeger-* indices: another index is refused', async () => {
    const other = await es(services, 'PUT', '/other-index', { user: 'jaeger' });
    expect(other.status).toBe(403);
    expect(JSON.stringify(other.body)).toContain('unauthorized for user [jaeger]');
  });

  // The cleaner deletes by an index's creation date, not the date in its name, and Elasticsearch
  // refuses a creation date in the request ("unknown setting [index.creation_date]"), so indices
  // cannot be back-dated here: the CronJob's run keeps everything made today, and the same run
  // with 0 days (its one change) shows what it selects and deletes.
  test("the index cleaner, the CronJob's own program with its arguments and environment, keeps indices younger than 7 days; with 0 days it deletes Jaeger's daily indices and nothing else", async () => {
    const kinds = ['span', 'service'];
    const days = [30, 8, 1];
    for (const d of days)
      for (const kind of kinds)
        expect(await es(services, 'PUT', `/${INDEX_PREFIX}-${kind}-${dayBefore(d)}`)).toMatchObject({ status: 200 });
    expect(await es(services, 'PUT', '/jaeger-notes')).toMatchObject({ status: 200 });
    const pod = planCronJob(chartManifests(CHART), 'jaeger-es-index-cleaner', {
      dir: join(dir, 'cleaner'),
      secrets: productionSecrets(services, pki, 'http://127.0.0.1/oauth2/callback'),
      extraAddresses: esAddress(services),
    });
    expect(pod.args[0]).toBe('7');
    const cleaner = builtBinaries('es-index-cleaner')['es-index-cleaner'];
    const run = (args: readonly string[]) =>
      new Promise<string>((resolve, reject) =>
        execFile(cleaner, [...args], { env: { PATH: process.env.PATH, ...pod.env } }, (error, stdout, stderr) =>
          error ? reject(new Error(`the index cleaner failed: ${error.message}\n${stderr}`)) : resolve(stdout + stderr),
        ),
      );
    const names = days.flatMap((d) => kinds.map((kind) => `${INDEX_PREFIX}-${kind}-${dayBefore(d)}`));
    const exists = async (index: string) => (await es(services, 'GET', `/${index}`)).status === 200;
    const present = async () =>
      Object.fromEntries(await Promise.all([...names, 'jaeger-notes'].map(async (i) => [i, await exists(i)])));

    // As scheduled: it lists them (over TLS against the CA Secret, as the jaeger user) and deletes none.
    expect(await run(pod.args)).toContain('No indices to delete');
    expect(Object.values(await present()).every(Boolean)).toBe(true);

    const output = await run(['0', ...pod.args.slice(1)]);
    expect(output).toContain('Deleting indices');
    expect(await present()).toEqual({ ...Object.fromEntries(names.map((i) => [i, false])), 'jaeger-notes': true });
  });
});

describe('bad storage settings stop Jaeger with a clear log line, and lose nothing', () => {
  const pki = testPki(['jaeger-collector.tracing.svc']);
  let services: SharedServices;
  beforeAll(async () => {
    services = await sharedServices();
  });

  const startCollector = (secrets: Record<string, Record<string, string>>, address = esAddress(services)) =>
    startStack(CHART, { only: ['jaeger-collector'], secrets, extraAddresses: address });

  test('a wrong password: the collector exits, saying Elasticsearch could not authenticate the user', async () => {
    const failed = startCollector(
      productionSecrets(services, pki, 'http://127.0.0.1/oauth2/callback', 'not-the-password'),
    );
    await expect(failed).rejects.toThrow(/exit code 1/);
    await expect(failed).rejects.toThrow(/unable to authenticate user \[jaeger\]/);
  });

  test('a server whose certificate the CA Secret did not sign: the collector refuses the connection', async () => {
    const secrets = productionSecrets(services, pki, 'http://127.0.0.1/oauth2/callback');
    const failed = startCollector({ ...secrets, 'elasticsearch-es-http-certs-public': { 'ca.crt': pki.ca } });
    await expect(failed).rejects.toThrow(/certificate signed by unknown authority/);
  });

  test('an unreachable storage: the collector exits, naming the address it could not reach', async () => {
    // Port 1 (tcpmux), privileged and unused: nothing can come to listen on it during the test. A
    // port freePort() had closed could be taken by another lane's process before the collector dials.
    const closed = 1;
    const failed = startCollector(
      productionSecrets(services, pki, 'http://127.0.0.1/oauth2/callback'),
      esAddress(services, `127.0.0.1:${closed}`),
    );
    await expect(failed).rejects.toThrow(new RegExp(`127\\.0\\.0\\.1:${closed}.*connection refused`));
  });
});
