import type { ComponentId, ProcessorConfig, TailSamplingConfig, TailSamplingPolicy } from '../collector-config.ts';
import { HEALTH_CHECK_PATHS } from '../names.ts';

/**
 * Which traces the collector keeps (spec §8):
 * - `always`: every trace;
 * - `probabilistic`: head-based, `percentage` of traces by trace id (every span of a kept trace is kept);
 * - `tail`: after a trace completes: every trace with an error, every trace slower than
 *   `latencyThresholdMs`, and `percentage` of the rest. One collector must see all spans of a
 *   trace: run one replica, or put a trace-id-aware load balancer in front.
 */
export class CollectorSampling {
  /** Every trace. */
  public static always(): CollectorSampling {
    return new CollectorSampling({ mode: 'always' });
  }

  /** Head-based: `percentage` (0..100) of traces by trace id. */
  public static probabilistic(percentage: number): CollectorSampling {
    return new CollectorSampling({ mode: 'probabilistic', percentage });
  }

  /** Tail-based: every trace with an error, every slow trace, and a percentage of the rest. */
  public static tail(options: TailSamplingOptions): CollectorSampling {
    return new CollectorSampling({ mode: 'tail', ...options });
  }

  /** @internal the settings, by mode */
  public readonly _settings: SamplingSettings;

  private constructor(settings: SamplingSettings) {
    this._settings = settings;
  }

  /** `always`, `probabilistic` or `tail`. */
  public get mode(): string {
    return this._settings.mode;
  }
}

/** What CollectorSampling.tail keeps. */
export interface TailSamplingOptions {
  /** Percentage (0..100) of the traces that are neither errors nor slow. */
  readonly percentage: number;
  /** @default 1000 */
  readonly latencyThresholdMs?: number;
  /** How long after its first span a trace is decided. @default '10s' */
  readonly decisionWait?: string;
  /** Traces held while waiting; size it to decisionWait × new traces per second. @default 50000 */
  readonly numTraces?: number;
}

type SamplingSettings =
  | { readonly mode: 'always' }
  | { readonly mode: 'probabilistic'; readonly percentage: number }
  | ({ readonly mode: 'tail' } & TailSamplingOptions);

/** How the collector batches spans before exporting them. */
export interface BatchOptions {
  /** A Go duration such as 1s or 200ms. */
  readonly timeout: string;
  readonly sendBatchSize: number;
}

/** What the processors do, in the spec's words. */
export interface CollectorProcessorOptions {
  /** @default probabilistic 1 % (the spec's sample configuration) */
  readonly sampling?: CollectorSampling;
  /** @default { timeout: '1s', sendBatchSize: 1024 } */
  readonly batch?: BatchOptions;
  /**
   * Traces whose root span is a request to one of these paths are dropped whole: the root and every
   * span under it (a probe's database query too), decided per trace by tail_sampling, so the
   * collector must see every span of a trace (one replica). `[]` keeps them, and with sampling
   * other than `tail` then needs no trace-level decision.
   * @default /healthz, /readyz, /livez, /health
   */
  readonly healthCheckPaths?: string[];
  /** Share of the container's memory limit the collector may use before refusing data. @default 80 */
  readonly memoryLimitPercentage?: number;
}

/**
 * `paths` without their leading slash as alternatives of an OTTL regular expression (`a|b`),
 * regular-expression characters in them escaped, so that each matches literally.
 */
