import { X509Certificate } from 'node:crypto';
import { createWriteStream, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { connect } from 'node:tls';
import { KubeConfig } from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { ROOT } from '../../harness/cluster/env.ts';
import { TestHostAddress } from '../../harness/cluster/host-address.ts';
import { getJson, kubectl, loadClusterInfo, ok } from '../../harness/cluster/kube.ts';
import {
  localEndpointRbacManifests,
  OPERATOR_NS as ns,
  operatorRbacManifests,
  webhookServiceManifest,
} from '../../harness/operator/operator-manifests.ts';
import { eventually } from '../../harness/process/poll.ts';
import { freePort } from '../../harness/process/ports.ts';
import { webhookDnsNames } from '../../lib/operator/names.ts';
import { KubeClient } from '../../operator/src/controller/kube-client.ts';
import { createLogger } from '../../operator/src/observability/logger.ts';
import { OperatorMetrics } from '../../operator/src/observability/metrics.ts';
import {
  firstCertificate,
  issueServingCertificate,
  splitPemCertificates,
} from '../../operator/src/webhook/certificates.ts';
import { ConversionWebhookServer } from '../../operator/src/webhook/conversion-server.ts';
import { LocalServiceEndpoint } from '../../operator/src/webhook/local-service-endpoint.ts';
import { OperatorManagedCertificates } from '../../operator/src/webhook/operator-managed-certificates.ts';

/*
 * The conversion webhook end to end: OperatorManagedCertificates, ConversionWebhookServer and
 * LocalServiceEndpoint run in this process as an operator outside the cluster runs them,
 * authenticated as the operator's ServiceAccount under exactly the RBAC dist/ ships (plus what
 * publishing its endpoint takes). The CRD stays as dist/ ships it: the local API server calls the
 * webhook Service, whose endpoint is this process (aggregator routing dials it), at an address of
 * this machine (TestHostAddress). Users go through kubectl, as they would.
 */

const CRD = 'websites.web.example.com';
const SECRET = 'website-operator-webhook-tls';
const CRD_FILE = join(ROOT, 'dist/website-operator/website-crd.yaml');
const distCrd = parseAllDocuments(readFileSync(CRD_FILE, 'utf8')).map((d) => d.toJS())[0];
const service = webhookServiceManifest();
const LABEL = 'website-stack/test=webhook';
const logFile = join(ROOT, 'test-results', 'webhook-cluster.log');
mkdirSync(join(ROOT, 'test-results'), { recursive: true });
const logger = createLogger('debug', createWriteStream(logFile));

let kubeConfig: KubeConfig;
let port: number;
let host: TestHostAddress;

/** One start of the operator's webhook half, as the operator entrypoint does it. */
interface OperatorRun {
  server: ConversionWebhookServer;
  certificates: OperatorManagedCertificates;
  endpoint: Promise<void>;
  stop: AbortController;
  loop: Promise<void>;
  /** The webhook's metrics (conversions). */
  metrics: OperatorMetrics;
  /** The API client's metrics (requests by verb and resource). */
  apiMetrics: OperatorMetrics;
}
const running: OperatorRun[] = [];

const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');
const text = (s: string) => Buffer.from(s, 'base64').toString('utf8');
const v1beta1Api = `websites.v1beta1.web.example.com`;
const v1Api = `websites.v1.web.example.com`;

/** Serial of the certificate the webhook presents to a new connection (verified against `ca`, for the Service's name, as the API server does). */
function servedSerial(ca: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: host.address, port, ca, servername: `${service.metadata.name}.${ns}.svc` }, () => {
      resolve(socket.getPeerCertificate().serialNumber);
      socket.end();
    });
    socket.on('error', reject);
  });
}

