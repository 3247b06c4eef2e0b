// The spec's COLLECTOR_OTLP_ENABLED (JaegerAllInOne's otlpEnabled): off means only the Jaeger
// Thrift receivers accept spans (spec §7.1). Sent with the real legacy client, jaeger-client.
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { eventually } from '../../harness/process/poll.ts';
import { hex, jaegerTraces, type LocalStack, otlpRequest, startStack, synthYaml } from '../../harness/trace/traces.ts';
import { JaegerAllInOne } from '../../lib/tracing/jaeger-all-in-one.ts';

const require = createRequire(import.meta.url);
const { initTracer } = require('jaeger-client') as {
  initTracer(
    config: object,
    options: object,
  ): {
    startSpan(name: string, options?: object): { setTag(k: string, v: unknown): void; finish(): void };
    close(cb: () => void): void;
  };
};

/** TCP ports process `pid` listens on. */
function listeningPorts(pid: number): number[] {
  return execFileSync('ss', ['-ltnpH'], { encoding: 'utf8' })
    .split('\n')
    .filter((line) => line.includes(`pid=${pid},`))
    .map((line) => Number(line.split(/\s+/)[3].split(':').pop()))
    .sort((a, b) => a - b);
}

describe.each([
  ['off', false],
  ['on', true],
])('Jaeger all-in-one with OTLP %s', (_label, otlpEnabled) => {
  let stack: LocalStack;
  beforeAll(async () => {
    stack = await startStack(synthYaml((chart) => new JaegerAllInOne(chart, 'Jaeger', { otlpEnabled })));
  });
  afterAll(() => stack?.stop());

  test(`listens for OTLP ${otlpEnabled ? 'on 4317 and 4318' : 'nowhere'}, and for Thrift over HTTP`, () => {
    const ports = [
      'thrift-http',
      'query',
      'query-grpc',
      'health',
      'metrics',
      ...(otlpEnabled ? ['otlp-grpc', 'otlp-http'] : []),
    ].map((p) => stack.port('jaeger', p));
    expect(listeningPorts(stack.running[0].process.pid!)).toEqual(ports.sort((a, b) => a - b));
  });

  test(`${otlpEnabled ? 'accepts' : 'refuses'} OTLP on every port it listens on`, async () => {
    const pid = stack.running[0].process.pid!;
    const traceId = hex(16);
    const statuses: Record<number, number | string> = {};
    for (const port of listeningPorts(pid)) {
      try {
        const r = await fetch(`http://127.0.0.1:${port}/v1/traces`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(otlpRequest('otlp-sender', [{ traceId, spans: [{ name: 'otlp span' }] }])),
        });
        // An OTLP receiver answers with an ExportTraceServiceResponse; the UI's catch-all page is HTML.
        statuses[port] = `${r.status} ${r.headers.get('content-type')}`;
        await r.arrayBuffer();
      } catch (error) {
        statuses[port] = (error as Error).message;
      }
    }
    const accepted = Object.entries(statuses)
      .filter(([, s]) => s === '200 application/json')
      .map(([p]) => Number(p));
    expect(accepted).toEqual(otlpEnabled ? [stack.port('jaeger', 'otlp-http')] : []);
    if (otlpEnabled)
      await eventually('the OTLP span in Jaeger', async () =>
        (await jaegerTraces(stack.url('jaeger', 'query'), 'otlp-sender')).length === 1 ? true : undefined,
      );
    else expect(await jaegerTraces(stack.url('jaeger', 'query'), 'otlp-sender')).toEqual([]);
  });

  test('accepts spans over Thrift (HTTP) from the Jaeger client', async () => {
    const tracer = initTracer(
      {
        serviceName: `thrift-sender-${otlpEnabled}`,
        sampler: { type: 'const', param: 1 },
        reporter: { collectorEndpoint: `${stack.url('jaeger', 'thrift-http')}/api/traces`, flushIntervalMs: 100 },
      },
      {
        logger: {
          info() {},
          error(message: string) {
            throw new Error(message);
          },
        },
      },
    );
    const span = tracer.startSpan('thrift span');
    span.setTag('http.method', 'GET');
    span.finish();
    await new Promise<void>((resolve) => tracer.close(resolve));
    const traces = await eventually('the Thrift span in Jaeger', async () => {
      const t = await jaegerTraces(stack.url('jaeger', 'query'), `thrift-sender-${otlpEnabled}`);
      return t.length > 0 ? t : undefined;
    });
    expect(traces[0].spans.map((s) => [s.operationName, s.tags.find((t) => t.key === 'http.method')?.value])).toEqual([
      ['thrift span', 'GET'],
    ]);
  });
});
