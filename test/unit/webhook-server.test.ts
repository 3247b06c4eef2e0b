import { request } from 'node:https';
import { connect } from 'node:tls';
import { context, propagation, SpanKind, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { OperatorMetrics } from '../../operator/src/observability/metrics.ts';
import {
  createCertificateAuthority,
  issueServingCertificate,
  type TlsCertificate,
  type TlsSource,
} from '../../operator/src/webhook/certificates.ts';
import { ConversionWebhookServer, MAX_REVIEW_BYTES } from '../../operator/src/webhook/conversion-server.ts';

const YEAR_MS = 365 * 24 * 3600_000;

/** A TlsSource the test controls: set() swaps the certificate and notifies, like a renewal. */
class StaticTls implements TlsSource {
  private certificate?: TlsCertificate;
  private readonly listeners: Array<() => void> = [];
  constructor(certificate?: TlsCertificate) {
    this.certificate = certificate;
  }
  current() {
    return this.certificate;
  }
  onChange(listener: () => void) {
    this.listeners.push(listener);
  }
  async run() {}
  set(certificate: TlsCertificate) {
    this.certificate = certificate;
    for (const listener of this.listeners) listener();
  }
}

interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

let ca: TlsCertificate;
const issue = () =>
  issueServingCertificate(ca, {
    commonName: 'webhook',
    dnsNames: ['localhost'],
    ipAddresses: ['127.0.0.1'],
    validityMs: YEAR_MS,
  });

function send(
  port: number,
  options: {
    method?: string;
    path?: string;
    body?: string | Buffer;
    chunked?: boolean;
    headers?: Record<string, string>;
  } = {},
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        method: options.method ?? 'POST',
        path: options.path ?? '/convert',
        ca: ca.cert,
        agent: false,
        headers: { 'content-type': 'application/json', ...options.headers },
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
      },
    );
    req.on('error', reject);
    if (options.chunked && options.body !== undefined) {
      // No content-length: the server only learns the size while reading.
      const data = Buffer.from(options.body);
      for (let offset = 0; offset < data.length; offset += 64 * 1024)
        req.write(data.subarray(offset, offset + 64 * 1024));
      req.end();
    } else {
      req.end(options.body);
    }
  });
}

/** Serial number of the certificate the server presents on a new connection. */
function servedSerial(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, ca: ca.cert }, () => {
      resolve(socket.getPeerCertificate().serialNumber);
      socket.end();
    });
    socket.on('error', reject);
  });
}

const v1 = (name: string, spec: Record<string, unknown> = { title: 'Hello', replicas: 2, color: '#4CAF50' }) => ({
  apiVersion: 'web.example.com/v1',
  kind: 'Website',
  metadata: { name, namespace: 'team-a', uid: `uid-${name}`, resourceVersion: '7', labels: { team: 'a' } },
  spec,
  status: { availableReplicas: 1, url: `http://website-${name}.team-a.svc.cluster.local` },
});
const v1beta1 = (
  name: string,
  spec: Record<string, unknown> = { heading: 'Hello', instances: 2, theme: { color: '#4CAF50' } },
) => ({
  ...v1(name),
  apiVersion: 'web.example.com/v1beta1',
  spec,
});
const review = (desiredAPIVersion: string, objects: unknown[], uid = 'f0b1d1a2-0000-4000-8000-000000000001') =>
  JSON.stringify({
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'ConversionReview',
    request: { uid, desiredAPIVersion, objects },
  });

