import { ApiObject } from 'cdk8s';
import type { IConstruct } from 'constructs';

export interface SyncOptions {
  /** Argo CD sync wave: lower waves are applied, and healthy, before higher ones. */
  readonly wave: number;
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
    child.metadata.addAnnotation('argocd.argoproj.io/sync-wave', String(options.wave));
    if (options.syncOptions?.length) {
      child.metadata.addAnnotation('argocd.argoproj.io/sync-options', options.syncOptions.join(','));
    }
  }
}
