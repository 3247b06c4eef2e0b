// The benchmark's pure parts: percentiles, formatting, the table, and reading Prometheus text.
// (Its figures are measured by `npm run bench`, never asserted here.)
import {
  type Baselines,
  type OperatorRun,
  ROWS,
  counterDelta,
  figuresTable,
  formatCell,
  formatRatio,
  formatValue,
  markdownTable,
  latencySummary,
  median,
  operatorColumn,
  parseSeries,
  percentile,
  seriesLabels,
} from '../../bench/report.ts';
import { type ShellOperatorBenchResult, shellOperatorRun } from '../../bench/shell-operator.ts';
import { reconcileWrites, sumMetric } from '../../scripts/operator-process.ts';

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

  test('p99 of 100 values is the 99th, of 1000 the 990th', () => {
    const hundred = Array.from({ length: 100 }, (_, i) => i + 1);
    const thousand = Array.from({ length: 1000 }, (_, i) => i + 1);
    expect(percentile(hundred, 99)).toBe(99);
    expect(percentile(thousand, 99)).toBe(990);
    expect(percentile(thousand, 50)).toBe(500);
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
    expect(formatCell({ value: 2310, unit: 'ms', baseline: 105 })).toBe('2.31 s (22× of 105 ms)');
    expect(formatCell({ value: 0, unit: 'count', baseline: 100, detail: 'over 10.3 s' })).toBe('0 (0× of 100; over 10.3 s)');
    expect(formatCell({ value: 40, unit: 'count' })).toBe('40');
    expect(formatCell(undefined)).toBe('–');
  });
});

describe('markdown tables', () => {
  test('header, separator and rows; pipes in cells are escaped', () => {
    expect(markdownTable(['a', 'b'], [['1', 'x | y']])).toBe('| a | b |\n| --- | --- |\n| 1 | x \\| y |');
  });

  test('a row with the wrong number of cells is refused', () => {
    expect(() => markdownTable(['a', 'b'], [['1']])).toThrow('a table row has 1 cells, the header 2');
  });

  const baselines: Baselines = {
    n: 4,
    echoLatencyMs: latencySummary([100, 110, 120, 130]),
    echoAllChildrenMs: 200,
    directAllAvailableMs: 1000,
    renderUs: 200,
  };
  const run: OperatorRun = {
    title: 'website-operator QPS 200/400',
    n: 4,
    latencyMs: latencySummary([400, 300, 200, 1300]),
    allDeploymentsMs: 1500,
    allReadyMs: 3000,
    createWrites: 28,
    restartWrites: 0,
    idle: { writes: 0, reconciles: 8, windowMs: 10_300, resyncSeconds: 5 },
    rss: { zero: 100 * 2 ** 20, afterCreate: 101 * 2 ** 20, idle: 100.5 * 2 ** 20 },
    cpuMsPerWebsite: 2,
    diagnostics: ['create: 7.00 API requests per Website'],
  };

  test('one column per run: every figure against its baseline', () => {
    const column = operatorColumn(run, baselines);
    expect(column.title).toBe('website-operator QPS 200/400, N=4');
    expect(column.figures.p50).toEqual({ value: 300, unit: 'ms', baseline: 110 });
    expect(column.figures.p99).toEqual({ value: 1300, unit: 'ms', baseline: 130 });
    expect(column.figures.max).toEqual({ value: 1300, unit: 'ms', baseline: 130 });
    expect(column.figures.allReady).toEqual({ value: 3000, unit: 'ms', baseline: 1000 });
    expect(column.figures.idleWrites).toMatchObject({ value: 0, baseline: 28 });
    expect(column.figures.idleReconciles).toMatchObject({ value: 8, baseline: 4 });
    expect(formatCell(column.figures.rssCreate)).toBe('101.0 MiB (1.01× of 100.0 MiB; +256.0 KiB per Website)');
    expect(column.figures.cpu).toEqual({ value: 2, unit: 'ms', baseline: 0.2 });
    expect(column.diagnostics).toEqual(run.diagnostics);
  });

  test('RSS below the baseline (V8 collected since) shows a negative change per Website', () => {
    const column = operatorColumn({ ...run, rss: { zero: 100 * 2 ** 20, afterCreate: 99 * 2 ** 20 } }, baselines);
    expect(formatCell(column.figures.rssCreate)).toBe('99.0 MiB (0.99× of 100.0 MiB; −256.0 KiB per Website)');
    expect(column.figures.rssIdle).toBeUndefined();
  });

  const shell: ShellOperatorBenchResult = {
    operator: 'shell',
    n: 4,
    intervalSeconds: 10,
    latencyMs: { p50: 2000, p90: 3500, p99: 4000, max: 4000 },
    allDeploymentsMs: 4000,
    requestsPerCycle: 9,
    requestsPerCycleByKind: { 'LIST websites': 1, 'APPLY deployments': 4, 'APPLY services': 4, other: 0 },
    cycleMs: [1450, 1520],
  };

  test("the shell operator's column: latencies, all Deployments and requests per cycle, the rest below the table", () => {
    const shellRun = shellOperatorRun(shell);
    expect(shellRun).toMatchObject({ title: 'shell operator (10 s interval)', n: 4, latencyMs: { p50: 2000, p99: 4000, max: 4000 }, allDeploymentsMs: 4000, requestsPerCycle: 9 });
    expect(shellRun.diagnostics).toEqual([
      'Websites created in 10 batches across one 10 s interval; latency from a watch seeing the Website (not from its create sent) to a watch seeing its Deployment',
      'create → Deployment p90: 3.50 s',
      'API requests per steady-state cycle, by kind: LIST websites 1, APPLY deployments 4, APPLY services 4, other 0',
      'steady-state cycles: 1.45 s, 1.52 s, each followed by the 10 s sleep',
    ]);
    expect(operatorColumn(shellRun, baselines).figures.requestsPerCycle).toEqual({ value: 9, unit: 'count', baseline: 4 });
  });

  test('a figure a run does not report leaves its cell empty', () => {
    const table = figuresTable(ROWS, [operatorColumn(run, baselines), operatorColumn(shellOperatorRun(shell), baselines)]);
    const lines = table.split('\n');
    expect(lines[0]).toBe('| figure | baseline (same run) | website-operator QPS 200/400, N=4 | shell operator (10 s interval), N=4 |');
    expect(lines).toHaveLength(2 + ROWS.length);
    expect(lines.find((l) => l.startsWith('| create → Deployment seen, p50 |'))).toBe(
      '| create → Deployment seen, p50 | echo controller, p50 | 300 ms (2.73× of 110 ms) | 2.00 s (18× of 110 ms) |',
    );
    expect(lines.find((l) => l.startsWith('| API writes during idle resync'))).toMatch(/\| 0 \(0× of 28; over 10\.3 s, resync every 5 s\) \| – \|$/);
    expect(lines.find((l) => l.startsWith('| API requests per cycle'))).toBe('| API requests per cycle, steady state | N | – | 9 (2.25× of 4) |');
    expect(lines.filter((l) => l.endsWith(' | – |'))).toHaveLength(ROWS.length - 5);
  });
});

