import type { KubeObject } from '../controller/kube-api.ts';
import { metaTime } from '../controller/time.ts';
import type { WebsiteCondition, WebsiteStatus, WebsiteV1 } from '../library.ts';

/** Reasons of the Ready condition, as `kubectl get website -o yaml` shows them. */
export const READY_REASONS = {
  available: 'Available',
  progressing: 'Progressing',
  failed: 'ReconcileFailed',
  // With a Gateway (website.ts): the Gateway has not yet accepted the Website's route, or refuses
  // it; the route is withheld, its host not allowed or held by another Website.
  routePending: 'RoutePending',
  routeNotAccepted: 'RouteNotAccepted',
  hostNotAllowed: 'HostNotAllowed',
  hostConflict: 'HostConflict',
} as const;

interface DeploymentStatus {
  observedGeneration?: number;
  replicas?: number;
  availableReplicas?: number;
  updatedReplicas?: number;
}

/**
 * The Ready condition from the Deployment: True once it has rolled out the current template and
 * `spec.replicas` pods are available.
 */
export function readyCondition(
  website: WebsiteV1,
  deployment: KubeObject | undefined,
): Omit<WebsiteCondition, 'lastTransitionTime'> {
  const wanted = website.spec.replicas;
  const status = (deployment?.status ?? {}) as DeploymentStatus;
  const available = status.availableReplicas ?? 0;
  const rolledOut =
    (status.observedGeneration ?? 0) >= (deployment?.metadata?.generation ?? 1) &&
    (status.updatedReplicas ?? 0) >= wanted;
  const ready = available >= wanted && rolledOut;
  return {
    type: 'Ready',
    status: ready ? 'True' : 'False',
    observedGeneration: website.metadata.generation,
    reason: ready ? READY_REASONS.available : READY_REASONS.progressing,
    // The rollout is named only when it is what keeps an available Deployment from Ready (old
    // pods serving an older spec): a new Deployment's progress through its own status fields
    // would otherwise cost a status write per step.
    message: `${available}/${wanted} replicas available${!ready && available >= wanted ? ', rolling out the current spec' : ''}`,
  };
}

/** The Ready condition of a failed reconcile, carrying the API's message. */
export function failedCondition(website: WebsiteV1, message: string): Omit<WebsiteCondition, 'lastTransitionTime'> {
  return {
    type: 'Ready',
    status: 'False',
    observedGeneration: website.metadata.generation,
    reason: READY_REASONS.failed,
    message,
  };
}

/** Ready=False for the Website's route: pending, refused by the Gateway, or withheld. */
export function routeCondition(
  website: WebsiteV1,
  reason: string,
  message: string,
): Omit<WebsiteCondition, 'lastTransitionTime'> {
  return { type: 'Ready', status: 'False', observedGeneration: website.metadata.generation, reason, message };
}

/**
 * The status to write: `condition` replaces the Ready condition (keeping its lastTransitionTime
 * when the status value did not flip, as metav1.Condition requires); other conditions stay.
 */
export function nextStatus(
  website: WebsiteV1,
  fields: Omit<WebsiteStatus, 'conditions'>,
  condition: Omit<WebsiteCondition, 'lastTransitionTime'>,
  now = new Date(),
): WebsiteStatus {
  const conditions = website.status?.conditions ?? [];
  const previous = conditions.find((c) => c.type === condition.type);
  const lastTransitionTime =
    previous && previous.status === condition.status ? previous.lastTransitionTime : metaTime(now);
  return {
    ...website.status,
    ...fields,
    conditions: [...conditions.filter((c) => c.type !== condition.type), { ...condition, lastTransitionTime }],
  };
}
