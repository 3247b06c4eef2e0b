// Who may send spans, and how the collector proves itself downstream: mutual TLS on the receivers,
// bearer-token forwarding between two collectors over TLS, routing; every credential from a Secret.
import { readFileSync } from 'node:fs';
import { eventually } from '../../harness/process/poll.ts';
import {
  hex,
  jaegerTrace,
  type LocalStack,
  otlpRequest,
  sendOtlpJson,
  sendOtlpJsonTls,
  startStack,
  synthYaml,
  testPki,
} from '../../harness/trace/traces.ts';
import { ForwardingAuth } from '../../lib/tracing/collector/exporters.ts';
import { CollectorSampling } from '../../lib/tracing/collector/processors.ts';
import { JaegerAllInOne } from '../../lib/tracing/jaeger-all-in-one.ts';
import { OtelCollector } from '../../lib/tracing/otel-collector.ts';

const pki = testPki(['otel-collector.tracing.svc', 'gateway.tracing.svc']);

/** POSTs an OTLP/JSON request over https, trusting the test CA; `connect` adds a client certificate. */
const postTls = (
  url: string,
  request: unknown,
  connect: { cert?: string; key?: string } = {},
  headers: Record<string, string> = {},
) => sendOtlpJsonTls(url, request, { ca: pki.ca, ...connect }, headers);

describe('mutual TLS on the collector receivers', () => {
  let stack: LocalStack;
  beforeAll(async () => {
    const yaml = synthYaml((chart) => {
      const jaeger = new JaegerAllInOne(chart, 'Jaeger');
      new OtelCollector(chart, 'Collector', {
        sampling: CollectorSampling.always(),
        backends: [{ name: 'jaeger', endpoint: jaeger.otlpGrpcAddress }],
        receiverSecurity: { tls: { secretName: 'collector-tls' } },
      });
    });
    // Health is plain HTTP on its own port; only the OTLP receivers are TLS.
    stack = await startStack(yaml, {
      order: ['jaeger'],
      secrets: { 'collector-tls': { 'ca.crt': pki.ca, 'tls.crt': pki.serverCert, 'tls.key': pki.serverKey } },
    });
  });
  afterAll(() => stack?.stop());

  const send = (connect: { cert?: string; key?: string }, traceId: string) =>
    postTls(
      `https://127.0.0.1:${stack.port('otel-collector', 'otlp-http')}`,
      otlpRequest('mtls-client', [{ traceId, spans: [{ name: 'over mTLS' }] }]),
      connect,
    );

  test('refuses a client without a certificate at the TLS handshake', async () => {
    await expect(send({}, hex(16))).rejects.toThrow(/fetch failed/);
  });

  test('refuses a client whose certificate another CA signed', async () => {
    const other = testPki([]);
    await expect(send({ cert: other.clientCert, key: other.clientKey }, hex(16))).rejects.toThrow(/fetch failed/);
  });

  test('accepts a client with a certificate its CA signed, and the span reaches Jaeger', async () => {
    const traceId = hex(16);
    expect(await send({ cert: pki.clientCert, key: pki.clientKey }, traceId)).toBe(200);
    await eventually('the span in Jaeger', () => jaegerTrace(stack.url('jaeger', 'query'), traceId));
  });

  test('refuses plaintext (Go answers 400: an HTTP request to an HTTPS server) and stores nothing', async () => {
    const traceId = hex(16);
    expect(
      await sendOtlpJson(
        stack.url('otel-collector', 'otlp-http'),
        otlpRequest('plain', [{ traceId, spans: [{ name: 'x' }] }]),
      ),
    ).toBe(400);
    const accepted = hex(16);
    expect(await send({ cert: pki.clientCert, key: pki.clientKey }, accepted)).toBe(200);
    await eventually('a later accepted span in Jaeger', () => jaegerTrace(stack.url('jaeger', 'query'), accepted));
    expect(await jaegerTrace(stack.url('jaeger', 'query'), traceId)).toBeUndefined();
  });
});

