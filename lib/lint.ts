// Findings of kube-linter and Polaris that an object keeps on purpose, written on the object itself
// with each tool's own ignore annotation, and the reason beside it (test/unit/linters.test.ts
// fails on a finding that is neither fixed nor exempted this way).

/** A check of kube-linter or Polaris that an object fails on purpose, and why. */
export interface LintExemption {
  /** kube-linter's check name (docs/generated/checks.md), e.g. `env-var-secret`. */
  readonly kubeLinter?: string;
  /** Polaris's check ID (pkg/config/default.yaml), e.g. `sensitiveContainerEnvVar`. */
  readonly polaris?: string;
  /** Why the object keeps the finding: one sentence a reviewer can check. */
  readonly reason: string;
}

/** kube-linter skips `<check>` on an object carrying this annotation; its value is free text: the reason. */
export const KUBE_LINTER_IGNORE_PREFIX = 'ignore-check.kube-linter.io/';
/** Polaris skips `<check>` on an object whose `polaris.fairwinds.com/<check>-exempt` is "true" (nothing else). */
export const POLARIS_EXEMPT = (check: string): string => `polaris.fairwinds.com/${check}-exempt`;
/** Polaris's annotation takes only "true": the reason goes into this one, beside it. */
export const POLARIS_EXEMPT_REASON = (check: string): string => `website-stack.dev/polaris-${check}-exempt-reason`;

/** The annotations that exempt an object from `exemptions`, each with its reason. */
export function lintAnnotations(exemptions: readonly LintExemption[]): Record<string, string> {
  const annotations: Record<string, string> = {};
  for (const { kubeLinter, polaris, reason } of exemptions) {
    if (!kubeLinter && !polaris) throw new Error(`a lint exemption names no check (reason: '${reason}')`);
    if (reason.trim() === '') throw new Error(`the lint exemption of ${kubeLinter ?? polaris} gives no reason`);
    if (kubeLinter) annotations[`${KUBE_LINTER_IGNORE_PREFIX}${kubeLinter}`] = reason;
    if (polaris) {
      annotations[POLARIS_EXEMPT(polaris)] = 'true';
      annotations[POLARIS_EXEMPT_REASON(polaris)] = reason;
    }
  }
  return annotations;
}

/**
 * Exemptions every workload of this package shares, for choices made once for all of them:
 * - no CPU limit: CPU is shared by request, and a CFS quota would throttle bursts (a reconcile
 *   burst, a batch of spans) while protecting nobody;
 * - no priority class: PriorityClasses are cluster-wide and the cluster's own; none is assumed
 *   to exist, and a pod naming a missing one is refused;
 * - image pull policy IfNotPresent: every image is pinned to a release tag (or a digest), so a
 *   pull on every start would fetch the same image again, and a registry outage would stop pods
 *   from starting.
 */
export const WORKLOAD_LINT_EXEMPTIONS: readonly LintExemption[] = [
  {
    polaris: 'cpuLimitsMissing',
    reason:
      'No CPU limit on purpose: CPU is shared by request, and a CFS quota would throttle bursts while protecting nobody.',
  },
  {
    polaris: 'priorityClassNotSet',
    reason:
      "PriorityClasses are the cluster's own: none is assumed to exist, and a pod naming a missing one is refused.",
  },
  {
    polaris: 'pullPolicyNotAlways',
    reason:
      'Images are pinned to release tags: pulling on every start fetches the same image again and ties pod starts to the registry.',
  },
];

/**
 * Exemptions of a workload that runs exactly one pod: nothing to spread over nodes or zones, and a
 * disruption budget for one pod could only block every node drain (minAvailable 1) or allow
 * everything (maxUnavailable 1).
 */
export function singlePodLintExemptions(why: string): LintExemption[] {
  return [
    { polaris: 'deploymentMissingReplicas', reason: why },
    { polaris: 'topologySpreadConstraint', reason: 'One pod: there is nothing to spread over nodes or zones.' },
    {
      polaris: 'missingPodDisruptionBudget',
      reason: 'One pod: a disruption budget could only block every node drain or allow everything.',
    },
  ];
}
