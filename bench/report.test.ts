// The benchmark's pure parts: percentiles, histograms, request counts from the audit log, the churn's
// rate search, formatting, the markdown tables and latest.json. (Its figures are measured by
// `npm run bench`, never asserted here.)

import type { AuditEvent } from '../harness/cluster/audit.ts';
import { parseHistogram } from '../harness/process/metrics.ts';
import {
  type ChurnStep,
  countRequests,
  type FigureRecord,
  formatRatio,
  formatRecord,
  formatValue,
  fractionWithin,
  histogramDelta,
  histogramQuantile,
  latencySummary,
  markdownTable,
  median,
  percentile,
  phaseTables,
  ratio,
  requestsPerWebsite,
  resultsJson,
  stepHeld,
  sustainedRate,
} from './report.ts';

describe('percentile', () => {
  test('nearest rank, whatever the input order', () => {
    const values = [5, 1, 4, 2, 3, 10, 9, 8, 7, 6];
    expect(percentile(values, 50)).toBe(5);
    expect(percentile(values, 90)).toBe(9);
    expect(percentile(values, 99)).toBe(10);
    expect(percentile(values, 100)).toBe(10);
    expect(percentile(values, 0)).toBe(1);
    expect(values[0]).toBe(5); // the input is not sorted in place
  });

  test('p99 of 100 values is the 99th, of 1000 the 990th; of 20 the largest', () => {
    const hundred = Array.from({ length: 100 }, (_, i) => i + 1);
    const thousand = Array.from({ length: 1000 }, (_, i) => i + 1);
    expect(percentile(hundred, 99)).toBe(99);
    expect(percentile(thousand, 99)).toBe(990);
    expect(percentile(thousand, 50)).toBe(500);
    expect(
      percentile(
        Array.from({ length: 20 }, (_, i) => i + 1),
        99,
      ),
    ).toBe(20);
  });

  test('one value is every percentile; none is NaN', () => {
    expect(percentile([42], 1)).toBe(42);
    expect(percentile([42], 99)).toBe(42);
    expect(percentile([], 50)).toBeNaN();
    expect(median([3, 1, 2])).toBe(2);
  });

  test('a latency summary is p50, p99 and the largest value', () => {
    expect(latencySummary([3, 1, 2, 10])).toEqual({ p50: 2, p99: 10, max: 10 });
  });
});