/** What the operator process does at start outside a pod: certificates, the server, then its endpoint, with fresh metrics. */
async function startOperator(options: { checkIntervalMs?: number } = {}): Promise<OperatorRun> {
  const apiMetrics = new OperatorMetrics({ processMetrics: false });
  const client = new KubeClient(kubeConfig, { metrics: apiMetrics });
  const certificates = new OperatorManagedCertificates({ client, namespace: ns, crdName: CRD, logger, ...options });
  const metrics = new OperatorMetrics({ processMetrics: false });
  const server = new ConversionWebhookServer({ port, host: host.address, tls: certificates, logger, metrics });
  const stop = new AbortController();
  const loop = certificates.run(stop.signal);
  await server.start();
  await firstCertificate(certificates, stop.signal);
  const published = new LocalServiceEndpoint({
    client,
    namespace: ns,
    port,
    identity: 'webhook-test',
    address: host.address,
    logger,
    ...options,
  });
  await published.sync();
  const endpoint = published.run(stop.signal);
  const entry = { server, stop, loop, endpoint, certificates, metrics, apiMetrics };
  running.push(entry);
  return entry;
}

async function stopOperator(entry: OperatorRun): Promise<void> {
  entry.stop.abort();
  await entry.endpoint;
  await entry.loop;
  await entry.server.stop();
  running.splice(running.indexOf(entry), 1);
}

/** Verbs this process sent to the API server for `resources`, from the client's own metrics. */
async function verbsSent(metrics: OperatorMetrics, resources: string[]): Promise<string[]> {
  return (await metrics.apiRequests.get()).values
    .filter((v) => resources.includes(String(v.labels.resource)))
    .map((v) => `${v.labels.verb} ${v.labels.resource}`)
    .sort();
}

async function conversions(metrics: OperatorMetrics): Promise<Record<string, number>> {
  return Object.fromEntries((await metrics.conversions.get()).values.map((v) => [String(v.labels.result), v.value]));
}

/** A test Website in `version`, carrying LABEL, which the cleanup and the listing tests select. */
function websiteIn(version: 'v1' | 'v1beta1', name: string, spec: Record<string, unknown>) {
  return {
    apiVersion: `web.example.com/${version}`,
    kind: 'Website',
    metadata: { name, namespace: ns, labels: { 'website-stack/test': 'webhook' } },
    spec,
  };
}
const v1beta1 = (name: string, spec: Record<string, unknown>) => websiteIn('v1beta1', name, spec);
const v1 = (name: string, spec: Record<string, unknown>) => websiteIn('v1', name, spec);

/** The CRD's clientConfig without its caBundle: where the API server calls. */
async function crdCalls(): Promise<unknown> {
  const { caBundle: _caBundle, ...rest } = (await getJson(['crd', CRD])).spec.conversion.webhook.clientConfig;
  return rest;
}

async function removeWebsites(): Promise<void> {
  await kubectl(['delete', v1Api, '-n', ns, '-l', LABEL, '--ignore-not-found', '--wait=true']);
}

beforeAll(async () => {
  // The operator's namespace, RBAC and webhook Service exactly as dist/ ships them, plus what an
  // operator outside the cluster needs to publish its endpoint; a fresh Secret (a new CA).
  await ok(['apply', '--server-side', '--force-conflicts', '-f', '-'], {
    input: [...operatorRbacManifests(), ...localEndpointRbacManifests(), service]
      .map((m) => JSON.stringify(m))
      .join('\n'),
  });
  await kubectl(['delete', 'secret', SECRET, '-n', ns, '--ignore-not-found']);
  await removeWebsites();
  host = new TestHostAddress();

  const cluster = await loadClusterInfo();
  const token = (await ok(['create', 'token', 'website-operator', '-n', ns, '--duration=30m'])).trim();
  kubeConfig = new KubeConfig();
  kubeConfig.loadFromOptions({
    clusters: [{ name: 'test', server: cluster.server, caFile: cluster.ca, skipTLSVerify: false }],
    users: [{ name: 'website-operator', token }],
    contexts: [{ name: 'website-operator', cluster: 'test', user: 'website-operator' }],
    currentContext: 'website-operator',
  });
  port = await freePort();
});

