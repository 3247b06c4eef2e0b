// The benchmark's arithmetic and its markdown: pure functions, unit-tested (bench/report.test.ts).
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AuditEvent } from '../harness/cluster/audit.ts';
import type { Histogram } from '../harness/process/metrics.ts';

/** Nearest-rank percentile (p in 0..100) of `values`, in any order; NaN when there are none. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

/** Middle value (the lower of the two middle ones for an even count); NaN when there are none. */
export function median(values: readonly number[]): number {
  return percentile(values, 50);
}

/** The percentiles the table shows of a latency distribution (ms). */
export interface LatencySummary {
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
}

export function latencySummary(values: readonly number[]): LatencySummary {
  return { p50: percentile(values, 50), p99: percentile(values, 99), max: percentile(values, 100) };
}

export type Unit = 'ms' | 'us' | 'bytes' | 'count';

function thousands(integer: number): string {
  return Math.round(integer)
    .toString()
    .replace(/\B(?=(\d{3})+(?!\d))/g, ' ');
}

/** A number in its unit, with about three significant digits. */
export function formatValue(value: number, unit: Unit): string {
  if (!Number.isFinite(value)) return 'n/a';
  switch (unit) {
    case 'ms':
      if (Math.abs(value) >= 10_000) return `${(value / 1000).toFixed(1)} s`;
      if (Math.abs(value) >= 1000) return `${(value / 1000).toFixed(2)} s`;
      if (Math.abs(value) >= 100) return `${value.toFixed(0)} ms`;
      if (Math.abs(value) >= 10) return `${value.toFixed(1)} ms`;
      return `${value.toFixed(2)} ms`;
    case 'us':
      if (Math.abs(value) >= 10_000) return formatValue(value / 1000, 'ms');
      return Math.abs(value) >= 100 ? `${value.toFixed(0)} µs` : `${value.toFixed(1)} µs`;
    case 'bytes': {
      const mib = value / (1 << 20);
      if (Math.abs(mib) >= 1) return `${mib.toFixed(1)} MiB`;
      return `${(value / 1024).toFixed(1)} KiB`;
    }
    case 'count':
      return Number.isInteger(value) ? thousands(value) : value.toFixed(1);
  }
}

/** value / baseline, e.g. "3.4×"; "n/a" without a usable baseline. */
export function formatRatio(value: number, baseline: number): string {
  if (!Number.isFinite(value) || !Number.isFinite(baseline) || baseline === 0) return 'n/a';
  const ratio = value / baseline;
  if (ratio === 0) return '0×';
  if (Math.abs(ratio) >= 100) return `${thousands(ratio)}×`;
  if (Math.abs(ratio) >= 10) return `${ratio.toFixed(0)}×`;
  if (Math.abs(ratio) >= 0.01) return `${ratio.toFixed(2)}×`;
  return `${ratio.toPrecision(1)}×`;
}

const escapeCell = (text: string) => text.replace(/\|/g, '\\|').replace(/\n/g, ' ');

/** A markdown table; `header` and every row have the same number of cells. */
export function markdownTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  for (const row of rows) {
    if (row.length !== header.length)
      throw new Error(`a table row has ${row.length} cells, the header ${header.length}: ${row.join(' | ')}`);
  }
  const line = (cells: readonly string[]) => `| ${cells.map(escapeCell).join(' | ')} |`;
  return [line(header), line(header.map(() => '---')), ...rows.map(line)].join('\n');
}

// ---------------------------------------------------------------------------------------------
// Histograms, request counts, rate search, and the report as records (markdown and JSON).

/** What was observed between two readings of the same histogram. */
export function histogramDelta(before: Histogram, after: Histogram): Histogram {
  const earlier = new Map(before.buckets);
  return {
    buckets: after.buckets.map(([le, count]) => [le, count - (earlier.get(le) ?? 0)] as const),
    count: after.count - before.count,
    sum: after.sum - before.sum,
  };
}

/**
 * The q-quantile (0..1) as Prometheus's histogram_quantile estimates it: linear within the bucket
 * that holds it; the largest finite bound when it falls in +Inf; NaN with no observations.
 */
export function histogramQuantile(histogram: Histogram, q: number): number {
  const total = histogram.buckets.at(-1)?.[1] ?? 0;
  if (total <= 0) return Number.NaN;
  const rank = q * total;
  let lowerBound = 0;
  let lowerCount = 0;
  for (const [le, count] of histogram.buckets) {
    if (count >= rank) {
      if (le === Number.POSITIVE_INFINITY) return lowerBound;
      if (count === lowerCount) return le;
      return lowerBound + ((le - lowerBound) * (rank - lowerCount)) / (count - lowerCount);
    }
    lowerBound = le;
    lowerCount = count;
  }
  return lowerBound;
}

