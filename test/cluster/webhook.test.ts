import { KubeConfig } from '@kubernetes/client-node';
import { X509Certificate } from 'node:crypto';
import { createWriteStream, mkdirSync, readFileSync } from 'node:fs';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { connect } from 'node:tls';
import { parseAllDocuments } from 'yaml';
import { KubeClient } from '../../operator/src/controller/kube-client.ts';
import { createLogger } from '../../operator/src/observability/logger.ts';
import { OperatorMetrics } from '../../operator/src/observability/metrics.ts';
import { webhookDnsNames } from '../../lib/operator/names.ts';
import { WebsiteOperator } from '../../lib/operator/website-operator.ts';
import { firstCertificate, issueServingCertificate, splitPemCertificates } from '../../operator/src/webhook/certificates.ts';
import { ConversionWebhookServer } from '../../operator/src/webhook/conversion-server.ts';
import { OperatorManagedCertificates } from '../../operator/src/webhook/operator-managed-certificates.ts';
import { synth } from '../helpers.ts';
import { ROOT } from './env.ts';
import { createNamespace, deleteNamespace, eventually, getJson, kubectl, loadClusterInfo, ok, website } from './kube.ts';

/*
 * The conversion webhook end to end: OperatorManagedCertificates and ConversionWebhookServer run
 * in this process, authenticated as the operator's ServiceAccount under exactly the RBAC the
 * construct synthesizes, and the local API server (a local process) calls the webhook at
 * https://127.0.0.1:<port>/convert. Users go through kubectl, as they would.
 */

const CRD = 'websites.web.example.com';
const SECRET = 'website-operator-webhook-tls';
const distCrd = parseAllDocuments(readFileSync(join(ROOT, 'dist/website-operator/website-crd.yaml'), 'utf8')).map((d) => d.toJS())[0];
const logFile = join(ROOT, 'test-results', 'webhook-cluster.log');
mkdirSync(join(ROOT, 'test-results'), { recursive: true });
const logger = createLogger('debug', createWriteStream(logFile));

let ns: string;
let clusterRbac: string[] = [];
let kubeConfig: KubeConfig;
let port: number;
let webhookUrl: string;

/** One start of the operator's webhook half, as the operator entrypoint does it. */
interface OperatorRun {
  server: ConversionWebhookServer;
  certificates: OperatorManagedCertificates;
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

/** A port nobody listens on now; the webhook URL must be known before the server starts. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createNetServer();
    probe.on('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}

/** Serial of the certificate the webhook presents to a new connection (verified against `ca`). */
function servedSerial(ca: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, ca }, () => {
      resolve(socket.getPeerCertificate().serialNumber);
      socket.end();
    });
    socket.on('error', reject);
  });
}

/** What the operator process does at start: certificates, then the server, with fresh metrics. */
async function startOperator(options: { checkIntervalMs?: number } = {}): Promise<OperatorRun> {
  const apiMetrics = new OperatorMetrics({ processMetrics: false });
  const client = new KubeClient(kubeConfig, { metrics: apiMetrics });
  const certificates = new OperatorManagedCertificates({ client, namespace: ns, crdName: CRD, webhookUrl, logger, ...options });
  const metrics = new OperatorMetrics({ processMetrics: false });
  const server = new ConversionWebhookServer({ port, host: '127.0.0.1', tls: certificates, logger, metrics });
  const stop = new AbortController();
  const loop = certificates.run(stop.signal);
  await server.start();
  await firstCertificate(certificates, stop.signal);
  const entry = { server, stop, loop, certificates, metrics, apiMetrics };
  running.push(entry);
  return entry;
}

async function stopOperator(entry: OperatorRun): Promise<void> {
  entry.stop.abort();
  await entry.loop;
  await entry.server.stop();
  running.splice(running.indexOf(entry), 1);
}

/** Verbs this process sent to the API server, from the client's own metrics. */
async function verbsSent(metrics: OperatorMetrics): Promise<string[]> {
  return (await metrics.apiRequests.get()).values.map((v) => `${v.labels.verb} ${v.labels.resource}`).sort();
}

async function conversions(metrics: OperatorMetrics): Promise<Record<string, number>> {
  return Object.fromEntries((await metrics.conversions.get()).values.map((v) => [String(v.labels.result), v.value]));
}

function v1beta1(name: string, spec: Record<string, unknown>) {
  return { apiVersion: 'web.example.com/v1beta1', kind: 'Website', metadata: { name, namespace: ns }, spec };
}

beforeAll(async () => {
  ns = await createNamespace('webhook');
  // The operator's RBAC exactly as the construct makes it, for this namespace.
  const manifests = synth((chart) => new WebsiteOperator(chart, 'op', { namespace: ns, createNamespace: false }));
  const rbac = manifests.filter((m) => ['ServiceAccount', 'Role', 'RoleBinding', 'ClusterRole', 'ClusterRoleBinding'].includes(m.kind));
  clusterRbac = rbac.filter((m) => m.kind.startsWith('Cluster')).map((m) => `${m.kind.toLowerCase()}/${m.metadata.name}`);
  await ok(['apply', '--server-side', '-f', '-'], { input: rbac.map((m) => JSON.stringify(m)).join('\n') });

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
  webhookUrl = `https://127.0.0.1:${port}/convert`;
});