describe('histograms (the queue wait)', () => {
  const scrape = (counts: [string, number][], extra = '') =>
    [
      '# TYPE workqueue_queue_duration_seconds histogram',
      ...counts.map(([le, c]) => `workqueue_queue_duration_seconds_bucket{le="${le}",name="website"} ${c}`),
      `workqueue_queue_duration_seconds_sum{name="website"} 12.5`,
      `workqueue_queue_duration_seconds_count{name="website"} ${counts.at(-1)![1]}`,
      'workqueue_queue_duration_seconds_bucket{le="1",name="other"} 1000',
      'workqueue_queue_duration_seconds_bucket{le="+Inf",name="other"} 1000',
      extra,
    ].join('\n');

  // Cumulative counts of the website queue's buckets at one reading.
  const reading: [string, number][] = [
    ['0.1', 50],
    ['1', 90],
    ['+Inf', 100],
  ];
  const websiteQueue = (counts: [string, number][]) =>
    parseHistogram(scrape(counts), 'workqueue_queue_duration_seconds', { name: 'website' });

  test('reads the buckets of the selected queue only, in order, +Inf last', () => {
    const h = websiteQueue(reading);
    expect(h).toEqual({
      buckets: [
        [0.1, 50],
        [1, 90],
        [Number.POSITIVE_INFINITY, 100],
      ],
      count: 100,
      sum: 12.5,
    });
    // Without labels, queues add up (controller-runtime labels by controller name too).
    expect(parseHistogram(scrape(reading), 'workqueue_queue_duration_seconds').buckets.at(-1)).toEqual([
      Number.POSITIVE_INFINITY,
      1100,
    ]);
  });

  test("quantiles interpolate within the bucket, as Prometheus's histogram_quantile does", () => {
    const h = websiteQueue(reading);
    expect(histogramQuantile(h, 0.5)).toBeCloseTo(0.1);
    expect(histogramQuantile(h, 0.7)).toBeCloseTo(0.1 + 0.9 * (20 / 40));
    // Falling in +Inf: the largest finite bound, as Prometheus answers.
    expect(histogramQuantile(h, 0.99)).toBe(1);
    expect(fractionWithin(h, 1)).toBe(0.9);
    expect(
      histogramQuantile(
        {
          buckets: [
            [1, 0],
            [Number.POSITIVE_INFINITY, 0],
          ],
          count: 0,
          sum: 0,
        },
        0.99,
      ),
    ).toBeNaN();
  });

  test('what a step observed is the difference of two readings', () => {
    const before = websiteQueue(reading);
    const after = websiteQueue([
      ['0.1', 1040],
      ['1', 1089],
      ['+Inf', 1100],
    ]);
    const step = histogramDelta(before, after);
    expect(step.buckets).toEqual([
      [0.1, 990],
      [1, 999],
      [Number.POSITIVE_INFINITY, 1000],
    ]);
    expect(step.count).toBe(1000);
    expect(fractionWithin(step, 1)).toBe(0.999);
    expect(histogramQuantile(step, 0.99)).toBeCloseTo(0.1);
  });

  test('the 1 s bound must be one of the buckets, as exactly as exponential buckets print it', () => {
    expect(
      fractionWithin(
        {
          buckets: [
            [0.09999999999999999, 3],
            [0.9999999999999999, 9],
            [Number.POSITIVE_INFINITY, 10],
          ],
          count: 10,
          sum: 2,
        },
        1,
      ),
    ).toBe(0.9);
    const h = {
      buckets: [
        [0.5, 1],
        [2, 2],
        [Number.POSITIVE_INFINITY, 2],
      ] as const,
      count: 2,
      sum: 1,
    };
    expect(() => fractionWithin(h, 1)).toThrow('the histogram has no bucket le="1" (its bounds: 0.5, 2, Infinity)');
  });
});

describe('API requests from the audit log', () => {
  const event = (verb: string, resource: string, code = 200, stage = 'ResponseComplete'): AuditEvent => ({
    stage,
    verb,
    objectRef: { resource },
    responseStatus: { code },
  });

  test('writes, GETs answering 404, other GETs, Events, and the background (leases, lists, watches)', () => {
    const counts = countRequests([
      event('patch', 'websites'),
      event('patch', 'deployments'),
      event('create', 'services', 201),
      event('update', 'websites'),
      event('get', 'deployments', 404),
      event('get', 'services', 404),
      event('get', 'websites'),
      event('create', 'events', 201),
      event('patch', 'events'),
      event('update', 'leases'),
      event('get', 'leases'),
      event('list', 'websites'),
      event('watch', 'deployments'),
      event('get', 'deployments', 404, 'ResponseStarted'),
    ]);
    expect(counts).toEqual({ writes: 4, notFoundGets: 2, gets: 1, events: 2, background: 4 });
    expect(requestsPerWebsite(counts)).toBe(9);
  });
});

describe('the churn rate search', () => {
  const step = (rate: number, within1s: number, sentRate = rate): ChurnStep => ({
    rate,
    sentRate,
    failed: 0,
    waitP99Seconds: within1s >= 0.99 ? 0.2 : 3,
    within1s,
  });

  test('a step holds when 99 % of queue waits are within 1 s', () => {
    expect(stepHeld(step(10, 0.99))).toBe(true);
    expect(stepHeld(step(10, 0.989))).toBe(false);
    // Without a 1 s bucket, the interpolated p99 decides; nothing observed proves nothing.
    expect(stepHeld({ ...step(10, Number.NaN), waitP99Seconds: 0.8 })).toBe(true);
    expect(stepHeld({ ...step(10, Number.NaN), waitP99Seconds: 1.2 })).toBe(false);
    expect(stepHeld({ ...step(10, Number.NaN), waitP99Seconds: Number.NaN })).toBe(false);
  });

  test('the sustained rate is the rate sent in the last step before the first that failed', () => {
    expect(sustainedRate([step(2, 1, 2), step(8, 0.995, 7.8), step(32, 0.5, 30)])).toBe(7.8);
    expect(sustainedRate([step(2, 1), step(8, 1), step(32, 1, 31.5)])).toBe(31.5);
    expect(sustainedRate([step(2, 0.9), step(8, 1)])).toBe(0);
    expect(sustainedRate([])).toBe(0);
  });
});

