// Health-check traces are dropped whole by the development stack as dist/ ships it: the probe's
// root span and every span under it, whichever OTLP transport they come over and in whatever order
// their spans arrive, while ordinary traces beside them arrive whole. (The production gateway:
// cassandra.test.ts.)
import { collectorOtlpPorts, type LocalStack, OTLP_PROTOCOLS, startStack } from '../../harness/trace/traces.ts';
import { sendHealthAndOrdinaryTraces, storedHealthSpans } from './health-traces.ts';

describe('health-check traces in dist/tracing-dev/tracing-dev.yaml (every other trace kept)', () => {
  let stack: LocalStack;
  beforeAll(async () => {
    stack = await startStack('tracing-dev', {
      order: ['jaeger', 'otel-collector'],
      only: ['jaeger', 'otel-collector'],
    });
  });
  afterAll(() => stack?.stop());

  test.each(OTLP_PROTOCOLS)(
    'over %s: not one span of a health check with children is stored; ordinary traces are, whole',
    async (protocol) => {
      const ports = collectorOtlpPorts(stack);
      // Late by 4 s: the collector decides a second after a root arrives, so this child meets a decided trace.
      const sent = await sendHealthAndOrdinaryTraces(protocol, ports, {
        service: `health-dev-${protocol.replace('/', '-')}`,
        lateMs: 4000,
      });
      const stored = await storedHealthSpans(stack.url('jaeger', 'query'), sent, 60_000);
      expect(stored).toEqual(Object.fromEntries(sent.health.map((id) => [id, 0])));
    },
  );
});