describe('ConversionWebhookServer', () => {
  let server: ConversionWebhookServer;
  let tls: StaticTls;
  let metrics: OperatorMetrics;
  let port: number;

  beforeAll(async () => {
    ca = await createCertificateAuthority({ commonName: 'test-ca', validityMs: 2 * YEAR_MS });
    tls = new StaticTls(await issue());
    metrics = new OperatorMetrics({ processMetrics: false });
    server = new ConversionWebhookServer({ port: 0, host: '127.0.0.1', tls, metrics });
    await server.start();
    port = server.port;
  });
  afterAll(() => server.stop());

  const conversions = async () =>
    Object.fromEntries((await metrics.conversions.get()).values.map((v) => [v.labels.result, v.value]));

  test('listens on the port it was given (0: a free one) and is serving', () => {
    expect(port).toBeGreaterThan(0);
    expect(server.isServing()).toBe(true);
  });

  test('converts v1beta1 to v1, echoing the uid and keeping metadata and status', async () => {
    const reply = await send(port, { body: review('web.example.com/v1', [v1beta1('a')]) });
    expect(reply.status).toBe(200);
    expect(reply.headers['content-type']).toBe('application/json');
    expect(JSON.parse(reply.body)).toEqual({
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'ConversionReview',
      response: {
        uid: 'f0b1d1a2-0000-4000-8000-000000000001',
        convertedObjects: [{ ...v1('a'), spec: { title: 'Hello', replicas: 2, color: '#4CAF50' } }],
        result: { status: 'Success' },
      },
    });
  });

  test('converts v1 to v1beta1', async () => {
    const reply = await send(port, { body: review('web.example.com/v1beta1', [v1('b')], 'uid-2') });
    const { response } = JSON.parse(reply.body);
    expect(response.uid).toBe('uid-2');
    expect(response.result).toEqual({ status: 'Success' });
    expect(response.convertedObjects).toEqual([v1beta1('b')]);
  });

  test('adds the default colour on the way to v1 when v1beta1 has no theme', async () => {
    const reply = await send(port, {
      body: review('web.example.com/v1', [v1beta1('c', { heading: 'Plain', instances: 1 })]),
    });
    expect(JSON.parse(reply.body).response.convertedObjects[0].spec).toEqual({
      title: 'Plain',
      replicas: 1,
      color: '#2196F3',
    });
  });

  test('converts several objects of mixed versions in one review, in order', async () => {
    const objects = [v1('one'), v1beta1('two'), v1('three')];
    const { response } = JSON.parse((await send(port, { body: review('web.example.com/v1beta1', objects) })).body);
    expect(response.result.status).toBe('Success');
    expect(response.convertedObjects.map((o: any) => [o.apiVersion, o.metadata.name, o.spec.heading])).toEqual([
      ['web.example.com/v1beta1', 'one', 'Hello'],
      ['web.example.com/v1beta1', 'two', 'Hello'],
      ['web.example.com/v1beta1', 'three', 'Hello'],
    ]);
  });

  test('round trips v1 -> v1beta1 -> v1 through the server without loss', async () => {
    const original = v1('round', { title: 'Tour <b>&</b>', replicas: 5, color: '#abc' });
    const there = JSON.parse((await send(port, { body: review('web.example.com/v1beta1', [original]) })).body).response
      .convertedObjects;
    const back = JSON.parse((await send(port, { body: review('web.example.com/v1', there) })).body).response
      .convertedObjects;
    expect(back).toEqual([original]);
  });

  test.each<[string, unknown[], string, RegExp]>([
    [
      'a v1 object without spec.title',
      [v1('ok'), v1('broken', { replicas: 1 })],
      'web.example.com/v1beta1',
      /^cannot convert object 2 of 2 \(team-a\/broken\) to web\.example\.com\/v1beta1: v1 Website 'broken' needs spec\.title/,
    ],
    [
      'an object of another kind',
      [{ apiVersion: 'web.example.com/v1', kind: 'Blog', metadata: { name: 'x' }, spec: {} }],
      'web.example.com/v1beta1',
      /object 1 of 1 \(x\).*has kind 'Blog', expected 'Website'/,
    ],
    [
      'an object of another group',
      [{ ...v1('g'), apiVersion: 'other.example.com/v1' }],
      'web.example.com/v1beta1',
      /apiVersion 'other\.example\.com\/v1': expected web\.example\.com\/v1 or web\.example\.com\/v1beta1/,
    ],
    ['an unknown desired version', [v1('d')], 'web.example.com/v2', /desiredAPIVersion 'web\.example\.com\/v2'/],
    [
      'an object that is not an object',
      ['just a string'],
      'web.example.com/v1',
      /object 1 of 1 to web\.example\.com\/v1: object is not a JSON object/,
    ],
    [
      'a v1beta1 object with instances as a string',
      [v1beta1('s', { heading: 'H', instances: 'two' })],
      'web.example.com/v1',
      /needs spec\.heading \(string\) and spec\.instances \(integer\)/,
    ],
  ])('answers %s with a Failed result naming the object and the reason', async (_, objects, desired, message) => {
    const before = (await conversions()).Failed ?? 0;
    const reply = await send(port, { body: review(desired, objects, 'uid-failed') });
    expect(reply.status).toBe(200);
    const { response } = JSON.parse(reply.body);
    expect(response.uid).toBe('uid-failed');
    expect(response.convertedObjects).toBeUndefined();
    expect(response.result.status).toBe('Failed');
    expect(response.result.message).toMatch(message);
    expect((await conversions()).Failed).toBe(before + 1);
  });

  test("each request is a server span, the child of the caller's traceparent (the API server's webhook call)", async () => {
    const exporter = new InMemorySpanExporter();
    const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    trace.setGlobalTracerProvider(provider);
    try {
      const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
      const caller = '00f067aa0ba902b7';
      const headers = { traceparent: `00-${traceId}-${caller}-01` };
      await send(port, { body: review('web.example.com/v1beta1', [v1('t1'), v1('t2')]), headers });
      await send(port, { body: review('web.example.com/v1beta1', [{ kind: 'Website' }]), headers });
      await send(port, { path: '/other', headers });
      const spans = exporter.getFinishedSpans();
      expect(spans.map((s) => [s.name, s.kind, s.spanContext().traceId, s.parentSpanContext?.spanId])).toEqual([
        ['POST /convert', SpanKind.SERVER, traceId, caller],
        ['POST /convert', SpanKind.SERVER, traceId, caller],
        ['POST', SpanKind.SERVER, traceId, caller],
      ]);
      expect(spans.map((s) => s.attributes)).toEqual([
        {
          'http.request.method': 'POST',
          'url.path': '/convert',
          'website.conversion.desired_api_version': 'web.example.com/v1beta1',
          'website.conversion.objects': 2,
          'website.conversion.result': 'Success',
          'http.response.status_code': 200,
        },
        expect.objectContaining({ 'website.conversion.result': 'Failed', 'http.response.status_code': 200 }),
        { 'http.request.method': 'POST', 'url.path': '/other', 'http.response.status_code': 404 },
      ]);
    } finally {
      trace.disable();
      propagation.disable();
      context.disable();
      await provider.shutdown();
    }
  });

  test('counts successful reviews', async () => {
    const before = (await conversions()).Success ?? 0;
    await send(port, { body: review('web.example.com/v1', []) });
    expect((await conversions()).Success).toBe(before + 1);
  });

  test.each<[string, string, RegExp]>([
    ['malformed JSON', '{"apiVersion": ', /^request body is not valid JSON/],
    ['an empty body', '', /^request body is not valid JSON/],
    ['a JSON array', '[]', /expected a ConversionReview of apiVersion apiextensions\.k8s\.io\/v1, got no JSON object/],
    [
      'a v1beta1 ConversionReview',
      JSON.stringify({ apiVersion: 'apiextensions.k8s.io/v1beta1', kind: 'ConversionReview', request: {} }),
      /got apiVersion 'apiextensions\.k8s\.io\/v1beta1'.*conversionReviewVersions/,
    ],
    [
      'a review without request',
      JSON.stringify({ apiVersion: 'apiextensions.k8s.io/v1', kind: 'ConversionReview' }),
      /has no request object/,
    ],
    [
      'a request without uid',
      JSON.stringify({
        apiVersion: 'apiextensions.k8s.io/v1',
        kind: 'ConversionReview',
        request: { desiredAPIVersion: 'web.example.com/v1', objects: [] },
      }),
      /request\.uid must be a non-empty string/,
    ],
    [
      'objects that are not a list',
      JSON.stringify({
        apiVersion: 'apiextensions.k8s.io/v1',
        kind: 'ConversionReview',
        request: { uid: 'u', desiredAPIVersion: 'web.example.com/v1', objects: {} },
      }),
      /request\.objects must be a list/,
    ],
  ])('rejects %s with 400 and a message', async (_, body, message) => {
    const reply = await send(port, { body });
    expect(reply.status).toBe(400);
    expect(reply.body).toMatch(message);
  });

  test('rejects other paths with 404 and other methods with 405', async () => {
    const notFound = await send(port, { path: '/other', body: review('web.example.com/v1', []) });
    expect(notFound.status).toBe(404);
    expect(notFound.body).toMatch(/answers POST \/convert/);
    const wrongMethod = await send(port, { method: 'GET' });
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.headers.allow).toBe('POST');
    expect((await send(port, { path: '/convert?timeout=10s', body: review('web.example.com/v1', []) })).status).toBe(
      200,
    );
  });

  test('rejects a body above 3 MiB with 413, announced or streamed, and keeps serving', async () => {
    const big = review('web.example.com/v1', [{ ...v1('big'), padding: 'x'.repeat(MAX_REVIEW_BYTES) }]);
    const announced = await send(port, { body: big });
    expect(announced.status).toBe(413);
    expect(announced.body).toMatch(/exceeds 3145728 bytes/);
    const streamed = await send(port, { body: big, chunked: true });
    expect(streamed.status).toBe(413);
    // Just under the limit is fine.
    const padding = 'x'.repeat(MAX_REVIEW_BYTES - 2000);
    const fits = await send(port, {
      body: review('web.example.com/v1', [
        { ...v1('fits'), metadata: { ...v1('fits').metadata, annotations: { padding } } },
      ]),
    });
    expect(fits.status).toBe(200);
    expect(JSON.parse(fits.body).response.result.status).toBe('Success');
  });

  test('survives everything above: a valid review still succeeds', async () => {
    const { response } = JSON.parse(
      (await send(port, { body: review('web.example.com/v1', [v1beta1('after')]) })).body,
    );
    expect(response.result.status).toBe('Success');
    expect(server.isServing()).toBe(true);
  });

  test('serves a renewed certificate on new connections without a restart', async () => {
    const before = await servedSerial(port);
    const renewed = await issue();
    tls.set(renewed);
    const after = await servedSerial(port);
    expect(after).not.toBe(before);
    expect(after).toBe(new (await import('node:crypto')).X509Certificate(renewed.cert).serialNumber);
    expect(server.port).toBe(port);
    expect((await send(port, { body: review('web.example.com/v1', []) })).status).toBe(200);
  });

  test('keeps the previous certificate when a new pair is unusable', async () => {
    const before = await servedSerial(port);
    const other = await issue();
    tls.set({ cert: tls.current()!.cert, key: other.key });
    expect(await servedSerial(port)).toBe(before);
    expect(server.isServing()).toBe(true);
  });
});

