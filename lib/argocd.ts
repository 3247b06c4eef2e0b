import { ApiObject } from 'cdk8s';
import type { IConstruct } from 'constructs';

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