describe('Prometheus text', () => {
  const text = [
    '# HELP rest_client_requests_total API server requests',
    '# TYPE rest_client_requests_total counter',
    'rest_client_requests_total{verb="APPLY",resource="deployments",code="200"} 100',
    'rest_client_requests_total{verb="PATCH",resource="websites",code="200"} 300',
    'rest_client_requests_total{verb="PATCH",resource="websites",code="409"} 2',
    'rest_client_requests_total{verb="UPDATE",resource="leases",code="200"} 50',
    'rest_client_requests_total{verb="CREATE",resource="events",code="201"} 200',
    'rest_client_requests_total{verb="GET",resource="deployments",code="404"} 100',
    'process_cpu_seconds_total 12.5',
    'controller_runtime_reconcile_total{controller="website",result="success"} 299',
  ].join('\n');

  test('sums the samples of one metric whose labels match', () => {
    expect(sumMetric(text, 'rest_client_requests_total', { verb: 'PATCH', resource: 'websites' })).toBe(302);
    expect(sumMetric(text, 'rest_client_requests_total')).toBe(752);
    expect(sumMetric(text, 'process_cpu_seconds_total')).toBe(12.5);
    expect(sumMetric(text, 'missing_total')).toBe(0);
  });

  test("reconcile writes count Websites and children, not the Lease's or events", () => {
    expect(reconcileWrites(text)).toBe(402);
  });

  test('series by full name, their labels, and the difference between two scrapes', () => {
    const before = parseSeries(text, ['rest_client_requests_total', 'process_cpu_seconds_total']);
    expect(before.get('process_cpu_seconds_total')).toBe(12.5);
    expect(before.has('controller_runtime_reconcile_total{controller="website",result="success"}')).toBe(false);
    expect(seriesLabels('rest_client_requests_total{verb="PATCH",resource="websites",code="409"}')).toEqual({ verb: 'PATCH', resource: 'websites', code: '409' });
    expect(seriesLabels('process_cpu_seconds_total')).toEqual({});
    const after = new Map(before);
    after.set('process_cpu_seconds_total', 14);
    after.set('rest_client_requests_total{verb="DELETE",resource="services",code="200"}', 1);
    expect(counterDelta(before, after)).toEqual(
      new Map([
        ['process_cpu_seconds_total', 1.5],
        ['rest_client_requests_total{verb="DELETE",resource="services",code="200"}', 1],
      ]),
    );
  });
});
