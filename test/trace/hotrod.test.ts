// HotROD → Collector → Jaeger, all three from dist/tracing-dev/tracing-dev.yaml, as synthesized.

import { eventually } from '../../harness/process/poll.ts';
import {
  HOTROD_SERVICES,
  type JaegerTrace,
  type LocalStack,
  startStack,
  wholeDispatchTrace,
} from '../../harness/trace/traces.ts';

let stack: LocalStack;
let trace: JaegerTrace;

type Span = JaegerTrace['spans'][number];

beforeAll(async () => {
  stack = await startStack('tracing-dev', { order: ['jaeger', 'otel-collector', 'hotrod'] });
  const response = await fetch(`${stack.url('hotrod', 'frontend')}/dispatch?customer=123`);
  expect(response.status).toBe(200);
  // The route calls end before /dispatch answers; the collector batches for up to 1 s.
  trace = await eventually('the whole /dispatch trace in Jaeger', () =>
    wholeDispatchTrace(stack.url('jaeger', 'query')),
  );
});

afterAll(async () => {
  await stack?.stop();
});

const service = (span: Span) => trace.processes[span.processID].serviceName;
const tag = (span: Span, key: string) => span.tags.find((t) => t.key === key)?.value;
const parentOf = (span: Span) => {
  const ref = span.references.find((r) => r.refType === 'CHILD_OF');
  return ref && trace.spans.find((s) => s.spanID === ref.spanID);
};

describe('one /dispatch request through the development stack', () => {
  test('is one trace holding spans of frontend, customer, driver and route', () => {
    expect(new Set(trace.spans.map(service))).toEqual(new Set(HOTROD_SERVICES));
  });

  test('every span carries the one trace id (traceparent crossed every hop)', () => {
    expect(new Set(trace.spans.map((s) => s.traceID))).toEqual(new Set([trace.traceID]));
    expect(trace.traceID).toMatch(/^[0-9a-f]{32}$/);
  });

  test("the parent-child tree follows HotROD's calls", () => {
    const roots = trace.spans.filter((s) => !parentOf(s));
    expect(roots.map((s) => [service(s), s.operationName])).toEqual([['frontend', '/dispatch']]);
    const root = roots[0];
    // Each server span's parent is the caller's client span, whose parent is the caller's server span.
    const calledFrom = (server: Span) => {
      const client = parentOf(server)!;
      return [
        service(client),
        tag(client, 'span.kind'),
        service(parentOf(client)!),
        parentOf(client)!.spanID === root.spanID,
      ];
    };
    const customer = trace.spans.find((s) => service(s) === 'customer' && s.operationName === '/customer')!;
    expect(calledFrom(customer)).toEqual(['frontend', 'client', 'frontend', true]);
    const driver = trace.spans.find((s) => service(s) === 'driver')!;
    expect(calledFrom(driver)).toEqual(['frontend', 'client', 'frontend', true]);
    // HotROD asks for a route per nearby driver, in parallel: ten route server spans, each under its own client span.
    const routes = trace.spans.filter((s) => service(s) === 'route');
    expect(routes).toHaveLength(10);
    for (const route of routes) expect(calledFrom(route)).toEqual(['frontend', 'client', 'frontend', true]);
    expect(new Set(routes.map((r) => parentOf(r)!.spanID)).size).toBe(10);
    // The driver's Redis lookups are the driver's children; the customer's SQL query the customer's.
    for (const redis of trace.spans.filter((s) => service(s) === 'redis-manual'))
      expect(parentOf(redis)!.spanID).toBe(driver.spanID);
    expect(parentOf(trace.spans.find((s) => service(s) === 'mysql')!)!.spanID).toBe(customer.spanID);
    // Parallel route calls overlap in time.
    const sorted = routes.map((r) => parentOf(r)!).sort((a, b) => (a as any).startTime - (b as any).startTime);
    expect(
      sorted.some((s, i) => i > 0 && (s as any).startTime < (sorted[i - 1] as any).startTime + sorted[i - 1].duration),
    ).toBe(true);
  });

  test('HTTP spans carry the HTTP attributes', () => {
    const root = trace.spans.find((s) => s.operationName === '/dispatch')!;
    expect([
      tag(root, 'http.request.method'),
      tag(root, 'http.response.status_code'),
      tag(root, 'url.path'),
      tag(root, 'span.kind'),
    ]).toEqual(['GET', 200, '/dispatch', 'server']);
    const client = parentOf(trace.spans.find((s) => service(s) === 'customer')!)!;
    expect(tag(client, 'url.full')).toMatch(/\/customer\?customer=123$/);
  });

  test('span events (logs) are kept, with their fields', () => {
    const root = trace.spans.find((s) => s.operationName === '/dispatch')!;
    expect(root.logs.length).toBeGreaterThan(0);
    const messages = root.logs.flatMap((l) => l.fields.filter((f) => f.key === 'event').map((f) => f.value));
    expect(messages).toEqual(
      expect.arrayContaining(['HTTP request received', 'Found customer', 'Found drivers', 'Finding route']),
    );
  });
});