export function pathAlternatives(paths: readonly string[]): string {
  return paths.map((p) => p.replace(/^\//, '').replace(/[.*+?^${}()|[\]\\]/g, '\\\\$&')).join('|');
}

/**
 * OTTL span conditions matching the root span of a request to `paths`, under old and current HTTP
 * semantic conventions. Only the root: a health check that an ordinary request makes on its way
 * (a client span to a dependency's /healthz) leaves that request's trace alone.
 */
export function healthCheckConditions(paths: readonly string[]): string[] {
  const alternatives = pathAlternatives(paths);
  const path = `^/(${alternatives})/?$`;
  const target = `^/(${alternatives})/?(\\\\?.*)?$`;
  return [
    `IsRootSpan() and IsMatch(attributes["url.path"], "${path}")`,
    `IsRootSpan() and IsMatch(attributes["http.route"], "${path}")`,
    `IsRootSpan() and IsMatch(attributes["http.target"], "${target}")`,
  ];
}

/**
 * The tail_sampling processor, when some decision needs the whole trace: dropping health-check
 * traces (the root span's path) and the tail rules (errors, latency, a percentage of the rest).
 * Undefined when neither applies.
 */
export function tailSampling(
  sampling: SamplingSettings,
  healthCheckPaths: readonly string[],
  /** The spans that make a trace a health check's. @default its root span is a request to one of the paths */
  healthCheckSpans: (paths: readonly string[]) => string[] = healthCheckConditions,
): TailSamplingConfig | undefined {
  const policies: TailSamplingPolicy[] = [];
  if (healthCheckPaths.length > 0) {
    policies.push({
      name: 'health-checks',
      type: 'drop',
      drop: {
        drop_sub_policy: [
          {
            name: 'health-check-root',
            type: 'ottl_condition',
            ottl_condition: { error_mode: 'ignore', span: healthCheckSpans(healthCheckPaths) },
          },
        ],
      },
    });
  }
  if (sampling.mode === 'tail') {
    policies.push(
      { name: 'errors', type: 'status_code', status_code: { status_codes: ['ERROR'] } },
      { name: 'slow', type: 'latency', latency: { threshold_ms: sampling.latencyThresholdMs ?? 1000 } },
      { name: 'rest', type: 'probabilistic', probabilistic: { sampling_percentage: sampling.percentage } },
    );
  } else if (policies.length > 0) {
    policies.push({ name: 'everything-else', type: 'always_sample' });
  }
  if (policies.length === 0) return undefined;
  const numTraces = (sampling.mode === 'tail' ? sampling.numTraces : undefined) ?? 50000;
  return {
    decision_wait: (sampling.mode === 'tail' ? sampling.decisionWait : undefined) ?? '10s',
    // Without tail rules the decision needs only the root span: made a second after it arrives.
    // Tail rules look at every span (an error deep down), so they wait the whole decision_wait.
    ...(sampling.mode === 'tail' ? {} : { decision_wait_after_root_received: '1s' }),
    num_traces: numTraces,
    // A span arriving after its trace was decided (a slow service's child) follows the decision:
    // a health check's late child is dropped too, never stored as an orphan.
    decision_cache: { sampled_cache_size: 2 * numTraces, non_sampled_cache_size: 2 * numTraces },
    policies,
  };
}

/** The processors and the order a pipeline applies them in. */
export interface ProcessorChain {
  readonly processors: Record<ComponentId, ProcessorConfig>;
  readonly chain: ComponentId[];
}

/**
 * Processors in list order: protect memory, sample by trace id (head), decide on whole traces
 * (tail: health checks dropped, the tail rules), then batch what is kept.
 */
export function processorChain(options: CollectorProcessorOptions): ProcessorChain {
  const memoryLimit = options.memoryLimitPercentage ?? 80;
  const processors: Record<ComponentId, ProcessorConfig> = {
    memory_limiter: {
      check_interval: '1s',
      limit_percentage: memoryLimit,
      spike_limit_percentage: Math.max(1, Math.round(memoryLimit / 4)),
    },
    batch: { timeout: options.batch?.timeout ?? '1s', send_batch_size: options.batch?.sendBatchSize ?? 1024 },
  };
  const chain = ['memory_limiter'];
  const sampling = (options.sampling ?? CollectorSampling.probabilistic(1))._settings;
  if (sampling.mode === 'probabilistic') {
    // Before the tail buffer, so it holds only the traces this keeps.
    processors.probabilistic_sampler = { sampling_percentage: sampling.percentage, mode: 'proportional' };
    chain.push('probabilistic_sampler');
  }
  const tail = tailSampling(sampling, options.healthCheckPaths ?? HEALTH_CHECK_PATHS);
  if (tail) {
    processors.tail_sampling = tail;
    chain.push('tail_sampling');
  }
  chain.push('batch');
  return { processors, chain };
}