/**
 * Share of observations at or under `bound`, which must be one of the buckets' bounds (to within
 * floating-point noise: client_golang's exponential buckets print 1 s as 0.9999999999999999 or
 * similar); NaN with none.
 */
export function fractionWithin(histogram: Histogram, bound: number): number {
  const total = histogram.buckets.at(-1)?.[1] ?? 0;
  if (total <= 0) return Number.NaN;
  const bucket = histogram.buckets.find(([le]) => Math.abs(le - bound) <= Math.abs(bound) * 1e-9);
  if (!bucket)
    throw new Error(
      `the histogram has no bucket le="${bound}" (its bounds: ${histogram.buckets.map(([le]) => le).join(', ')})`,
    );
  return bucket[1] / total;
}

/** One API request as the API server's audit log records it (the fields the benchmark reads). */
/** A controller's API requests, split the way the goals are stated. */
export interface RequestCounts {
  /** Writes (create, update, patch, delete) of anything but Events and Leases: the work itself. */
  readonly writes: number;
  /** GETs answered 404: asking for what an informer cache could have said is absent. */
  readonly notFoundGets: number;
  /** Other single-object reads. */
  readonly gets: number;
  /** Events, of either API group. */
  readonly events: number;
  /** Leases (leader election), lists and watches: time-driven, not per Website. */
  readonly background: number;
}

const WRITES = new Set(['create', 'update', 'patch', 'delete', 'deletecollection']);

/** Counts `events` (completed requests only) into RequestCounts. */
export function countRequests(events: readonly AuditEvent[]): RequestCounts {
  const counts = { writes: 0, notFoundGets: 0, gets: 0, events: 0, background: 0 };
  for (const event of events) {
    if (event.stage !== undefined && event.stage !== 'ResponseComplete') continue;
    const resource = event.objectRef?.resource;
    if (resource === 'events') counts.events += 1;
    else if (resource === 'leases' || event.verb === 'list' || event.verb === 'watch') counts.background += 1;
    else if (WRITES.has(event.verb)) counts.writes += 1;
    else if (event.verb === 'get' && event.responseStatus?.code === 404) counts.notFoundGets += 1;
    else counts.gets += 1;
  }
  return counts;
}

/** Requests on the way from a new Website to Ready: everything but the background ones. */
export function requestsPerWebsite(counts: RequestCounts): number {
  return counts.writes + counts.notFoundGets + counts.gets + counts.events;
}

/** One step of the churn: a rate tried for a while, and what the controller's queue showed. */
export interface ChurnStep {
  /** Changes per second asked for. */
  readonly rate: number;
  /** Changes per second the benchmark managed to send (answered 2xx). */
  readonly sentRate: number;
  /** Changes the API server refused (conflicts, a Website already gone, ...). */
  readonly failed: number;
  /** Queue wait p99 over the step and its drain (seconds), from the histogram. */
  readonly waitP99Seconds: number;
  /** Share of queue waits of at most 1 s; NaN when the histogram has no 1 s bucket (or nothing was observed). */
  readonly within1s: number;
}

/**
 * Whether a step held the goal: at least 99 % of queue waits within 1 s (so p99 < 1 s); for a
 * histogram without a 1 s bucket, its interpolated p99 under 1 s. Nothing observed holds nothing.
 */
export function stepHeld(step: ChurnStep): boolean {
  if (Number.isFinite(step.within1s)) return step.within1s >= 0.99;
  return Number.isFinite(step.waitP99Seconds) && step.waitP99Seconds < 1;
}

/**
 * The sustained rate of a stepped churn: the rate sent in the last step that held before the
 * first one that did not (steps run in rising order and stop at the first failure); 0 if none held.
 */
export function sustainedRate(steps: readonly ChurnStep[]): number {
  let best = 0;
  for (const step of steps) {
    if (!stepHeld(step)) break;
    best = step.sentRate;
  }
  return best;
}

/** The phases of a run, in the report's order. */
export const PHASES = ['idle', 'burst', 'steady', 'churn', 'memory'] as const;
export type Phase = (typeof PHASES)[number];

/**
 * One measured figure of one subject in one phase, with the baseline it is divided by: a row of
 * bench/results/latest.json and a cell of latest.md. Stable: fields are only ever added.
 */
export interface FigureRecord {
  /** e.g. "website-operator", "kro v0.9.4", "shell operator (10 s interval)". */
  readonly subject: string;
  readonly phase: Phase;
  /** Websites present or created in the phase (burst: N; steady and churn: the standing population; memory: N). */
  readonly n: number;
  /** Stable key, e.g. "createToDeploymentP99". */
  readonly figure: string;
  /** What it is, for people. */
  readonly label: string;
  readonly unit: Unit | 'per_s';
  readonly value: number;
  /** Same unit as `value`. */
  readonly baseline?: number;
  readonly baselineLabel?: string;
  readonly detail?: string;
}

