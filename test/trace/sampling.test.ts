// Sampling, measured on the real Collector in front of the real Jaeger (health checks: health-checks.test.ts).
// Bounds are binomial: n traces kept with probability p give n·p ± 5·sqrt(n·p·(1-p)); a correct
// sampler falls outside with probability below 1e-6.

import { eventually } from '../../harness/process/poll.ts';
import {
  hex,
  jaegerTraces,
  type LocalStack,
  otlpRequest,
  sendOtlpJson,
  startStack,
  synthYaml,
} from '../../harness/trace/traces.ts';
import { CollectorSampling } from '../../lib/tracing/collector/processors.ts';
import {
  DevelopmentTracingStack,
  type DevelopmentTracingStackProps,
} from '../../lib/tracing/development-tracing-stack.ts';

const ORDER = ['jaeger', 'otel-collector'];

function binomialBounds(n: number, percentage: number): [number, number] {
  const p = percentage / 100;
  const sd = Math.sqrt(n * p * (1 - p));
  return [Math.floor(n * p - 5 * sd), Math.ceil(n * p + 5 * sd)];
}

/** Sends `count` one-span traces of `service` in requests of 500; returns their ids. */
async function sendTraces(
  base: string,
  service: string,
  count: number,
  span: { durationMs?: number; error?: boolean } = {},
): Promise<string[]> {
  const ids: string[] = [];
  for (let sent = 0; sent < count; sent += 500) {
    const batch = Array.from({ length: Math.min(500, count - sent) }, () => ({
      traceId: hex(16),
      spans: [{ name: 'GET /work', ...span }],
    }));
    expect(await sendOtlpJson(base, otlpRequest(service, batch))).toBe(200);
    ids.push(...batch.map((t) => t.traceId));
  }
  return ids;
}

/** The development stack without HotROD, its collector sampling as `sampling` says. */
const startSampling = (sampling: DevelopmentTracingStackProps['sampling']) =>
  startStack(
    synthYaml((chart) => new DevelopmentTracingStack(chart, 'Tracing', { sampling, hotrod: false })),
    { order: ORDER },
  );

/** Waits until Jaeger has some of `service`'s traces and their count stops changing (the collector has flushed). */
async function settledCount(query: string, service: string): Promise<number> {
  let last = -1;
  for (;;) {
    await new Promise((r) => setTimeout(r, 3000));
    const count = (await jaegerTraces(query, service)).length;
    if (count > 0 && count === last) return count;
    last = count;
  }
}

describe('probabilistic sampling at 1 % (the OtelCollector default, the spec sample configuration)', () => {
  let stack: LocalStack;
  beforeAll(async () => {
    stack = await startSampling(CollectorSampling.probabilistic(1));
  });
  afterAll(() => stack?.stop());

  test('keeps a share of 20000 traces within the binomial bound, whole traces only', async () => {
    const n = 20_000;
    await sendTraces(stack.url('otel-collector', 'otlp-http'), 'probabilistic', n);
    const kept = await settledCount(stack.url('jaeger', 'query'), 'probabilistic');
    const [low, high] = binomialBounds(n, 1);
    expect({ kept, within: kept >= low && kept <= high }).toEqual({ kept, within: true });
  });

  test('keeps or drops every span of a trace together (the decision follows the trace id)', async () => {
    const traces = Array.from({ length: 2000 }, () => {
      const root = hex(8);
      return {
        traceId: hex(16),
        spans: [
          { name: 'root', spanId: root },
          { name: 'child', parentSpanId: root },
          { name: 'child', parentSpanId: root },
        ],
      };
    });
    for (let i = 0; i < traces.length; i += 500)
      expect(
        await sendOtlpJson(
          stack.url('otel-collector', 'otlp-http'),
          otlpRequest('whole-traces', traces.slice(i, i + 500)),
        ),
      ).toBe(200);
    await settledCount(stack.url('jaeger', 'query'), 'whole-traces');
    const kept = await jaegerTraces(stack.url('jaeger', 'query'), 'whole-traces');
    expect(kept.length).toBeGreaterThan(0);
    expect(kept.map((t) => t.spans.length)).toEqual(kept.map(() => 3));
  });
});

describe('tail-based sampling (the production collector: errors, slower than 1 s, 1 % of the rest)', () => {
  let stack: LocalStack;
  beforeAll(async () => {
    stack = await startSampling(CollectorSampling.tail({ percentage: 1 }));
  });
  afterAll(() => stack?.stop());

  test('keeps every error trace, every trace over 1 s, and about 1 % of 10000 fast successful ones', async () => {
    const base = stack.url('otel-collector', 'otlp-http');
    const query = stack.url('jaeger', 'query');
    const errors = await sendTraces(base, 'tail-errors', 200, { error: true });
    const slow = await sendTraces(base, 'tail-slow', 200, { durationMs: 1500 });
    const justFast = await sendTraces(base, 'tail-fast-edge', 200, { durationMs: 900 });
    const n = 10_000;
    await sendTraces(base, 'tail-rest', n);
    // Decisions come decision_wait (10 s) after a trace's first span.
    await eventually(
      'every error trace in Jaeger',
      async () => ((await jaegerTraces(query, 'tail-errors')).length >= errors.length ? true : undefined),
      90_000,
    );
    const kept = await settledCount(query, 'tail-rest');
    expect((await jaegerTraces(query, 'tail-errors')).map((t) => t.traceID).sort()).toEqual([...errors].sort());
    expect((await jaegerTraces(query, 'tail-slow')).map((t) => t.traceID).sort()).toEqual([...slow].sort());
    const [low, high] = binomialBounds(n, 1);
    expect({ kept, within: kept >= low && kept <= high }).toEqual({ kept, within: true });
    // 900 ms is under the threshold: those are sampled like the rest, so most are gone.
    expect((await jaegerTraces(query, 'tail-fast-edge')).length).toBeLessThan(justFast.length / 4);
  });
});
