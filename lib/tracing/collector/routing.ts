import type { ComponentId, FilterConfig, PipelineConfig } from '../collector-config.ts';
import { type CollectorBackend, exporterId } from './exporters.ts';

/**
 * Multi-backend routing by a resource attribute (`tenant`, `deployment.environment`, ...): spans
 * whose attribute equals a route's value go to that route's backends, all others to the default
 * backends. Built as one pipeline per destination, each dropping what is not its own.
 */
export interface CollectorRouting {
  readonly attribute: string;
  readonly routes: CollectorRoute[];
  readonly defaultBackends: string[];
}

/** Spans whose routing attribute equals `value` go to `backends` (names of the collector's backends). */
export interface CollectorRoute {
  readonly value: string;
  readonly backends: string[];
}

/** Routed backends in pipeline order: each route's, then the defaults, once each. */
const routedBackends = (routing: CollectorRouting) => [
  ...new Set([...routing.routes.flatMap((route) => route.backends), ...routing.defaultBackends]),
];

/** Throws when a route's value repeats or routing names a backend that is not among `backends`. */
export function assertValidRouting(
  routing: CollectorRouting,
  backends: readonly CollectorBackend[],
  where: string,
): void {
  const values = routing.routes.map((r) => r.value);
  if (new Set(values).size !== values.length)
    throw new Error(`${where}: routing lists a value of '${routing.attribute}' twice`);
  const names = backends.map((b) => b.name);
  const unknown = routedBackends(routing).find((name) => !names.includes(name));
  if (unknown !== undefined)
    throw new Error(
      `${where}: routing names backend '${unknown}', which is not among the backends (${names.join(', ')})`,
    );
}

/** The traces pipelines, and the filter processors routing adds to them. */
export interface TracePipelines {
  readonly filters: Record<ComponentId, FilterConfig>;
  readonly pipelines: Record<string, PipelineConfig>;
}

/**
 * Without routing, one pipeline from the OTLP receiver through `chain` to every backend. With it,
 * one pipeline per routed backend, its filter right after memory_limiter dropping every span that
 * is not the backend's: a route value of its own, or (for a default backend) a value no route claims.
 */
export function tracePipelines(
  backends: readonly CollectorBackend[],
  chain: readonly ComponentId[],
  routing?: CollectorRouting,
): TracePipelines {
  if (!routing)
    return {
      filters: {},
      pipelines: { traces: { receivers: ['otlp'], processors: [...chain], exporters: backends.map(exporterId) } },
    };
  const key = JSON.stringify(routing.attribute);
  const equals = (value: string) => `resource.attributes[${key}] == ${JSON.stringify(value)}`;
  const unclaimed = `(resource.attributes[${key}] == nil or not (${routing.routes.map((r) => equals(r.value)).join(' or ') || 'false'}))`;
  const filters: Record<ComponentId, FilterConfig> = {};
  const pipelines: Record<string, PipelineConfig> = {};
  for (const name of routedBackends(routing)) {
    const keep = [
      ...routing.routes.filter((route) => route.backends.includes(name)).map((route) => equals(route.value)),
      ...(routing.defaultBackends.includes(name) ? [unclaimed] : []),
    ];
    const filter = `filter/route-${name}`;
    filters[filter] = { error_mode: 'ignore', traces: { span: [`not (${keep.join(' or ')})`] } };
    const routed = [...chain];
    routed.splice(routed.indexOf('memory_limiter') + 1, 0, filter);
    // assertValidRouting refuses a name no backend has.
    pipelines[`traces/${name}`] = {
      receivers: ['otlp'],
      processors: routed,
      exporters: backends.filter((b) => b.name === name).map(exporterId),
    };
  }
  return { filters, pipelines };
}
