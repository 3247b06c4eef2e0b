// What the tests of the production stack on Elasticsearch share: the Secrets dist/'s chart names,
// filled as a user fills them from the trace project's shared servers, requests to Elasticsearch,
// and HotROD sending through the gateway with a client certificate.
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { eventually } from '../process/poll.ts';
import { freePort } from '../process/ports.ts';
import type { SharedServices } from './services.ts';
import {
  type ClientTls,
  hex,
  type JaegerTrace,
  jaegerTrace,
  type LocalStack,
  otlpRequest,
  sendOtlpJsonTls,
  type TestPki,
  tracingBinaries,
} from './traces.ts';

export const CHART = 'tracing-production-elasticsearch';
const ES_SERVICE = 'elasticsearch-es-http.tracing.svc:9200';
/** Jaeger's index names with the chart's index prefix `jaeger`. */
export const INDEX_PREFIX = 'jaeger-jaeger';

/** The Secrets the chart names, as a user creates them. */
export function productionSecrets(services: SharedServices, pki: TestPki, redirectUrl: string, password?: string) {
  const { elasticsearch: es } = services;
  return {
    'jaeger-elasticsearch': { username: 'jaeger', password: password ?? es.users.jaeger },
    'elasticsearch-es-http-certs-public': { 'ca.crt': es.ca },
    ...tlsSecrets(pki),
    ...oidcSecret(services, redirectUrl),
  };
}

/** The TLS Secrets both production charts name: the gateway's and the collector's, and the gateway's client certificate. */
export function tlsSecrets(pki: TestPki) {
  return {
    'jaeger-collector-tls': { 'tls.crt': pki.serverCert, 'tls.key': pki.serverKey, 'ca.crt': pki.ca },
    'otel-collector-client-tls': { 'ca.crt': pki.ca, 'tls.crt': pki.clientCert, 'tls.key': pki.clientKey },
    'otel-collector-tls': { 'tls.crt': pki.serverCert, 'tls.key': pki.serverKey, 'ca.crt': pki.ca },
  };
}

/** The Secret `jaeger-oidc` both production charts name: the provider is the shared Keycloak. */
export function oidcSecret(services: Pick<SharedServices, 'keycloak'>, redirectUrl: string) {
  const { keycloak } = services;
  return {
    'jaeger-oidc': {
      'issuer-url': keycloak.issuerUrl,
      'client-id': keycloak.clientId,
      'client-secret': keycloak.clientSecret,
      'cookie-secret': Buffer.from(hex(16)).toString('base64'),
      'redirect-url': redirectUrl,
      'backend-logout-url': `${keycloak.issuerUrl}/protocol/openid-connect/logout?id_token_hint={id_token}`,
    },
  };
}

/** The storage's address: the chart's Service name → the local node. */
export const esAddress = (services: SharedServices, host = new URL(services.elasticsearch.url).host) => ({
  [ES_SERVICE]: host,
});

/** yyyy-mm-dd of `days` days before today (UTC), as Jaeger's daily indices are named. */
export const dayBefore = (days: number) => new Date(Date.now() - days * 86_400_000).toISOString().slice(0, 10);

/** HotROD sending to `endpoint` (OTLP/HTTP) with the senders' client certificate, its MySQL slowed to 1.5 s. */
export async function startHotRod(
  endpoint: string,
  pki: TestPki,
  dir: string,
): Promise<{ port: number; stop(): Promise<void> }> {
  const files = { ca: join(dir, 'ca.crt'), cert: join(dir, 'client.crt'), key: join(dir, 'client.key') };
  writeFileSync(files.ca, pki.ca);
  writeFileSync(files.cert, pki.clientCert);
  writeFileSync(files.key, pki.clientKey, { mode: 0o600 });
  const ports = {
    frontend: await freePort(),
    customer: await freePort(),
    driver: await freePort(),
    route: await freePort(),
  };
  const log = join(dir, 'hotrod.log');
  const fd = openSync(log, 'a');
  const child: ChildProcess = spawn(
    tracingBinaries().hotrod,
    [
      'all',
      '--fix-db-query-delay=1500ms',
      ...Object.entries(ports).map(([service, port]) => `--${service}-service-port=${port}`),
    ],
    {
      env: {
        PATH: process.env.PATH,
        OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
        OTEL_EXPORTER_OTLP_CERTIFICATE: files.ca,
        OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE: files.cert,
        OTEL_EXPORTER_OTLP_CLIENT_KEY: files.key,
      },
      stdio: ['ignore', fd, fd],
    },
  );
  closeSync(fd);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await eventually(
    'HotROD to serve',
    async () => {
      if (child.exitCode !== null) throw new Error(`HotROD exited: ${readFileSync(log, 'utf8').slice(-2000)}`);
      return (await fetch(`http://127.0.0.1:${ports.frontend}/`).catch(() => undefined))?.ok;
    },
    { timeoutMs: 60_000, stopOnError: true },
  );
  return {
    port: ports.frontend,
    stop: async () => {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/**
 * Sends a failing checkout (a root span with an error and its database child) to the stack's
 * gateway over mutual TLS, and resolves once Jaeger query at `queryBase` holds both spans: tail
 * sampling decides 10 s after the first span, then Jaeger's collector stores them one by one.
 */
export async function sendErrorTrace(
  stack: LocalStack,
  queryBase: string,
  sender: ClientTls,
): Promise<{ status: number; root: string; trace: () => Promise<JaegerTrace> }> {
  const traceId = hex(16);
  const root = hex(8);
  const status = await sendOtlpJsonTls(
    `https://127.0.0.1:${stack.port('otel-collector', 'otlp-http')}`,
    otlpRequest('checkout', [
      {
        traceId,
        spans: [
          {
            name: 'POST /checkout',
            spanId: root,
            error: true,
            attributes: { 'http.request.method': 'POST', 'http.response.status_code': 500 },
          },
          { name: 'SELECT stock', parentSpanId: root, attributes: { 'db.system.name': 'postgresql' } },
        ],
      },
    ]),
    sender,
  );
  const trace = () =>
    eventually(
      'both spans in Jaeger query',
      async () => {
        const found = await jaegerTrace(queryBase, traceId);
        return found && found.spans.length >= 2 ? found : undefined;
      },
      90_000,
    );
  return { status, root, trace };
}