afterAll(async () => {
  for (const entry of [...running]) await stopOperator(entry);
  await removeWebsites();
  await kubectl(['delete', '-f', '-', '--ignore-not-found'], {
    input: localEndpointRbacManifests()
      .map((m) => JSON.stringify(m))
      .join('\n'),
  });
  host?.close();
});

describe('the conversion webhook against the local cluster', () => {
  let first: OperatorRun;
  let secretBefore: any;

  test("the operator creates the webhook Secret, makes the CRD trust its CA, and makes itself the Service's endpoint; the CRD still calls the Service", async () => {
    first = await startOperator();
    expect(first.server.isServing()).toBe(true);

    const secret = await getJson(['secret', SECRET, '-n', ns]);
    secretBefore = secret;
    expect(secret.type).toBe('kubernetes.io/tls');
    expect(Object.keys(secret.data).sort()).toEqual(['ca.crt', 'ca.key', 'tls.crt', 'tls.key']);
    const cert = new X509Certificate(text(secret.data['tls.crt']));
    const ca = new X509Certificate(text(secret.data['ca.crt']));
    expect(ca.ca).toBe(true);
    expect(cert.verify(ca.publicKey)).toBe(true);
    expect(cert.checkHost(`website-operator-webhook.${ns}.svc`)).toBe(`website-operator-webhook.${ns}.svc`);
    expect(await servedSerial(text(secret.data['ca.crt']))).toBe(cert.serialNumber);

    const clientConfig = (await getJson(['crd', CRD])).spec.conversion.webhook.clientConfig;
    expect(clientConfig).toEqual({ ...distCrd.spec.conversion.webhook.clientConfig, caBundle: secret.data['ca.crt'] });
    const slice = await getJson(['endpointslice', 'website-operator-webhook-webhook-test', '-n', ns]);
    expect(slice.metadata.labels['kubernetes.io/service-name']).toBe(service.metadata.name);
    expect(slice.endpoints.map((e: any) => e.addresses)).toEqual([[host.address]]);
    expect(slice.ports).toEqual([{ name: service.spec.ports[0].name, port, protocol: 'TCP' }]);
  });

  test('a Website created through v1beta1 is stored as v1', async () => {
    const beta = v1beta1('beta', { heading: 'Created as v1beta1', instances: 2, theme: { color: '#FF5722' } });
    // The API server picks up the CRD's new caBundle and the Service's endpoint within moments.
    await eventually('the API server to create a v1beta1 Website through the webhook', async () => {
      const result = await kubectl(['create', '-f', '-'], { input: JSON.stringify(beta) });
      if (result.code === 0 || /AlreadyExists/.test(result.stderr)) return true;
      throw new Error(result.stderr.trim());
    });
    const stored = await getJson([v1Api, 'beta', '-n', ns]);
    expect(stored.apiVersion).toBe('web.example.com/v1');
    expect(stored.spec).toEqual({ title: 'Created as v1beta1', replicas: 2, color: '#FF5722' });
    expect((await getJson(['crd', CRD])).status.storedVersions).toEqual(['v1']);
    expect((await conversions(first.metrics)).Success).toBeGreaterThan(0);
  });

  test('it reads back identical through v1beta1, by get and by list', async () => {
    const got = await getJson([v1beta1Api, 'beta', '-n', ns]);
    expect(got.apiVersion).toBe('web.example.com/v1beta1');
    expect(got.spec).toEqual({ heading: 'Created as v1beta1', instances: 2, theme: { color: '#FF5722' } });
    const listed = await getJson([v1beta1Api, '-n', ns, '-l', LABEL]);
    expect(listed.items.map((w: any) => [w.apiVersion, w.metadata.name, w.spec])).toEqual([
      ['web.example.com/v1beta1', 'beta', { heading: 'Created as v1beta1', instances: 2, theme: { color: '#FF5722' } }],
    ]);
  });

  test('a v1 Website is listed through v1beta1, and a v1beta1 patch changes the v1 object', async () => {
    await ok(['create', '-f', '-'], { input: JSON.stringify(v1('gamma', { title: 'Created as v1', replicas: 1 })) });
    const listed = await getJson([v1beta1Api, '-n', ns, '-l', LABEL]);
    expect(listed.items.map((w: any) => [w.metadata.name, w.spec])).toEqual([
      ['beta', { heading: 'Created as v1beta1', instances: 2, theme: { color: '#FF5722' } }],
      ['gamma', { heading: 'Created as v1', instances: 1, theme: { color: '#2196F3' } }],
    ]);
    await ok(['patch', v1beta1Api, 'gamma', '-n', ns, '--type=merge', '-p', '{"spec":{"instances":3}}']);
    expect((await getJson([v1Api, 'gamma', '-n', ns])).spec).toEqual({
      title: 'Created as v1',
      replicas: 3,
      color: '#2196F3',
    });
    expect((await conversions(first.metrics)).Failed).toBeUndefined();
  });

  test('the API server rejects an invalid v1beta1 Website with the schema message, and the webhook keeps serving', async () => {
    const result = await kubectl(['create', '-f', '-'], {
      input: JSON.stringify(v1beta1('too-many', { heading: 'Too many', instances: 9 })),
    });
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(/spec\.instances: Invalid value: 9/);
    expect((await getJson([v1beta1Api, 'beta', '-n', ns])).spec.instances).toBe(2);
  });

  test("dist/'s CRD file applies while the operator runs, server-side and client-side; it still calls the Service and still converts", async () => {
    const caBundle = (await getJson(['crd', CRD])).spec.conversion.webhook.clientConfig.caBundle;
    for (const apply of [
      ['apply', '--server-side', '-f', CRD_FILE],
      ['apply', '-f', CRD_FILE],
    ]) {
      const before = (await conversions(running[0].metrics)).Success ?? 0;
      const result = await kubectl(apply);
      expect([apply.join(' '), result.code, result.stderr]).toEqual([
        apply.join(' '),
        0,
        expect.not.stringMatching(/error|exactly one of url or service/i),
      ]);
      expect(await crdCalls()).toEqual(distCrd.spec.conversion.webhook.clientConfig);
      expect((await getJson(['crd', CRD])).spec.conversion.webhook.clientConfig.caBundle).toBe(caBundle);
      expect((await getJson([v1beta1Api, 'beta', '-n', ns])).spec.heading).toBe('Created as v1beta1');
      expect((await conversions(running[0].metrics)).Success).toBeGreaterThan(before);
    }
  });

  test('a restarted operator reuses the Secret: the same certificate, and no write to the Secret or the CRD', async () => {
    const secretVersion = (await getJson(['secret', SECRET, '-n', ns])).metadata.resourceVersion;
    const crdVersion = (await getJson(['crd', CRD])).metadata.resourceVersion;
    const servedBefore = first.certificates.current();
    await stopOperator(first);

    const second = await startOperator({ checkIntervalMs: 1000 });
    expect(second.certificates.current()).toEqual(servedBefore);
    // Two more checks, to be sure later checks do not write either.
    await new Promise((r) => setTimeout(r, 2500));
    expect(await verbsSent(second.apiMetrics, ['secrets', 'customresourcedefinitions'])).toEqual([
      'GET customresourcedefinitions',
      'GET secrets',
    ]);
    expect((await getJson(['secret', SECRET, '-n', ns])).metadata.resourceVersion).toBe(secretVersion);
    expect((await getJson(['crd', CRD])).metadata.resourceVersion).toBe(crdVersion);
    await eventually(
      'a v1beta1 read through the restarted webhook',
      async () => (await kubectl(['get', v1beta1Api, 'beta', '-n', ns])).code === 0 || undefined,
    );
  });

  test('a certificate due for renewal is renewed and served without restarting the server; the API server keeps converting', async () => {
    const operator = running[0];
    const secret = await getJson(['secret', SECRET, '-n', ns]);
    const crdVersion = (await getJson(['crd', CRD])).metadata.resourceVersion;
    const ca = { cert: splitPemCertificates(text(secret.data['ca.crt']))[0], key: text(secret.data['ca.key']) };
    // As if most of its validity had passed: an hour old, ten minutes left, from the same CA.
    const aging = await issueServingCertificate(ca, {
      commonName: `website-operator-webhook.${ns}.svc`,
      dnsNames: webhookDnsNames('website-operator-webhook', ns),
      validityMs: 10 * 60_000,
      backdateMs: 60 * 60_000,
    });
    const agingSerial = new X509Certificate(aging.cert).serialNumber;
    const servedBefore = await servedSerial(ca.cert);

    // Users keep reading through v1beta1 during the renewal; every read must succeed.
    let reading = true;
    const reads: Promise<number[]> = (async () => {
      const codes: number[] = [];
      while (reading) codes.push((await kubectl(['get', v1beta1Api, 'beta', '-n', ns, '-o', 'name'])).code);
      return codes;
    })();

    await ok(['replace', '-f', '-'], {
      input: JSON.stringify({
        ...secret,
        data: { ...secret.data, 'tls.crt': b64(aging.cert), 'tls.key': b64(aging.key) },
      }),
    });
    const renewed = await eventually('the operator to renew the aging certificate', async () => {
      const current = await getJson(['secret', SECRET, '-n', ns]);
      const serial = new X509Certificate(text(current.data['tls.crt'])).serialNumber;
      return serial !== agingSerial ? current : undefined;
    });
    const renewedCert = new X509Certificate(text(renewed.data['tls.crt']));
    expect(renewedCert.validToDate.getTime() - Date.now()).toBeGreaterThan(364 * 24 * 3600_000);
    expect(renewed.data['ca.crt']).toBe(secret.data['ca.crt']);
    expect(renewed.data['ca.key']).toBe(secret.data['ca.key']);
    await eventually('the server to present the renewed certificate', async () =>
      (await servedSerial(ca.cert)) === renewedCert.serialNumber ? true : undefined,
    );
    expect(renewedCert.serialNumber).not.toBe(servedBefore);
    expect(operator.server.isServing()).toBe(true);
    expect(operator.server.port).toBe(port);

    // The server closes idle keep-alive connections after 5 s, so the API server's next call
    // opens a new one: the renewed certificate must verify against the caBundle it already has.
    await new Promise((r) => setTimeout(r, 6000));
    reading = false;
    const codes = await reads;
    expect(codes.length).toBeGreaterThan(3);
    expect(codes.filter((c) => c !== 0)).toEqual([]);
    expect((await getJson([v1beta1Api, 'beta', '-n', ns])).spec.heading).toBe('Created as v1beta1');
    expect((await getJson(['crd', CRD])).metadata.resourceVersion).toBe(crdVersion);
    expect((await conversions(operator.metrics)).Failed).toBeUndefined();
    // Still the CA of the very first start.
    expect(renewed.data['ca.crt']).toBe(secretBefore.data['ca.crt']);
  });

  test('a stopped operator removes its endpoint: v1beta1 requests fail naming the Service, v1 keeps working, the CRD still calls the Service', async () => {
    for (const entry of [...running]) await stopOperator(entry);
    expect((await kubectl(['get', 'endpointslice', 'website-operator-webhook-webhook-test', '-n', ns])).code).not.toBe(
      0,
    );
    const failed = await eventually('a v1beta1 read to fail without an endpoint', async () => {
      const result = await kubectl(['get', v1beta1Api, 'beta', '-n', ns]);
      return result.code !== 0 ? result : undefined;
    });
    expect(failed.stderr).toMatch(
      /conversion webhook for web\.example\.com\/v1\w*, Kind=Website failed: .*no endpoints available for service \\?"website-operator-webhook\\?"/,
    );
    expect((await getJson([v1Api, 'beta', '-n', ns])).spec.title).toBe('Created as v1beta1');
    expect(await crdCalls()).toEqual(distCrd.spec.conversion.webhook.clientConfig);
  });
});
