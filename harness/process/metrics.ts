// The one reader of Prometheus text exposition (the operator's, kro's, the Collector's and the API
// server's /metrics) in the tests and the benchmark.

/** One sample line: `name{labels} value`. */
export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

/** The labels of a series key (`name{labels}`). */
export function seriesLabels(series: string): Record<string, string> {
  const braces = series.indexOf('{');
  if (braces < 0) return {};
  return Object.fromEntries([...series.slice(braces).matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
}

/** The samples of a /metrics text whose name `select` accepts (comments and blank lines skipped). */
export function samples(text: string, select: (name: string) => boolean = () => true): Sample[] {
  const found: Sample[] = [];
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][\w:]*)(\{.*\})? (\S+)$/.exec(line);
    if (match && select(match[1]))
      found.push({ name: match[1], labels: seriesLabels(match[2] ?? ''), value: Number(match[3]) });
  }
  return found;
}

const includes = (own: Readonly<Record<string, string>>, labels: Readonly<Record<string, string>>) =>
  Object.entries(labels).every(([k, v]) => own[k] === v);

/** Sum of the samples of metric `name` whose labels include `labels`. */
export function sumMetric(text: string, name: string, labels: Readonly<Record<string, string>> = {}): number {
  return samples(text, (n) => n === name)
    .filter((sample) => includes(sample.labels, labels))
    .reduce((sum, sample) => sum + sample.value, 0);
}

/** Verbs that change something, as `rest_client_requests_total` labels them. */
export const WRITE_VERBS = ['CREATE', 'APPLY', 'PATCH', 'UPDATE', 'DELETE'] as const;
/** What reconciling writes: the Websites (finalizer, status) and their children. */
const RECONCILED_RESOURCES = ['websites', 'deployments', 'services'] as const;

/** API writes other than the Lease's and events, in a /metrics text: what reconciling changed. */
export function reconcileWrites(metricsText: string): number {
  let total = 0;
  for (const verb of WRITE_VERBS) {
    for (const resource of RECONCILED_RESOURCES)
      total += sumMetric(metricsText, 'rest_client_requests_total', { verb, resource });
  }
  return total;
}

/** A Prometheus histogram: cumulative counts by upper bound (`le`, ascending, ending at +Inf). */
export interface Histogram {
  readonly buckets: readonly (readonly [le: number, count: number])[];
  readonly count: number;
  readonly sum: number;
}

/** The histogram `metric` (its `_bucket`, `_count`, `_sum` series) whose labels include `labels`, summed over the other labels. */
export function parseHistogram(text: string, metric: string, labels: Readonly<Record<string, string>> = {}): Histogram {
  const buckets = new Map<number, number>();
  let count = 0;
  let sum = 0;
  for (const sample of samples(text, (name) => name.startsWith(metric))) {
    if (!includes(sample.labels, labels)) continue;
    if (sample.name === `${metric}_bucket`) {
      const le = sample.labels.le === '+Inf' ? Number.POSITIVE_INFINITY : Number(sample.labels.le);
      buckets.set(le, (buckets.get(le) ?? 0) + sample.value);
    } else if (sample.name === `${metric}_count`) count += sample.value;
    else if (sample.name === `${metric}_sum`) sum += sample.value;
  }
  return { buckets: [...buckets].sort((a, b) => a[0] - b[0]), count, sum };
}
