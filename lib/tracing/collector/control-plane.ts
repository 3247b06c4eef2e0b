import type { ComponentId, PipelineConfig, ProcessorConfig } from '../collector-config.ts';
import { CollectorSampling, pathAlternatives, tailSampling } from './processors.ts';

/**
 * OTTL span conditions matching the API server's handling of a probe of one of `paths` and of its
 * checks (/readyz/etcd): its server span, whatever its depth. The API server's root span is its
 * authentication filter's, which records no path, and its loopback client calls itself (a client
 * span, then the server span under it), so the applications' rule (a root span with the path)
 * would keep every probe.
 */
export function controlPlaneProbeConditions(paths: readonly string[]): string[] {
  const path = `^/(${pathAlternatives(paths)})(/[^/]*)?$`;
  return [
    `kind == SPAN_KIND_SERVER and IsMatch(attributes["url.path"], "${path}")`,
    `kind == SPAN_KIND_SERVER and IsMatch(attributes["http.target"], "${path.slice(0, -1)}(\\\\?.*)?$")`,
  ];
}

/**
 * The `service.name`s the Kubernetes control plane reports its spans under: the API server
 * (`apiserver`, fixed), etcd (`--distributed-tracing-service-name`, `etcd` by default) and the
 * kubelet (`kubelet`, fixed). kube-controller-manager and kube-scheduler do not trace (1.36).
 */
export const CONTROL_PLANE_SERVICES = ['apiserver', 'etcd', 'kubelet'] as const;

/** CollectorControlPlane's defaults. */
const DEFAULT_PERCENTAGE = 10;
const DEFAULT_LATENCY_THRESHOLD_MS = 1000;

/**
 * Traces of the Kubernetes control plane (the API server's requests, etcd's, the kubelet's), which
 * arrive on the same OTLP receivers as the applications' but are sampled apart: an API server
 * tracing at its own rate sends a span for every request (watches, leases, probes), and these
 * must neither crowd out the applications' traces nor be decided by the applications' sampling.
 */
export interface CollectorControlPlane {
  /** The `service.name`s that are the control plane's. @default CONTROL_PLANE_SERVICES */
  readonly services?: string[];
  /**
   * Which control-plane traces are kept, decided per trace once it completes: every trace with an
   * error, every trace slower than `latencyThresholdMs`, and this percentage of the rest. Probes
   * of the API server's /livez, /readyz and /healthz are dropped (the collector's `healthCheckPaths`).
   * @default 10
   */
  readonly percentage?: number;
  /** @default 1000: the API server's own latency objective for a mutating request */
  readonly latencyThresholdMs?: number;
}

/** The control-plane pipeline's processors and the filter the other pipelines add to drop its spans. */
export interface ControlPlanePipeline {
  readonly processors: Record<ComponentId, ProcessorConfig>;
  readonly pipeline: PipelineConfig;
}

/** In the control-plane pipeline: drops every span that is not the control plane's. */
export const CONTROL_PLANE_FILTER = 'filter/control-plane';
/** In every other pipeline: drops the control plane's spans. */
export const APPLICATIONS_FILTER = 'filter/applications';
export const CONTROL_PLANE_TAIL_SAMPLING = 'tail_sampling/control-plane';

/** Throws at the first setting the pipeline could not run with, naming it. */
export function assertValidControlPlane(controlPlane: CollectorControlPlane, where: string): void {
  const services = controlPlane.services ?? CONTROL_PLANE_SERVICES;
  if (services.length === 0 || services.some((s) => s.trim() === ''))
    throw new Error(`${where}: controlPlane.services must name at least one service, none empty`);
  const percentage = controlPlane.percentage ?? DEFAULT_PERCENTAGE;
  if (!(percentage >= 0 && percentage <= 100))
    throw new Error(`${where}: controlPlane.percentage is ${percentage}; give a percentage between 0 and 100`);
  const threshold = controlPlane.latencyThresholdMs ?? DEFAULT_LATENCY_THRESHOLD_MS;
  if (!(Number.isInteger(threshold) && threshold > 0))
    throw new Error(`${where}: controlPlane.latencyThresholdMs is ${threshold}; give a whole number of ms above 0`);
}

/**
 * The pipeline `traces/control-plane`: from the OTLP receiver, the control plane's spans only,
 * through memory_limiter, its own tail sampling and batch, to `exporters`.
 */
export function controlPlanePipeline(
  controlPlane: CollectorControlPlane,
  healthCheckPaths: readonly string[],
  exporters: readonly ComponentId[],
): ControlPlanePipeline {
  const services = controlPlane.services ?? CONTROL_PLANE_SERVICES;
  const isControlPlane = `(${services.map((s) => `resource.attributes["service.name"] == ${JSON.stringify(s)}`).join(' or ')})`;
  // Whole traces, as the applications' tail sampling decides them: a slow request's etcd spans with
  // it. Keeping every one needs no tail rules, and is decided a second after the root span arrives.
  const percentage = controlPlane.percentage ?? DEFAULT_PERCENTAGE;
  const latencyThresholdMs = controlPlane.latencyThresholdMs ?? DEFAULT_LATENCY_THRESHOLD_MS;
  const tail = tailSampling(
    (percentage >= 100 ? CollectorSampling.always() : CollectorSampling.tail({ percentage, latencyThresholdMs }))
      ._settings,
    healthCheckPaths,
    controlPlaneProbeConditions,
  );
  return {
    processors: {
      [CONTROL_PLANE_FILTER]: { error_mode: 'ignore', traces: { span: [`not ${isControlPlane}`] } },
      [APPLICATIONS_FILTER]: { error_mode: 'ignore', traces: { span: [isControlPlane] } },
      ...(tail ? { [CONTROL_PLANE_TAIL_SAMPLING]: tail } : {}),
    },
    pipeline: {
      receivers: ['otlp'],
      processors: ['memory_limiter', CONTROL_PLANE_FILTER, ...(tail ? [CONTROL_PLANE_TAIL_SAMPLING] : []), 'batch'],
      exporters: [...exporters],
    },
  };
}
