// What one benchmark run is sized by, the baselines every subject is measured against, and where
// a subject's figures go.
import { type WebsiteSpec, websiteColor } from '../../harness/cluster/website.ts';
import type { PeerContext } from '../peer.ts';
import type { ChurnStep, FigureRecord, LatencySummary } from '../report.ts';

/** The sizes of one run (bench/run.ts picks them; --quick makes them smaller). */
export interface Plan {
  /** Burst sizes, ascending; the largest is also the standing population of steady state and churn. */
  readonly ns: readonly number[];
  /** Creates, one at a time, over the standing population. */
  readonly steadyCreates: number;
  /** Churn rates tried in rising order (changes per second), each for `stepSeconds`. */
  readonly churnRates: readonly number[];
  readonly stepSeconds: number;
  /** Websites held for the memory figure; without it, the largest burst's N. */
  readonly memoryN?: number;
  readonly replicas: number;
}

/** The baselines measured once per run, shared by every subject. */
export interface RunBaselines {
  /** By N: the echo controller's burst, and N rendered Deployments created directly. */
  readonly burst: ReadonlyMap<number, { readonly echo: EchoBurst; readonly directAllAvailableMs: number }>;
  /** The echo controller over the standing population. */
  readonly steady: LatencySummary;
  readonly churn: readonly ChurnStep[];
  /** An idle Node process (`setInterval`), bytes. */
  readonly idleNodeRss: number;
  /** renderWorkload per Website, µs. */
  readonly renderUs: number;
}

export interface EchoBurst {
  readonly latencyMs: LatencySummary;
  readonly allChildrenMs: number;
  /** API requests the echo controller made per source. */
  readonly requestsPerSource: number;
}

/** The spec of the i-th Website of a run: title, replicas and colour all vary. */
export function specFor(i: number, replicas: number): WebsiteSpec {
  return { title: `Website ${i}`, replicas, color: websiteColor(i) };
}

/**
 * Where a subject puts its figures and notes as it goes: what it measured before a failure is
 * still reported.
 */
export interface SubjectOutput {
  readonly records: FigureRecord[];
  readonly diagnostics: string[];
}

export interface PeerRunOptions {
  readonly plan: Plan;
  readonly baselines: RunBaselines;
  readonly context: PeerContext;
}

export function names(prefix: string, n: number): string[] {
  return Array.from({ length: n }, (_, i) => `${prefix}-${String(i).padStart(5, '0')}`);
}
