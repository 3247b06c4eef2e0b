import { ApiObject } from 'cdk8s';
import type { IConstruct } from 'constructs';
import { DEFAULT_GROUP } from './website/schema.ts';

/** The annotation Argo CD orders a sync by. */
export const SYNC_WAVE_ANNOTATION = 'argocd.argoproj.io/sync-wave';
/** The annotation carrying per-object Argo CD sync options. */
export const SYNC_OPTIONS_ANNOTATION = 'argocd.argoproj.io/sync-options';

export interface SyncOptions {
  /**
   * Argo CD sync wave: lower waves are applied, and healthy, before higher ones. A function picks
   * the wave object by object (for example workloads after their configuration).
   */
  readonly wave: number | ((object: ApiObject) => number);
  /**
   * Argo CD sync options, for example `SkipDryRunOnMissingResource=true` for custom resources
   * whose CRD is created in an earlier wave of the same sync.
   * @default none
   */
  readonly syncOptions?: readonly string[];
}

/** Annotates every object under `scope` so Argo CD applies it in `wave` (CRD, then operator, then samples). */
export function argoSync(scope: IConstruct, options: SyncOptions): void {
  for (const child of scope.node.findAll()) {
    if (!(child instanceof ApiObject)) continue;
    const wave = typeof options.wave === 'function' ? options.wave(child) : options.wave;
    child.metadata.addAnnotation(SYNC_WAVE_ANNOTATION, String(wave));
    if (options.syncOptions?.length) {
      child.metadata.addAnnotation(SYNC_OPTIONS_ANNOTATION, options.syncOptions.join(','));
    }
  }
}

/**
 * Makes a sync wave mandatory under `scope`: synth (`app.synth()`) fails, naming each object,
 * when an object under it carries no `argocd.argoproj.io/sync-wave` annotation, so a chart added
 * without `argoSync` cannot reach dist/.
 */
export function requireSyncWaves(scope: IConstruct): void {
  scope.node.addValidation({
    validate: () =>
      scope.node
        .findAll()
        .filter((c): c is ApiObject => c instanceof ApiObject)
        .filter(
          (o) =>
            (o.toJson() as { metadata?: { annotations?: Record<string, string> } }).metadata?.annotations?.[
              SYNC_WAVE_ANNOTATION
            ] === undefined,
        )
        .map(
          (o) =>
            `${o.kind} '${o.name}' (${o.node.path}) has no ${SYNC_WAVE_ANNOTATION} annotation: call argoSync on its chart`,
        ),
  });
}

/**
 * Argo CD's health check of a Website, in Lua, for `argocd-cm` (Argo CD cannot judge a custom
 * resource's health by itself, and without a check counts every Website Healthy at once):
 * - Healthy: Ready is True for the current generation;
 * - Degraded: what only a person can fix, with the operator's message: the last reconcile failed
 *   (Ready False, reason ReconcileFailed; for example a child's name owned by someone else), or,
 *   with the operator's Gateway, the Website's route is refused by the Gateway (RouteNotAccepted),
 *   its host held by another Website (HostConflict) or not allowed (HostNotAllowed);
 * - Progressing: no status yet, an older generation observed, replicas still coming up, or the
 *   Gateway yet to accept the route (RoutePending).
 * The shell operator writes no status, so under it Websites stay Progressing.
 */
export const WEBSITE_HEALTH_LUA = `hs = {}
local generation = obj.metadata.generation
local ready = nil
if obj.status ~= nil and obj.status.conditions ~= nil then
  for _, condition in ipairs(obj.status.conditions) do
    if condition.type == "Ready" then
      ready = condition
    end
  end
end
if ready == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for the operator to report the Website's status"
  return hs
end
if generation ~= nil and ready.observedGeneration ~= nil and ready.observedGeneration < generation then
  hs.status = "Progressing"
  hs.message = "Waiting for the operator to observe generation " .. generation
  return hs
end
if ready.status == "True" then
  hs.status = "Healthy"
elseif ready.reason == "ReconcileFailed" or ready.reason == "RouteNotAccepted" or ready.reason == "HostConflict" or ready.reason == "HostNotAllowed" then
  hs.status = "Degraded"
else
  hs.status = "Progressing"
end
hs.message = ready.message
return hs
`;

/**
 * The `argocd-cm` data that gives Argo CD the Website health check (`WEBSITE_HEALTH_LUA`) for the
 * Websites of `group`: merge it into the `argocd-cm` ConfigMap of Argo CD's namespace.
 */
export function websiteHealthCheck(group: string = DEFAULT_GROUP): Record<string, string> {
  return { [`resource.customizations.health.${group}_Website`]: WEBSITE_HEALTH_LUA };
}