describe('bearer-token forwarding over TLS: a forwarding collector to a gateway that checks the token', () => {
  const token = `tok-${hex(16)}`;
  const wrong = `tok-${hex(16)}`;
  let stack: LocalStack;
  beforeAll(async () => {
    const yaml = synthYaml((chart) => {
      const jaeger = new JaegerAllInOne(chart, 'Jaeger');
      const gateway = new OtelCollector(chart, 'Gateway', {
        name: 'gateway',
        sampling: CollectorSampling.always(),
        backends: [{ name: 'jaeger', endpoint: jaeger.otlpGrpcAddress }],
        receiverSecurity: {
          tls: { secretName: 'gateway-tls', requireClientCertificate: false },
          bearerToken: { secretName: 'ingest-token', key: 'token' },
        },
      });
      for (const [name, secretName] of [
        ['forwarder', 'forward-token'],
        ['forwarder-wrong', 'wrong-token'],
      ]) {
        new OtelCollector(chart, name, {
          name,
          sampling: CollectorSampling.always(),
          backends: [
            {
              name: 'gateway',
              endpoint: gateway.otlpGrpcAddress,
              tls: { secretName: 'gateway-ca' },
              auth: ForwardingAuth.bearerToken({ secretName, key: 'token' }),
            },
          ],
        });
      }
    });
    stack = await startStack(yaml, {
      order: ['jaeger', 'gateway'],
      secrets: {
        'gateway-tls': { 'tls.crt': pki.serverCert, 'tls.key': pki.serverKey },
        'gateway-ca': { 'ca.crt': pki.ca },
        'ingest-token': { token },
        'forward-token': { token },
        'wrong-token': { token: wrong },
      },
    });
  });
  afterAll(() => stack?.stop());

  test('the gateway answers 401 without the token or with a wrong one, 200 with it', async () => {
    const body = () => otlpRequest('direct', [{ traceId: hex(16), spans: [{ name: 'direct' }] }]);
    const gateway = `https://127.0.0.1:${stack.port('gateway', 'otlp-http')}`;
    expect(await postTls(gateway, body())).toBe(401);
    expect(await postTls(gateway, body(), {}, { authorization: `Bearer ${wrong}` })).toBe(401);
    expect(await postTls(gateway, body(), {}, { authorization: `Bearer ${token}` })).toBe(200);
  });

  test('spans through the forwarder holding the token reach Jaeger; through the one with a wrong token they never do', async () => {
    const good = hex(16);
    const bad = hex(16);
    expect(
      await sendOtlpJson(
        stack.url('forwarder', 'otlp-http'),
        otlpRequest('forwarded', [{ traceId: good, spans: [{ name: 'forwarded' }] }]),
      ),
    ).toBe(200);
    expect(
      await sendOtlpJson(
        stack.url('forwarder-wrong', 'otlp-http'),
        otlpRequest('forwarded', [{ traceId: bad, spans: [{ name: 'forwarded' }] }]),
      ),
    ).toBe(200);
    await eventually('the forwarded span in Jaeger', () => jaegerTrace(stack.url('jaeger', 'query'), good));
    // The refused export is logged by the forwarder (it keeps retrying; nothing arrives).
    const log = stack.running.find((r) => r.pod.name === 'forwarder-wrong')!.logFile;
    await eventually('the forwarder logging the refusal', async () =>
      /Unauthenticated/.test(readFileSync(log, 'utf8')) ? true : undefined,
    );
    expect(await jaegerTrace(stack.url('jaeger', 'query'), bad)).toBeUndefined();
  });

  test('no token appears in any log', () => {
    for (const r of stack.running) {
      const text = readFileSync(r.logFile, 'utf8');
      expect([r.pod.name, text.includes(token), text.includes(wrong)]).toEqual([r.pod.name, false, false]);
    }
  });
});

describe('multi-backend routing by a resource attribute', () => {
  let stack: LocalStack;
  beforeAll(async () => {
    const yaml = synthYaml((chart) => {
      const a = new JaegerAllInOne(chart, 'JaegerA', { name: 'jaeger-a' });
      const b = new JaegerAllInOne(chart, 'JaegerB', { name: 'jaeger-b' });
      new OtelCollector(chart, 'Collector', {
        sampling: CollectorSampling.always(),
        backends: [
          { name: 'a', endpoint: a.otlpGrpcAddress },
          { name: 'b', endpoint: b.otlpGrpcAddress },
        ],
        routing: { attribute: 'tenant', routes: [{ value: 'team-b', backends: ['b'] }], defaultBackends: ['a'] },
      });
    });
    stack = await startStack(yaml, { order: ['jaeger-a', 'jaeger-b'] });
  });
  afterAll(() => stack?.stop());

  test("a route's spans go to its backend only; every other span to the default backend only", async () => {
    const ids = { teamB: hex(16), teamC: hex(16), none: hex(16) };
    const base = stack.url('otel-collector', 'otlp-http');
    expect(
      await sendOtlpJson(
        base,
        otlpRequest('routed', [{ traceId: ids.teamB, spans: [{ name: 'b' }] }], { tenant: 'team-b' }),
      ),
    ).toBe(200);
    expect(
      await sendOtlpJson(
        base,
        otlpRequest('routed', [{ traceId: ids.teamC, spans: [{ name: 'c' }] }], { tenant: 'team-c' }),
      ),
    ).toBe(200);
    expect(await sendOtlpJson(base, otlpRequest('routed', [{ traceId: ids.none, spans: [{ name: 'none' }] }]))).toBe(
      200,
    );
    const a = stack.url('jaeger-a', 'query');
    const b = stack.url('jaeger-b', 'query');
    await eventually('team-b in jaeger-b', () => jaegerTrace(b, ids.teamB));
    await eventually('team-c in jaeger-a', () => jaegerTrace(a, ids.teamC));
    await eventually('untagged in jaeger-a', () => jaegerTrace(a, ids.none));
    expect([await jaegerTrace(a, ids.teamB), await jaegerTrace(b, ids.teamC), await jaegerTrace(b, ids.none)]).toEqual([
      undefined,
      undefined,
      undefined,
    ]);
  });
});
