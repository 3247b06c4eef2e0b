import { propagation, SpanStatusCode, trace } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import fc from 'fast-check';
import {
  firstDifference,
  isSubset,
  jsonEqual,
  needsApply,
  objectHash,
  withHash,
} from '../../operator/src/controller/apply.ts';
import { backoffDelay, sleep } from '../../operator/src/controller/backoff.ts';
import { objectKey } from '../../operator/src/controller/informer.ts';
import { resourcePath } from '../../operator/src/controller/kube-api.ts';
import { TokenBucket } from '../../operator/src/controller/rate-limiter.ts';
import { TerminalError } from '../../operator/src/controller/terminal-error.ts';
import { WorkQueue } from '../../operator/src/controller/work-queue.ts';
import { OperatorMetrics } from '../../operator/src/observability/metrics.ts';
import { traceparentLink } from '../../operator/src/observability/tracing.ts';

describe('backoff', () => {
  test('doubles from the base and stops at the cap', () => {
    const options = { baseMs: 5, maxMs: 1000 };
    expect([0, 1, 2, 3, 8, 9, 100, 5000].map((n) => backoffDelay(n, options))).toEqual([
      0, 5, 10, 20, 640, 1000, 1000, 1000,
    ]);
  });

  test('sleep ends early when its signal aborts', async () => {
    const controller = new AbortController();
    const slept = sleep(60_000, controller.signal);
    controller.abort();
    await expect(slept).resolves.toBeUndefined();
  });
});

describe('resourcePath', () => {
  test('core and grouped resources, namespaced or not, with a subresource', () => {
    expect(resourcePath({ group: '', version: 'v1', resource: 'services' }, { namespace: 'ns', name: 'a' })).toBe(
      '/api/v1/namespaces/ns/services/a',
    );
    expect(
      resourcePath(
        { group: 'web.example.com', version: 'v1', resource: 'websites' },
        { namespace: 'ns', name: 'a', subresource: 'status' },
      ),
    ).toBe('/apis/web.example.com/v1/namespaces/ns/websites/a/status');
    expect(resourcePath({ group: 'apps', version: 'v1', resource: 'deployments' })).toBe('/apis/apps/v1/deployments');
    expect(objectKey({ metadata: { namespace: 'ns', name: 'a' } })).toBe('ns/a');
    expect(objectKey({ metadata: { name: 'cluster-scoped' } })).toBe('cluster-scoped');
  });
});

describe('apply decision', () => {
  const desired = {
    metadata: { name: 'a', labels: { x: '1' } },
    spec: { replicas: 2, ports: [{ port: 80, name: 'http' }] },
  };
  const stored = {
    metadata: { name: 'a', labels: { x: '1', added: 'by-someone' }, uid: 'u', resourceVersion: '7' },
    spec: { replicas: 2, ports: [{ name: 'http', port: 80, protocol: 'TCP' }], sessionAffinity: 'None' },
    status: {},
  };

  test('fields the server or others added do not count; a changed or missing field does, and says where', () => {
    expect(isSubset(desired, stored)).toBe(true);
    expect(firstDifference({ ...desired, spec: { ...desired.spec, replicas: 3 } }, stored)).toBe('.spec.replicas');
    expect(firstDifference(desired, { ...stored, spec: { ...stored.spec, ports: [] } })).toBe('.spec.ports');
    expect(firstDifference({ a: { b: [1, { c: 'x' }] } }, { a: { b: [1, { c: 'y' }] } })).toBe('.a.b[1].c');
    expect(needsApply(desired, undefined)).toBe(true);
  });

  test('the hash annotation changes when a field is removed from the desired object', () => {
    const before = withHash({ metadata: { name: 'a' }, spec: { a: 1, b: 2 } }, 'example.com/hash');
    const after = withHash({ metadata: { name: 'a' }, spec: { a: 1 } }, 'example.com/hash');
    // Without the hash a removal is invisible to a subset check...
    expect(isSubset({ metadata: { name: 'a' }, spec: { a: 1 } }, before)).toBe(true);
    // ...with it, the stored object (carrying the old hash) no longer matches.
    expect(needsApply(after, before)).toBe(true);
    expect(needsApply(before, before)).toBe(false);
  });

  test('the hash and JSON equality ignore key order (the API server sorts keys)', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue()), (object) => {
        const reversed = Object.fromEntries(Object.entries(object).reverse());
        expect(objectHash(reversed)).toBe(objectHash(object));
        expect(jsonEqual(reversed, object)).toBe(true);
      }),
    );
    expect(jsonEqual({ a: 1 }, { a: 1, b: 2 })).toBe(false);
  });
});

describe('TokenBucket', () => {
  test('lets a burst through at once, then paces requests at the rate', async () => {
    const bucket = new TokenBucket(50, 5);
    const started = performance.now();
    for (let i = 0; i < 5; i++) await bucket.take();
    const burst = performance.now() - started;
    for (let i = 0; i < 5; i++) await bucket.take();
    const paced = performance.now() - started - burst;
    // Five more tokens at 50/s take about 100 ms; the burst took next to nothing.
    expect(paced).toBeGreaterThanOrEqual(80);
    expect(burst).toBeLessThan(paced);
  });

  test('refuses a meaningless configuration', () => {
    expect(() => new TokenBucket(0, 1)).toThrow('rate limit needs qps > 0 and burst >= 1 (got qps 0, burst 1)');
  });
});

