import type { k8s } from 'cdk8s-plus-34';

/** UID/GID of the unprivileged user the package's containers run as (distroless "nonroot"). */
export const NONROOT_UID = 65532;

/** Pod-level settings Pod Security `restricted` requires: non-root and the runtime's seccomp profile. */
export function restrictedPodSecurityContext(uid: number = NONROOT_UID): k8s.PodSecurityContext {
  return {
    runAsNonRoot: true,
    runAsUser: uid,
    runAsGroup: uid,
    fsGroup: uid,
    seccompProfile: { type: 'RuntimeDefault' },
  };
}

/** Container-level settings Pod Security `restricted` requires, plus a read-only root filesystem. */
export function restrictedContainerSecurityContext(): k8s.SecurityContext {
  return {
    allowPrivilegeEscalation: false,
    readOnlyRootFilesystem: true,
    runAsNonRoot: true,
    capabilities: { drop: ['ALL'] },
  };
}

/** Namespace labels that make the API server enforce Pod Security `restricted`. */
export const RESTRICTED_NAMESPACE_LABELS: Record<string, string> = {
  'pod-security.kubernetes.io/enforce': 'restricted',
  'pod-security.kubernetes.io/audit': 'restricted',
  'pod-security.kubernetes.io/warn': 'restricted',
};