describe('formatting', () => {
  test('durations switch from ms to s, with about three significant digits', () => {
    expect(formatValue(0.1834, 'ms')).toBe('0.18 ms');
    expect(formatValue(28.24, 'ms')).toBe('28.2 ms');
    expect(formatValue(105.4, 'ms')).toBe('105 ms');
    expect(formatValue(2310, 'ms')).toBe('2.31 s');
    expect(formatValue(187_400, 'ms')).toBe('187.4 s');
    expect(formatValue(181.2, 'us')).toBe('181 µs');
    expect(formatValue(19.63, 'us')).toBe('19.6 µs');
    expect(formatValue(12_500, 'us')).toBe('12.5 ms');
  });

  test('bytes in MiB or KiB, counts with thin thousands', () => {
    expect(formatValue(199.1 * 2 ** 20, 'bytes')).toBe('199.1 MiB');
    expect(formatValue(232_858, 'bytes')).toBe('227.4 KiB');
    expect(formatValue(9400, 'count')).toBe('9 400');
    expect(formatValue(0, 'count')).toBe('0');
    expect(formatValue(2.5, 'count')).toBe('2.5');
    expect(formatValue(Number.NaN, 'ms')).toBe('n/a');
  });

  test('ratios: zero, small, large, and no usable baseline', () => {
    expect(formatRatio(0, 100)).toBe('0×');
    expect(formatRatio(199, 194.6)).toBe('1.02×');
    expect(formatRatio(2310, 105)).toBe('22×');
    expect(formatRatio(47.3, 0.18)).toBe('263×');
    expect(formatRatio(120_000, 10)).toBe('12 000×');
    expect(formatRatio(1, 1000)).toBe('0.001×');
    expect(formatRatio(5, 0)).toBe('n/a');
    expect(formatRatio(5, Number.NaN)).toBe('n/a');
  });

  test('a cell is the value, then its ratio to the baseline and the baseline, then the detail', () => {
    const record: FigureRecord = {
      subject: 's',
      phase: 'burst',
      n: 1,
      figure: 'f',
      label: 'f',
      unit: 'ms',
      value: 2310,
      baseline: 105,
    };
    expect(formatRecord(record)).toBe('2.31 s (22× of 105 ms)');
    expect(formatRecord({ ...record, unit: 'count', value: 0, baseline: 100, detail: 'writes 0' })).toBe(
      '0 (0× of 100; writes 0)',
    );
    expect(formatRecord({ ...record, unit: 'per_s', value: 7.84, baseline: 31.5 })).toBe('7.8/s (0.25× of 32/s)');
    expect(formatRecord({ ...record, unit: 'count', value: 40, baseline: undefined })).toBe('40');
    expect(formatRecord(undefined)).toBe('–');
  });
});