describe('WorkQueue', () => {
  const run = (queue: WorkQueue, handler: (key: string) => Promise<unknown>) => {
    const controller = new AbortController();
    const done = queue.run(async (key) => {
      await handler(key);
    }, controller.signal);
    return {
      stop: async () => {
        controller.abort();
        await done;
      },
    };
  };
  const until = async (condition: () => boolean) => {
    for (let i = 0; i < 500 && !condition(); i++) await sleep(5);
    expect(condition()).toBe(true);
  };
  /** A handler that takes 20 ms and counts the runs started, running at once (and the most so), and finished. */
  const timedReconcile = () => {
    const counts = { started: 0, active: 0, maxActive: 0, finished: 0 };
    const reconcile = async () => {
      counts.started++;
      counts.active++;
      counts.maxActive = Math.max(counts.maxActive, counts.active);
      await sleep(20);
      counts.active--;
      counts.finished++;
    };
    return { counts, reconcile };
  };

  test('traces each run of the handler in one span: its name and attributes, the failures so far, an error status for a failure', async () => {
    const exporter = new InMemorySpanExporter();
    const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
    trace.setGlobalTracerProvider(provider);
    try {
      const span = (key: string, failures: number) => ({ name: 'reconcile Thing', attributes: { key, failures } });
      const queue = new WorkQueue({ name: 'test', concurrency: 1, backoff: { baseMs: 1, maxMs: 1 }, span });
      let fail = true;
      const running = run(queue, async () => {
        if (fail) {
          fail = false;
          throw new Error('the API server is busy');
        }
      });
      queue.add('ns/a');
      await until(() => exporter.getFinishedSpans().length === 2);
      await running.stop();
      const waited = { 'test.queue_wait_ms': expect.any(Number) };
      expect(exporter.getFinishedSpans().map((s) => [s.name, s.attributes, s.status])).toEqual([
        [
          'reconcile Thing',
          { key: 'ns/a', failures: 0, ...waited },
          { code: SpanStatusCode.ERROR, message: 'the API server is busy' },
        ],
        ['reconcile Thing', { key: 'ns/a', failures: 1, ...waited }, { code: SpanStatusCode.UNSET }],
      ]);
    } finally {
      trace.disable();
      await provider.shutdown();
    }
  });

  test("a span's links come from a traceparent annotation when well formed; anything else gives none", async () => {
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    const exporter = new InMemorySpanExporter();
    const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
    trace.setGlobalTracerProvider(provider);
    try {
      const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
      const spanId = '00f067aa0ba902b7';
      expect(traceparentLink(`00-${traceId}-${spanId}-01`)).toEqual([
        { context: { traceId, spanId, traceFlags: 1, isRemote: true } },
      ]);
      for (const bad of [undefined, '', 'hello', `00-${'0'.repeat(32)}-${spanId}-01`, `00-${traceId}-${spanId}`])
        expect(traceparentLink(bad)).toBeUndefined();
      const span = () => ({
        name: 'reconcile Thing',
        attributes: {},
        links: traceparentLink(`00-${traceId}-${spanId}-00`),
      });
      const queue = new WorkQueue({ name: 'test', concurrency: 1, span });
      const running = run(queue, async () => undefined);
      queue.add('ns/a');
      await until(() => exporter.getFinishedSpans().length === 1);
      await running.stop();
      expect(exporter.getFinishedSpans()[0].links.map((l) => l.context)).toEqual([
        { traceId, spanId, traceFlags: 0, isRemote: true },
      ]);
    } finally {
      trace.disable();
      propagation.disable();
      await provider.shutdown();
    }
  });

  test('serves new and changed keys before resyncs; a resynced key added as a change moves up', async () => {
    const queue = new WorkQueue({ name: 'test', concurrency: 1 });
    for (const key of ['ns/r1', 'ns/r2', 'ns/r3']) queue.add(key, 'low');
    queue.add('ns/new');
    queue.add('ns/r3');
    queue.add('ns/new', 'low');
    expect(queue.length).toBe(4);
    const seen: string[] = [];
    const worker = run(queue, async (key) => seen.push(key));
    await until(() => seen.length === 4);
    await worker.stop();
    expect(seen).toEqual(['ns/new', 'ns/r3', 'ns/r1', 'ns/r2']);
  });

  test('deduplicates a key added while it waits', async () => {
    const queue = new WorkQueue({ name: 'test' });
    for (let i = 0; i < 5; i++) queue.add('ns/a');
    queue.add('ns/b');
    expect(queue.length).toBe(2);
    const seen: string[] = [];
    const worker = run(queue, async (key) => seen.push(key));
    await until(() => seen.length === 2);
    await worker.stop();
    expect(seen).toEqual(['ns/a', 'ns/b']);
  });

  test('never runs one key twice at once; a key added while processing runs again afterwards', async () => {
    const queue = new WorkQueue({ name: 'test', concurrency: 4 });
    const { counts, reconcile } = timedReconcile();
    const worker = run(queue, reconcile);
    queue.add('ns/a');
    await until(() => counts.active === 1);
    queue.add('ns/a');
    queue.add('ns/a');
    await until(() => counts.started === 2 && counts.active === 0);
    await sleep(30);
    await worker.stop();
    expect(counts.maxActive).toBe(1);
    expect(counts.started).toBe(2);
  });

  test('processes different keys concurrently, up to the configured concurrency', async () => {
    const queue = new WorkQueue({ name: 'test', concurrency: 3 });
    const { counts, reconcile } = timedReconcile();
    const worker = run(queue, reconcile);
    for (let i = 0; i < 9; i++) queue.add(`ns/${i}`);
    await until(() => counts.finished === 9);
    await worker.stop();
    expect(counts.maxActive).toBe(3);
  });

  test('retries a failing key with growing backoff, and forgets its failures after a success', async () => {
    const metrics = new OperatorMetrics({ processMetrics: false });
    const queue = new WorkQueue({ name: 'test', backoff: { baseMs: 10, maxMs: 1000 }, metrics });
    const attempts: number[] = [];
    const worker = run(queue, async () => {
      attempts.push(performance.now());
      if (attempts.length < 4) throw new Error('transient');
    });
    queue.add('ns/a');
    await until(() => attempts.length === 4);
    await worker.stop();
    const gaps = attempts.slice(1).map((t, i) => t - attempts[i]);
    // 10, 20, 40 ms: each wait at least its backoff.
    expect(gaps[0]).toBeGreaterThanOrEqual(9);
    expect(gaps[1]).toBeGreaterThanOrEqual(19);
    expect(gaps[2]).toBeGreaterThanOrEqual(39);
    expect(queue.failuresOf('ns/a')).toBe(0);
    expect((await metrics.registry.getSingleMetricAsString('workqueue_retries_total')).trim().split('\n').pop()).toBe(
      'workqueue_retries_total{name="test"} 3',
    );
  });

  test('a TerminalError (or an error caused by one) is not retried: logged once at error level, counted, its failures forgotten; a new add runs it again', async () => {
    const metrics = new OperatorMetrics({ processMetrics: false });
    const lines: Array<{ level: string; msg: string }> = [];
    const log = (level: string) => (_: unknown, msg: string) => lines.push({ level, msg });
    const logger = { error: log('error'), warn: log('warn'), debug: log('debug') } as never;
    const queue = new WorkQueue({ name: 'website', backoff: { baseMs: 1, maxMs: 1 }, metrics, logger });
    let runs = 0;
    const worker = run(queue, async () => {
      runs++;
      if (runs === 1) throw new Error('transient');
      throw new Error('could not create', { cause: new TerminalError('taken by someone else') });
    });
    queue.add('ns/a');
    await until(() => runs === 2);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(runs).toBe(2);
    expect(queue.failuresOf('ns/a')).toBe(0);
    queue.add('ns/a');
    await until(() => runs === 3);
    await worker.stop();
    const failed = 'reconcile failed and retrying cannot help; waiting for a change';
    expect(lines.filter((l) => l.msg !== 'reconciled')).toEqual([
      { level: 'warn', msg: 'reconcile failed, retrying with backoff' },
      { level: 'error', msg: failed },
      // The same terminal error again: once at error level is enough.
      { level: 'debug', msg: failed },
    ]);
    expect(
      (await metrics.registry.getSingleMetricAsString('controller_runtime_terminal_reconcile_errors_total'))
        .trim()
        .split('\n')
        .pop(),
    ).toBe('controller_runtime_terminal_reconcile_errors_total{controller="website"} 2');
    expect(
      (await metrics.registry.getSingleMetricAsString('controller_runtime_reconcile_errors_total'))
        .trim()
        .split('\n')
        .pop(),
    ).toBe('controller_runtime_reconcile_errors_total{controller="website"} 3');
    expect((await metrics.registry.getSingleMetricAsString('workqueue_retries_total')).trim().split('\n').pop()).toBe(
      'workqueue_retries_total{name="website"} 1',
    );
  });

  test('an immediate add does not wait for a pending backoff', async () => {
    const queue = new WorkQueue({ name: 'test', backoff: { baseMs: 60_000, maxMs: 60_000 } });
    let runs = 0;
    const worker = run(queue, async () => {
      runs++;
      if (runs === 1) throw new Error('fails once');
    });
    queue.add('ns/a');
    await until(() => runs === 1);
    await sleep(10);
    queue.add('ns/a');
    await until(() => runs === 2);
    await worker.stop();
  });

  test('stopping lets the key in flight finish and runs nothing new', async () => {
    const queue = new WorkQueue({ name: 'test', concurrency: 1 });
    const finished: string[] = [];
    const worker = run(queue, async (key) => {
      await sleep(30);
      finished.push(key);
    });
    queue.add('ns/a');
    queue.add('ns/b');
    await sleep(5);
    await worker.stop();
    expect(finished).toEqual(['ns/a']);
    expect(queue.length).toBe(1);
  });
});
