import { ApiObject } from 'cdk8s';
import type { IConstruct } from 'constructs';
import { DEFAULT_GROUP } from './website/schema.ts';

/** What ArgoSync.apply annotates. */
export interface ArgoSyncOptions {
  /** Argo CD sync wave: lower waves are applied, and healthy, before higher ones. */
  readonly wave: number;
  /**
   * Only objects of these kinds (for example workloads after their configuration, by calling
   * apply once per wave).
   * @default every object under the scope
   */
  readonly kinds?: string[];
  /**
   * Argo CD sync options, for example `SkipDryRunOnMissingResource=true` for custom resources
   * whose CRD is created in an earlier wave of the same sync.
   * @default none
   */
  readonly syncOptions?: string[];
}

/** Argo CD's ordering of a sync, and its health check of a Website. */
export class ArgoSync {
  /** The annotation Argo CD orders a sync by. */
  public static readonly WAVE_ANNOTATION = 'argocd.argoproj.io/sync-wave';
  /** The annotation carrying per-object Argo CD sync options. */
  public static readonly OPTIONS_ANNOTATION = 'argocd.argoproj.io/sync-options';
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
  public static readonly WEBSITE_HEALTH_LUA: string = `hs = {}
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
   * Annotates every object under `scope` (of `kinds`, when given) so that Argo CD applies it in
   * `wave`: the CRD, then the operator, then Websites. A later call overrides an earlier one's
   * wave, object by object.
   */
  public static apply(scope: IConstruct, options: ArgoSyncOptions): void {
    for (const child of scope.node.findAll()) {
      if (!(child instanceof ApiObject)) continue;
      if (options.kinds && !options.kinds.includes(child.kind)) continue;
      child.metadata.addAnnotation(ArgoSync.WAVE_ANNOTATION, String(options.wave));
      if (options.syncOptions?.length) {
        child.metadata.addAnnotation(ArgoSync.OPTIONS_ANNOTATION, options.syncOptions.join(','));
      }
    }
  }

  /**
   * Makes a sync wave mandatory under `scope`: synth (`app.synth()`) fails, naming each object,
   * when an object under it carries no `argocd.argoproj.io/sync-wave` annotation, so a chart added
   * without `ArgoSync.apply` cannot reach dist/.
   */
  public static requireWaves(scope: IConstruct): void {
    scope.node.addValidation({
      validate: () =>
        scope.node
          .findAll()
          .filter((c): c is ApiObject => c instanceof ApiObject)
          .filter(
            (o) =>
              (o.toJson() as { metadata?: { annotations?: Record<string, string> } }).metadata?.annotations?.[
                ArgoSync.WAVE_ANNOTATION
              ] === undefined,
          )
          .map(
            (o) =>
              `${o.kind} '${o.name}' (${o.node.path}) has no ${ArgoSync.WAVE_ANNOTATION} annotation: call ArgoSync.apply on its chart`,
          ),
    });
  }

  /**
   * The `argocd-cm` data that gives Argo CD the Website health check (`WEBSITE_HEALTH_LUA`) for the
   * Websites of `group`: merge it into the `argocd-cm` ConfigMap of Argo CD's namespace.
   */
  public static websiteHealthCheck(group: string = DEFAULT_GROUP): Record<string, string> {
    return { [`resource.customizations.health.${group}_Website`]: ArgoSync.WEBSITE_HEALTH_LUA };
  }

  private constructor() {}
}