/** value / baseline, or null without a usable one. */
export function ratio(record: FigureRecord): number | null {
  const { value, baseline } = record;
  if (baseline === undefined || !Number.isFinite(value) || !Number.isFinite(baseline) || baseline === 0) return null;
  return value / baseline;
}

function formatRecordValue(value: number, unit: FigureRecord['unit']): string {
  if (unit === 'per_s')
    return Number.isFinite(value) ? `${value >= 10 ? value.toFixed(0) : value.toFixed(1)}/s` : 'n/a';
  return formatValue(value, unit);
}

/** "value (ratio× of baseline; detail)". */
export function formatRecord(record: FigureRecord | undefined): string {
  if (!record) return '–';
  const parts: string[] = [];
  if (record.baseline !== undefined)
    parts.push(`${formatRatio(record.value, record.baseline)} of ${formatRecordValue(record.baseline, record.unit)}`);
  if (record.detail) parts.push(record.detail);
  const value = formatRecordValue(record.value, record.unit);
  return parts.length ? `${value} (${parts.join('; ')})` : value;
}

/**
 * One markdown table per phase: a row per figure (with its baseline's label), a column per
 * subject and N; a figure a subject does not report stays empty.
 */
export function phaseTables(records: readonly FigureRecord[]): string {
  const sections: string[] = [];
  for (const phase of PHASES) {
    const ofPhase = records.filter((r) => r.phase === phase);
    if (!ofPhase.length) continue;
    const columns = [
      ...new Map(ofPhase.map((r) => [`${r.subject}\u0000${r.n}`, { subject: r.subject, n: r.n }])).values(),
    ];
    const figures = [...new Map(ofPhase.map((r) => [r.figure, r])).values()];
    const cell = (figure: string, column: { subject: string; n: number }) =>
      formatRecord(ofPhase.find((r) => r.figure === figure && r.subject === column.subject && r.n === column.n));
    sections.push(
      `### ${PHASE_TITLES[phase]}`,
      '',
      markdownTable(
        ['figure', 'baseline (same run)', ...columns.map((c) => `${c.subject}, N=${c.n}`)],
        figures.map((f) => [f.label, f.baselineLabel ?? '–', ...columns.map((c) => cell(f.figure, c))]),
      ),
      '',
    );
  }
  return sections.join('\n');
}

const PHASE_TITLES: Record<Phase, string> = {
  idle: 'Idle (no Website), and per Website',
  burst: 'Burst: N Websites created at once',
  steady: 'Steady state: Websites present, then creates one at a time',
  churn: 'Sustained churn: creates, edits and deletes at stepped rates',
  memory: 'Memory: holding N Websites and their children',
};

/** What bench/results/latest.json holds (docs/measure/benchmarks.md, "latest.json", documents it). */
export interface ResultsJson {
  /** Bumped only if a field changes meaning or goes away. */
  readonly schemaVersion: 1;
  readonly date: string;
  readonly durationMinutes: number;
  readonly machine: Readonly<Record<string, string | number>>;
  readonly settings: Readonly<Record<string, unknown>>;
  readonly figures: readonly (FigureRecord & { readonly ratio: number | null })[];
}

/** The records as latest.json: each with its ratio; non-finite numbers become null (JSON has none). */
export function resultsJson(
  meta: Omit<ResultsJson, 'schemaVersion' | 'figures'>,
  records: readonly FigureRecord[],
): string {
  const json: ResultsJson = { schemaVersion: 1, ...meta, figures: records.map((r) => ({ ...r, ratio: ratio(r) })) };
  return `${JSON.stringify(json, (_key, value) => (typeof value === 'number' && !Number.isFinite(value) ? null : value), 2)}\n`;
}

/** Where `npm run bench` and `npm run chaos` write their reports: pages of docs/measure, committed. */
export const RESULTS_PAGES = fileURLToPath(new URL('../docs/measure/results/', import.meta.url));

/**
 * Writes a report as the page `docs/measure/results/<page>.md`, headed by the command that wrote
 * it, so that the figures docs/ shows are a run's own output and never pasted by hand.
 */
export async function writeResultsPage(page: string, command: string, report: string): Promise<string> {
  await mkdir(RESULTS_PAGES, { recursive: true });
  const file = join(RESULTS_PAGES, `${page}.md`);
  const header = `<!-- Written by \`${command}\`; run it again to update this page, never edit it by hand. -->`;
  await writeFile(file, `${header}\n\n${report}\n`);
  return file;
}

/** How this process was started, as a reader would type it: `npm run bench -- --quick`. */
export function npmCommand(script: string): string {
  const args = process.argv.slice(2);
  return `npm run ${script}${args.length ? ` -- ${args.join(' ')}` : ''}`;
}