describe('the report: markdown tables and latest.json', () => {
  test('a markdown table: header, separator and rows; pipes in cells are escaped; a short row is refused', () => {
    expect(markdownTable(['a', 'b'], [['1', 'x | y']])).toBe('| a | b |\n| --- | --- |\n| 1 | x \\| y |');
    expect(() => markdownTable(['a', 'b'], [['1']])).toThrow('a table row has 1 cells, the header 2');
  });

  const records: FigureRecord[] = [
    {
      subject: 'website-operator',
      phase: 'idle',
      n: 0,
      figure: 'rssIdle',
      label: 'RSS, idle (no Website)',
      unit: 'bytes',
      value: 100 * 2 ** 20,
      baseline: 50 * 2 ** 20,
      baselineLabel: 'an idle Node process',
    },
    {
      subject: 'website-operator',
      phase: 'burst',
      n: 10,
      figure: 'createToDeploymentP99',
      label: 'create → Deployment seen, p99',
      unit: 'ms',
      value: 300,
      baseline: 100,
      baselineLabel: 'echo controller, p99',
    },
    {
      subject: 'website-operator',
      phase: 'burst',
      n: 100,
      figure: 'createToDeploymentP99',
      label: 'create → Deployment seen, p99',
      unit: 'ms',
      value: 900,
      baseline: 150,
      baselineLabel: 'echo controller, p99',
    },
    {
      subject: 'website-operator',
      phase: 'burst',
      n: 100,
      figure: 'notFoundGetsPerWebsite',
      label: '… of which GETs answering 404 (goal 0)',
      unit: 'count',
      value: 0,
    },
    {
      subject: 'kro',
      phase: 'burst',
      n: 100,
      figure: 'createToDeploymentP99',
      label: 'create → Deployment seen, p99',
      unit: 'ms',
      value: 1500,
      baseline: 150,
      baselineLabel: 'echo controller, p99',
    },
    {
      subject: 'kro',
      phase: 'churn',
      n: 100,
      figure: 'sustainedChangesPerSecond',
      label: 'changes/s sustained with queue wait p99 < 1 s',
      unit: 'per_s',
      value: 8,
      baseline: 32,
      baselineLabel: 'echo controller, same churn',
    },
  ];

  test('one table per phase, in phase order; a column per subject and N; a figure a subject lacks stays empty', () => {
    const text = phaseTables(records);
    const headings = text.split('\n').filter((l) => l.startsWith('### '));
    expect(headings).toEqual([
      '### Idle (no Website), and per Website',
      '### Burst: N Websites created at once',
      '### Sustained churn: creates, edits and deletes at stepped rates',
    ]);
    const burst = text
      .split('### Burst')[1]
      .split('\n')
      .filter((l) => l.startsWith('|'));
    expect(burst[0]).toBe(
      '| figure | baseline (same run) | website-operator, N=10 | website-operator, N=100 | kro, N=100 |',
    );
    expect(burst[2]).toBe(
      '| create → Deployment seen, p99 | echo controller, p99 | 300 ms (3.00× of 100 ms) | 900 ms (6.00× of 150 ms) | 1.50 s (10× of 150 ms) |',
    );
    expect(burst[3]).toBe('| … of which GETs answering 404 (goal 0) | – | – | 0 | – |');
    expect(text).toContain(
      '| changes/s sustained with queue wait p99 < 1 s | echo controller, same churn | 8.0/s (0.25× of 32/s) |',
    );
  });

  test('latest.json: schema version, meta, and every record with its ratio (null without a usable baseline or value)', () => {
    const json = JSON.parse(
      resultsJson(
        { date: '2026-11-23T19:00:00.000Z', durationMinutes: 9.5, machine: { cpus: 2 }, settings: { quick: true } },
        [
          ...records,
          {
            subject: 'kro',
            phase: 'steady',
            n: 100,
            figure: 'createToDeploymentP99',
            label: 'p99',
            unit: 'ms',
            value: Number.NaN,
            baseline: 10,
          },
        ],
      ),
    );
    expect(json).toMatchObject({
      schemaVersion: 1,
      date: '2026-11-23T19:00:00.000Z',
      durationMinutes: 9.5,
      machine: { cpus: 2 },
      settings: { quick: true },
    });
    expect(json.figures).toHaveLength(records.length + 1);
    expect(json.figures[1]).toEqual({ ...records[1], ratio: 3 });
    expect(json.figures[3].ratio).toBeNull();
    expect(json.figures.at(-1)).toMatchObject({ value: null, ratio: null });
    expect(ratio(records[5])).toBe(0.25);
  });
});