describe('ConversionWebhookServer lifecycle', () => {
  beforeAll(async () => {
    ca ??= await createCertificateAuthority({ commonName: 'test-ca', validityMs: 2 * YEAR_MS });
  });

  test('listens before it has a certificate, and serves once the first one arrives', async () => {
    const tls = new StaticTls();
    const server = new ConversionWebhookServer({ port: 0, host: '127.0.0.1', tls });
    await server.start();
    try {
      expect(server.isServing()).toBe(false);
      await expect(send(server.port, { body: review('web.example.com/v1', []) })).rejects.toThrow();
      tls.set(await issue());
      expect(server.isServing()).toBe(true);
      expect((await send(server.port, { body: review('web.example.com/v1', []) })).status).toBe(200);
    } finally {
      await server.stop();
    }
  });

  test('an unusable first pair leaves it listening but not serving, instead of failing to start', async () => {
    const [a, b] = [await issue(), await issue()];
    const tls = new StaticTls({ cert: a.cert, key: b.key });
    const server = new ConversionWebhookServer({ port: 0, host: '127.0.0.1', tls });
    await server.start();
    try {
      expect(server.isServing()).toBe(false);
      tls.set(a);
      expect(server.isServing()).toBe(true);
    } finally {
      await server.stop();
    }
  });

  test('stop() lets a request in flight finish, then refuses connections', async () => {
    const server = new ConversionWebhookServer({ port: 0, host: '127.0.0.1', tls: new StaticTls(await issue()) });
    await server.start();
    const port = server.port;
    // A request whose body is still arriving when stop() is called.
    const inFlight = new Promise<Reply>((resolve, reject) => {
      const req = request(
        { host: '127.0.0.1', port, method: 'POST', path: '/convert', ca: ca.cert, agent: false },
        (res) => {
          let body = '';
          res.on('data', (c) => (body += c));
          res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
        },
      );
      req.on('error', reject);
      const body = review('web.example.com/v1', [v1beta1('late')]);
      req.write(body.slice(0, 10));
      setTimeout(() => req.end(body.slice(10)), 200);
    });
    await new Promise((r) => setTimeout(r, 50));
    const stopped = server.stop();
    expect(server.isServing()).toBe(false);
    expect((await inFlight).status).toBe(200);
    await stopped;
    await expect(send(port, { body: review('web.example.com/v1', []) })).rejects.toThrow(/ECONNREFUSED/);
  });

  test('start() on a port in use fails with a message naming it', async () => {
    const tls = new StaticTls(await issue());
    const first = new ConversionWebhookServer({ port: 0, host: '127.0.0.1', tls });
    await first.start();
    try {
      const second = new ConversionWebhookServer({ port: first.port, host: '127.0.0.1', tls });
      await expect(second.start()).rejects.toThrow(`cannot listen on 127.0.0.1:${first.port}`);
      expect(second.isServing()).toBe(false);
    } finally {
      await first.stop();
    }
  });
});