afterAll(async () => {
  for (const entry of [...running]) await stopOperator(entry);
  // Back to dist/'s conversion (the Service, no caBundle): other test files and later runs expect it.
  await ok(['patch', 'crd', CRD, '--type=json', '-p', JSON.stringify([{ op: 'replace', path: '/spec/conversion', value: distCrd.spec.conversion }])]);
  expect((await getJson(['crd', CRD])).spec.conversion).toEqual(distCrd.spec.conversion);
  if (clusterRbac.length > 0) await kubectl(['delete', ...clusterRbac, '--ignore-not-found']);
  if (ns) await deleteNamespace(ns);
});

describe('the conversion webhook against the local cluster', () => {
  let first: OperatorRun;
  let secretBefore: any;

  test('the operator creates the webhook Secret and points the CRD at its URL, trusting its CA', async () => {
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
    expect(cert.checkIP('127.0.0.1')).toBe('127.0.0.1');
    expect(cert.checkHost(`website-operator-webhook.${ns}.svc`)).toBe(`website-operator-webhook.${ns}.svc`);
    expect(await servedSerial(text(secret.data['ca.crt']))).toBe(cert.serialNumber);

    const clientConfig = (await getJson(['crd', CRD])).spec.conversion.webhook.clientConfig;
    expect(clientConfig).toEqual({ url: webhookUrl, caBundle: secret.data['ca.crt'] });
  });

  test('a Website created through v1beta1 is stored as v1', async () => {
    const beta = v1beta1('beta', { heading: 'Created as v1beta1', instances: 2, theme: { color: '#FF5722' } });
    // The API server picks up the CRD's new clientConfig within moments.
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
    const listed = await getJson([v1beta1Api, '-n', ns]);
    expect(listed.items.map((w: any) => [w.apiVersion, w.metadata.name, w.spec])).toEqual([
      ['web.example.com/v1beta1', 'beta', { heading: 'Created as v1beta1', instances: 2, theme: { color: '#FF5722' } }],
    ]);
  });

  test('a v1 Website is listed through v1beta1, and a v1beta1 patch changes the v1 object', async () => {
    await ok(['create', '-f', '-'], { input: JSON.stringify(website('gamma', ns, { title: 'Created as v1', replicas: 1 })) });
    const listed = await getJson([v1beta1Api, '-n', ns]);
    expect(listed.items.map((w: any) => [w.metadata.name, w.spec])).toEqual([
      ['beta', { heading: 'Created as v1beta1', instances: 2, theme: { color: '#FF5722' } }],
      ['gamma', { heading: 'Created as v1', instances: 1, theme: { color: '#2196F3' } }],
    ]);
    await ok(['patch', v1beta1Api, 'gamma', '-n', ns, '--type=merge', '-p', '{"spec":{"instances":3}}']);
    expect((await getJson([v1Api, 'gamma', '-n', ns])).spec).toEqual({ title: 'Created as v1', replicas: 3, color: '#2196F3' });
    expect((await conversions(first.metrics)).Failed).toBeUndefined();
  });

  test('the API server rejects an invalid v1beta1 Website with the schema message, and the webhook keeps serving', async () => {
    const result = await kubectl(['create', '-f', '-'], { input: JSON.stringify(v1beta1('too-many', { heading: 'Too many', instances: 9 })) });
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(/spec\.instances: Invalid value: 9/);
    expect((await getJson([v1beta1Api, 'beta', '-n', ns])).spec.instances).toBe(2);
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
    expect(await verbsSent(second.apiMetrics)).toEqual(['GET customresourcedefinitions', 'GET secrets']);
    expect((await getJson(['secret', SECRET, '-n', ns])).metadata.resourceVersion).toBe(secretVersion);
    expect((await getJson(['crd', CRD])).metadata.resourceVersion).toBe(crdVersion);
    await eventually('a v1beta1 read through the restarted webhook', async () => (await kubectl(['get', v1beta1Api, 'beta', '-n', ns])).code === 0 || undefined);
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
      ipAddresses: ['127.0.0.1'],
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

    await ok(['replace', '-f', '-'], { input: JSON.stringify({ ...secret, data: { ...secret.data, 'tls.crt': b64(aging.cert), 'tls.key': b64(aging.key) } }) });
    const renewed = await eventually('the operator to renew the aging certificate', async () => {
      const current = await getJson(['secret', SECRET, '-n', ns]);
      const serial = new X509Certificate(text(current.data['tls.crt'])).serialNumber;
      return serial !== agingSerial ? current : undefined;
    });
    const renewedCert = new X509Certificate(text(renewed.data['tls.crt']));
    expect(renewedCert.validToDate.getTime() - Date.now()).toBeGreaterThan(364 * 24 * 3600_000);
    expect(renewed.data['ca.crt']).toBe(secret.data['ca.crt']);
    expect(renewed.data['ca.key']).toBe(secret.data['ca.key']);
    await eventually('the server to present the renewed certificate', async () => ((await servedSerial(ca.cert)) === renewedCert.serialNumber ? true : undefined));
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
});
