// kube-linter's and Polaris's default checks on every object of dist/: each finding is fixed, or
// kept on purpose with the tool's own ignore annotation on the object and a reason.
//
// Hand-written because neither tool can be installed here: the Go module proxy refuses both
// (github.com/stackrox/kube-linter, github.com/fairwindsops/polaris), and neither is published on
// npm or PyPI. The conditions below are those of the tools' sources, for the kinds dist/ holds:
// - kube-linter: docs/generated/checks.md and internal/defaultchecks/default_checks.go (the
//   checks enabled by default), pkg/templates/* (what each flags). Two checks not enabled by
//   default are included because this package answers them: job-ttl-seconds-after-finished and
//   non-isolated-pod. kube-linter skips a check on an object annotated
//   `ignore-check.kube-linter.io/<check>` (any value: the reason).
// - Polaris: pkg/config/default.yaml (the checks and their severities) and
//   pkg/config/checks/<check>.yaml (each one's JSON schema). Polaris skips a check on an object
//   annotated `polaris.fairwinds.com/<check>-exempt: "true"`; the reason is in
//   `website-stack.dev/polaris-<check>-exempt-reason` beside it (lib/lint.ts).
// A tool lints a folder as a whole: the checks that look at other objects (a Service's pods, a
// pod's NetworkPolicy or disruption budget) look within one dist/ unit.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { KUBE_LINTER_IGNORE_PREFIX, POLARIS_EXEMPT, POLARIS_EXEMPT_REASON } from '../../lib/lint.ts';

type Manifest = Record<string, any>;
const dist = fileURLToPath(new URL('../../dist', import.meta.url));
const units = readdirSync(dist).map((unit) => ({
  unit,
  objects: readdirSync(join(dist, unit))
    .filter((f) => f.endsWith('.yaml'))
    .flatMap((f) => parseAllDocuments(readFileSync(join(dist, unit, f), 'utf8')).map((d) => d.toJS() as Manifest)),
}));

const WORKLOADS = ['Deployment', 'StatefulSet', 'DaemonSet', 'Job', 'CronJob'];
const podTemplate = (m: Manifest): Manifest | undefined =>
  m.kind === 'CronJob' ? m.spec.jobTemplate.spec.template : WORKLOADS.includes(m.kind) ? m.spec.template : undefined;
const podSpec = (m: Manifest): Manifest => podTemplate(m)!.spec;
const containers = (m: Manifest): Manifest[] => podSpec(m).containers ?? [];
const sameNamespace = (a: Manifest, b: Manifest) => (a.metadata.namespace ?? '') === (b.metadata.namespace ?? '');
/** Whether `labels` has every pair of `matchLabels` (a label selector's matchLabels part). */
const selects = (matchLabels: Record<string, string> | undefined, labels: Record<string, string> = {}) =>
  matchLabels !== undefined && Object.entries(matchLabels).every(([k, v]) => labels[k] === v);
/** One message per container failing `bad`. */
const perContainer = (bad: (c: Manifest, m: Manifest) => boolean, message: string) => (m: Manifest) =>
  containers(m)
    .filter((c) => bad(c, m))
    .map((c) => `container ${c.name}: ${message}`);
const IANA_SVC_NAME = /^(?=.{1,15}$)(?=.*[a-z])(?!.*--)[a-z0-9]([a-z0-9-]*[a-z0-9])?$/;

interface Check {
  readonly tool: 'kube-linter' | 'polaris';
  readonly name: string;
  readonly kinds: readonly string[];
  /** What the object fails; empty when it passes. */
  readonly findings: (object: Manifest, unit: readonly Manifest[]) => string[];
}

const probePort = (probe: 'livenessProbe' | 'readinessProbe' | 'startupProbe') => (m: Manifest) =>
  containers(m).flatMap((c) => {
    const port = c[probe]?.httpGet?.port ?? c[probe]?.tcpSocket?.port ?? c[probe]?.grpc?.port;
    if (port === undefined) return [];
    const exposed = (c.ports ?? []).some((p: Manifest) => p.containerPort === port || p.name === port);
    return exposed ? [] : [`container ${c.name}: ${probe} on port ${port}, which the container does not expose`];
  });

const KUBE_LINTER: Check[] = [
  {
    tool: 'kube-linter',
    name: 'no-anti-affinity',
    kinds: ['Deployment', 'StatefulSet'],
    findings: (m) => {
      if ((m.spec.replicas ?? 1) < 2) return [];
      const anti = podSpec(m).affinity?.podAntiAffinity;
      const terms = [
        ...(anti?.preferredDuringSchedulingIgnoredDuringExecution ?? []).map((t: Manifest) => t.podAffinityTerm),
        ...(anti?.requiredDuringSchedulingIgnoredDuringExecution ?? []),
      ];
      const ok = terms.some(
        (t: Manifest) =>
          t.topologyKey === 'kubernetes.io/hostname' &&
          selects(t.labelSelector?.matchLabels, podTemplate(m)!.metadata.labels),
      );
      return ok
        ? []
        : [`${m.spec.replicas} replicas without inter-pod anti-affinity on kubernetes.io/hostname matching its pods`];
    },
  },
  {
    tool: 'kube-linter',
    name: 'pdb-unhealthy-pod-eviction-policy',
    kinds: ['PodDisruptionBudget'],
    findings: (m) => (m.spec.unhealthyPodEvictionPolicy ? [] : ['unhealthyPodEvictionPolicy is not set']),
  },
  {
    tool: 'kube-linter',
    name: 'pdb-max-unavailable',
    kinds: ['PodDisruptionBudget'],
    findings: (m) => ([0, '0%'].includes(m.spec.maxUnavailable) ? ['maxUnavailable 0 prevents every disruption'] : []),
  },
  {
    tool: 'kube-linter',
    name: 'job-ttl-seconds-after-finished',
    kinds: ['Job', 'CronJob'],
    findings: (m) =>
      m.kind === 'CronJob'
        ? m.spec.jobTemplate.spec.ttlSecondsAfterFinished !== undefined
          ? ["the CronJob's Jobs set ttlSecondsAfterFinished, which conflicts with its history limits"]
          : []
        : m.spec.ttlSecondsAfterFinished === undefined
          ? ['a standalone Job without ttlSecondsAfterFinished']
          : [],
  },
  {
    tool: 'kube-linter',
    name: 'env-var-secret',
    kinds: WORKLOADS,
    findings: (m) =>
      containers(m).flatMap((c) =>
        (c.env ?? [])
          .filter((e: Manifest) => /secret/i.test(e.name) && e.value)
          .map((e: Manifest) => `container ${c.name}: ${e.name} has a literal value`),
      ),
  },
  {
    tool: 'kube-linter',
    name: 'duplicate-env-var',
    kinds: WORKLOADS,
    findings: (m) =>
      containers(m).flatMap((c) =>
        (c.env ?? [])
          .map((e: Manifest) => e.name)
          .filter((n: string, i: number, all: string[]) => all.indexOf(n) !== i)
          .map((n: string) => `container ${c.name}: ${n} twice`),
      ),
  },
  {
    tool: 'kube-linter',
    name: 'latest-tag',
    kinds: WORKLOADS,
    findings: perContainer(
      (c) => /:latest$/.test(c.image) || !c.image.includes(':') || /\/[^:]+$/.test(c.image),
      'image without a version tag',
    ),
  },
  {
    tool: 'kube-linter',
    name: 'no-read-only-root-fs',
    kinds: WORKLOADS,
    findings: perContainer((c) => c.securityContext?.readOnlyRootFilesystem !== true, 'root filesystem is writable'),
  },
  {
    tool: 'kube-linter',
    name: 'run-as-non-root',
    kinds: WORKLOADS,
    findings: perContainer((c, m) => {
      const pod = podSpec(m).securityContext ?? {};
      const nonRoot = c.securityContext?.runAsNonRoot ?? pod.runAsNonRoot;
      const user = c.securityContext?.runAsUser ?? pod.runAsUser;
      return !(nonRoot === true || (user !== undefined && user > 0));
    }, 'may run as root'),
  },
  {
    tool: 'kube-linter',
    name: 'privilege-escalation-container',
    kinds: WORKLOADS,
    findings: perContainer(
      (c) =>
        c.securityContext?.allowPrivilegeEscalation !== false ||
        c.securityContext?.privileged === true ||
        (c.securityContext?.capabilities?.add ?? []).includes('SYS_ADMIN'),
      'may escalate privileges',
    ),
  },
  {
    tool: 'kube-linter',
    name: 'privileged-container',
    kinds: WORKLOADS,
    findings: perContainer((c) => c.securityContext?.privileged === true, 'privileged'),
  },
  {
    tool: 'kube-linter',
    name: 'drop-net-raw-capability',
    kinds: WORKLOADS,
    findings: perContainer(
      (c) => !(c.securityContext?.capabilities?.drop ?? []).some((d: string) => d === 'ALL' || d === 'NET_RAW'),
      'NET_RAW not dropped',
    ),
  },
  {
    tool: 'kube-linter',
    name: 'host-network',
    kinds: WORKLOADS,
    findings: (m) => (podSpec(m).hostNetwork ? ['hostNetwork'] : []),
  },
  { tool: 'kube-linter', name: 'host-pid', kinds: WORKLOADS, findings: (m) => (podSpec(m).hostPID ? ['hostPID'] : []) },
  { tool: 'kube-linter', name: 'host-ipc', kinds: WORKLOADS, findings: (m) => (podSpec(m).hostIPC ? ['hostIPC'] : []) },
  {
    tool: 'kube-linter',
    name: 'sensitive-host-mounts',
    kinds: WORKLOADS,
    findings: (m) =>
      (podSpec(m).volumes ?? []).filter((v: Manifest) => v.hostPath).map((v: Manifest) => `hostPath volume ${v.name}`),
  },
  {
    tool: 'kube-linter',
    name: 'ssh-port',
    kinds: WORKLOADS,
    findings: perContainer((c) => (c.ports ?? []).some((p: Manifest) => p.containerPort === 22), 'exposes port 22'),
  },
  {
    tool: 'kube-linter',
    name: 'unset-cpu-requirements',
    kinds: WORKLOADS,
    findings: perContainer((c) => !c.resources?.requests?.cpu, 'no CPU request'),
  },
  {
    tool: 'kube-linter',
    name: 'unset-memory-requirements',
    kinds: WORKLOADS,
    findings: perContainer((c) => !c.resources?.limits?.memory, 'no memory limit'),
  },
  { tool: 'kube-linter', name: 'liveness-port', kinds: WORKLOADS, findings: probePort('livenessProbe') },
  { tool: 'kube-linter', name: 'readiness-port', kinds: WORKLOADS, findings: probePort('readinessProbe') },
  { tool: 'kube-linter', name: 'startup-port', kinds: WORKLOADS, findings: probePort('startupProbe') },
  {
    tool: 'kube-linter',
    name: 'mismatching-selector',
    kinds: ['Deployment', 'StatefulSet', 'DaemonSet'],
    findings: (m) =>
      selects(m.spec.selector.matchLabels, m.spec.template.metadata.labels)
        ? []
        : ["the selector does not match the pod template's labels"],
  },
  {
    tool: 'kube-linter',
    name: 'dangling-service',
    kinds: ['Service'],
    findings: (m, unit) =>
      !m.spec.selector ||
      unit.some(
        (o) => podTemplate(o) && sameNamespace(o, m) && selects(m.spec.selector, podTemplate(o)!.metadata.labels),
      )
        ? []
        : ['selects no pods of a workload here'],
  },
  {
    tool: 'kube-linter',
    name: 'non-existent-service-account',
    kinds: WORKLOADS,
    findings: (m, unit) => {
      const name = podSpec(m).serviceAccountName;
      if (!name || name === 'default') return [];
      return unit.some((o) => o.kind === 'ServiceAccount' && o.metadata.name === name && sameNamespace(o, m))
        ? []
        : [`ServiceAccount ${name} is not defined`];
    },
  },
  {
    tool: 'kube-linter',
    name: 'invalid-target-ports',
    kinds: [...WORKLOADS, 'Service'],
    findings: (m) => {
      const names =
        m.kind === 'Service'
          ? m.spec.ports.map((p: Manifest) => p.targetPort).filter((t: unknown) => typeof t === 'string')
          : containers(m).flatMap((c) => (c.ports ?? []).map((p: Manifest) => p.name).filter(Boolean));
      return names
        .filter((n: string) => !IANA_SVC_NAME.test(n))
        .map((n: string) => `port name '${n}' is not an IANA service name`);
    },
  },
  {
    tool: 'kube-linter',
    name: 'non-isolated-pod',
    kinds: WORKLOADS,
    findings: (m, unit) =>
      unit.some(
        (o) =>
          o.kind === 'NetworkPolicy' &&
          sameNamespace(o, m) &&
          selects(o.spec.podSelector?.matchLabels ?? {}, podTemplate(m)!.metadata.labels),
      )
        ? []
        : ['no NetworkPolicy selects its pods'],
  },
];

const POD_CONTROLLERS = ['Deployment', 'StatefulSet', 'DaemonSet'];
const POLARIS: Check[] = [
  {
    tool: 'polaris',
    name: 'deploymentMissingReplicas',
    kinds: ['Deployment'],
    findings: (m) => ((m.spec.replicas ?? 0) >= 2 ? [] : ['fewer than 2 replicas']),
  },
  {
    tool: 'polaris',
    name: 'priorityClassNotSet',
    kinds: WORKLOADS,
    findings: (m) => (podSpec(m).priorityClassName ? [] : ['no priorityClassName']),
  },
  {
    tool: 'polaris',
    name: 'tagNotSpecified',
    kinds: WORKLOADS,
    findings: perContainer((c) => !/^.+:.+$/.test(c.image) || /^.+:latest$/.test(c.image), 'no image tag'),
  },
  {
    tool: 'polaris',
    name: 'pullPolicyNotAlways',
    kinds: WORKLOADS,
    findings: perContainer((c) => c.imagePullPolicy !== 'Always', 'imagePullPolicy is not Always'),
  },
  {
    tool: 'polaris',
    name: 'livenessProbeMissing',
    kinds: POD_CONTROLLERS,
    findings: perContainer((c) => !c.livenessProbe, 'no liveness probe'),
  },
  {
    tool: 'polaris',
    name: 'readinessProbeMissing',
    kinds: POD_CONTROLLERS,
    findings: perContainer((c) => !c.readinessProbe, 'no readiness probe'),
  },
  {
    tool: 'polaris',
    name: 'metadataAndInstanceMismatched',
    kinds: WORKLOADS,
    findings: (m) =>
      m.metadata.labels?.['app.kubernetes.io/instance'] === m.metadata.name
        ? []
        : ['label app.kubernetes.io/instance is not the name'],
  },
  {
    tool: 'polaris',
    name: 'pdbDisruptionsIsZero',
    kinds: ['PodDisruptionBudget'],
    findings: (m) =>
      m.spec.minAvailable === '100%' || [0, '0%'].includes(m.spec.maxUnavailable)
        ? ['no voluntary eviction possible']
        : [],
  },
  {
    tool: 'polaris',
    name: 'missingPodDisruptionBudget',
    kinds: ['Deployment'],
    // Its schema's anyOf: a budget whose matchLabels hold any one of the pod's labels.
    findings: (m, unit) => {
      const labels = podTemplate(m)!.metadata.labels ?? {};
      const covered = unit.some(
        (o) =>
          o.kind === 'PodDisruptionBudget' &&
          sameNamespace(o, m) &&
          Object.entries(o.spec.selector?.matchLabels ?? {}).some(([k, v]) => labels[k] === v),
      );
      return covered ? [] : ['no PodDisruptionBudget matches its pods'];
    },
  },
  {
    tool: 'polaris',
    name: 'topologySpreadConstraint',
    kinds: POD_CONTROLLERS,
    findings: (m) =>
      (podSpec(m).topologySpreadConstraints ?? []).length >= 1 ? [] : ['no topology spread constraint'],
  },
  {
    tool: 'polaris',
    name: 'hpaMaxAvailability',
    kinds: ['HorizontalPodAutoscaler'],
    findings: (m) =>
      m.spec.minReplicas !== undefined && !(m.spec.maxReplicas > m.spec.minReplicas)
        ? ['maxReplicas is not above minReplicas']
        : [],
  },
  {
    tool: 'polaris',
    name: 'hpaMinAvailability',
    kinds: ['HorizontalPodAutoscaler'],
    findings: (m) => (m.spec.minReplicas !== undefined && m.spec.minReplicas < 2 ? ['minReplicas below 2'] : []),
  },
  {
    tool: 'polaris',
    name: 'cpuRequestsMissing',
    kinds: WORKLOADS,
    findings: perContainer((c) => !c.resources?.requests?.cpu, 'no CPU request'),
  },
  {
    tool: 'polaris',
    name: 'cpuLimitsMissing',
    kinds: WORKLOADS,
    findings: perContainer((c) => !c.resources?.limits?.cpu, 'no CPU limit'),
  },
  {
    tool: 'polaris',
    name: 'memoryRequestsMissing',
    kinds: WORKLOADS,
    findings: perContainer((c) => !c.resources?.requests?.memory, 'no memory request'),
  },
  {
    tool: 'polaris',
    name: 'memoryLimitsMissing',
    kinds: WORKLOADS,
    findings: perContainer((c) => !c.resources?.limits?.memory, 'no memory limit'),
  },
  {
    tool: 'polaris',
    name: 'automountServiceAccountToken',
    kinds: WORKLOADS,
    // The pod must not ask for the token; when it says nothing, its ServiceAccount must say false.
    findings: (m, unit) => {
      const automount = podSpec(m).automountServiceAccountToken;
      if (automount === false) return [];
      if (automount === true) return ['the pod mounts its ServiceAccount token'];
      const name = podSpec(m).serviceAccountName ?? 'default';
      return unit.some(
        (o) =>
          o.kind === 'ServiceAccount' &&
          o.metadata.name === name &&
          sameNamespace(o, m) &&
          o.automountServiceAccountToken === false,
      )
        ? []
        : ['the ServiceAccount token is mounted by default'];
    },
  },
  { tool: 'polaris', name: 'hostIPCSet', kinds: WORKLOADS, findings: (m) => (podSpec(m).hostIPC ? ['hostIPC'] : []) },
  { tool: 'polaris', name: 'hostPIDSet', kinds: WORKLOADS, findings: (m) => (podSpec(m).hostPID ? ['hostPID'] : []) },
  {
    tool: 'polaris',
    name: 'hostNetworkSet',
    kinds: WORKLOADS,
    findings: (m) => (podSpec(m).hostNetwork ? ['hostNetwork'] : []),
  },
  {
    tool: 'polaris',
    name: 'hostPathSet',
    kinds: WORKLOADS,
    findings: (m) =>
      (podSpec(m).volumes ?? []).filter((v: Manifest) => v.hostPath).map((v: Manifest) => `hostPath volume ${v.name}`),
  },
  {
    tool: 'polaris',
    name: 'hostPortSet',
    kinds: WORKLOADS,
    findings: perContainer((c) => (c.ports ?? []).some((p: Manifest) => p.hostPort), 'hostPort'),
  },
  {
    tool: 'polaris',
    name: 'linuxHardening',
    kinds: WORKLOADS,
    findings: perContainer((c, m) => {
      const seccomp = (c.securityContext?.seccompProfile ?? podSpec(m).securityContext?.seccompProfile)?.type;
      const seLinux = c.securityContext?.seLinuxOptions ?? podSpec(m).securityContext?.seLinuxOptions;
      const drop = c.securityContext?.capabilities?.drop ?? [];
      return !(
        (seccomp && seccomp !== 'Unconfined') ||
        (seLinux && Object.keys(seLinux).length > 0) ||
        drop.length > 0
      );
    }, 'no seccomp profile, SELinux options or dropped capabilities'),
  },
  {
    tool: 'polaris',
    name: 'missingNetworkPolicy',
    kinds: WORKLOADS,
    // Its schema: a policy in the namespace with both types, at least one ingress and one egress
    // rule, and matchLabels holding exactly one of the pod's labels (a oneOf over them).
    findings: (m, unit) => {
      const labels: Record<string, string> = podTemplate(m)!.metadata.labels ?? {};
      const ok = unit.some(
        (o) =>
          o.kind === 'NetworkPolicy' &&
          sameNamespace(o, m) &&
          (o.spec.ingress ?? []).length >= 1 &&
          (o.spec.egress ?? []).length >= 1 &&
          ['Ingress', 'Egress'].every((t) =>
            (o.spec.policyTypes ?? []).some((p: string) => p.toLowerCase() === t.toLowerCase()),
          ) &&
          Object.entries(labels).filter(([k, v]) => o.spec.podSelector?.matchLabels?.[k] === v).length === 1,
      );
      return ok ? [] : ['no NetworkPolicy selects its pods by one of their labels with ingress and egress rules'];
    },
  },
  {
    tool: 'polaris',
    name: 'notReadOnlyRootFilesystem',
    kinds: WORKLOADS,
    findings: perContainer((c) => c.securityContext?.readOnlyRootFilesystem !== true, 'root filesystem is writable'),
  },
  {
    tool: 'polaris',
    name: 'privilegeEscalationAllowed',
    kinds: WORKLOADS,
    findings: perContainer(
      (c) => c.securityContext?.allowPrivilegeEscalation !== false,
      'allowPrivilegeEscalation is not false',
    ),
  },
  {
    tool: 'polaris',
    name: 'runAsRootAllowed',
    kinds: WORKLOADS,
    findings: perContainer((c, m) => {
      const good = (s: Manifest | undefined) => s !== undefined && (s.runAsNonRoot === true || (s.runAsUser ?? 0) >= 1);
      const notBad = (s: Manifest | undefined) =>
        s === undefined || (s.runAsNonRoot !== false && (s.runAsUser === undefined || s.runAsUser >= 1));
      return !((good(podSpec(m).securityContext) && notBad(c.securityContext)) || good(c.securityContext));
    }, 'may run as root'),
  },
  {
    tool: 'polaris',
    name: 'runAsPrivileged',
    kinds: WORKLOADS,
    findings: perContainer((c) => c.securityContext?.privileged === true, 'privileged'),
  },
  {
    tool: 'polaris',
    name: 'insecureCapabilities',
    kinds: WORKLOADS,
    findings: perContainer(
      (c) =>
        !(c.securityContext?.capabilities?.drop ?? []).includes('ALL') ||
        (c.securityContext?.capabilities?.add ?? []).length > 0,
      'capabilities not all dropped',
    ),
  },
  {
    tool: 'polaris',
    name: 'sensitiveContainerEnvVar',
    kinds: WORKLOADS,
    findings: (m) =>
      containers(m).flatMap((c) =>
        (c.env ?? [])
          .filter(
            (e: Manifest) =>
              e.value !== undefined &&
              (/password|token|bearer|secret/i.test(e.name) ||
                /^(AWS_SECRET_ACCESS_KEY|GOOGLE_APPLICATION_CREDENTIALS|OCI_CLI_KEY_CONTENT)$/i.test(e.name) ||
                /^AZURE_.+KEY$/i.test(e.name) ||
                /\s*-BEGIN\s+.*PRIVATE KEY-\s*/i.test(e.value)),
          )
          .map((e: Manifest) => `container ${c.name}: ${e.name} has a literal value`),
      ),
  },
  {
    tool: 'polaris',
    name: 'sensitiveConfigmapContent',
    kinds: ['ConfigMap'],
    findings: (m) =>
      Object.entries(m.data ?? {})
        .filter(([k, v]) => /password|token|bearer|secret/i.test(k) || /\s*-BEGIN\s+.*PRIVATE KEY-\s*/i.test(String(v)))
        .map(([k]) => `key ${k}`),
  },
  {
    tool: 'polaris',
    name: 'rolePodExecAttach',
    kinds: ['Role', 'ClusterRole'],
    findings: (m) =>
      (m.rules ?? [])
        .filter(
          (r: Manifest) =>
            (r.apiGroups ?? []).some((g: string) => g === '' || g === '*') &&
            (r.resources ?? []).some((x: string) => ['*', 'pods/exec', 'pods/attach'].includes(x)) &&
            (r.verbs ?? []).some((v: string) => ['*', 'get', 'create'].includes(v)),
        )
        .map(() => 'allows pods/exec or pods/attach'),
  },
  {
    tool: 'polaris',
    name: 'rolebindingClusterAdminClusterRole',
    kinds: ['RoleBinding', 'ClusterRoleBinding'],
    findings: (m) => (m.roleRef.name === 'cluster-admin' ? ['binds cluster-admin'] : []),
  },
];

const CHECKS: readonly Check[] = [...KUBE_LINTER, ...POLARIS];

/** Whether the object carries the tool's ignore annotation for the check, and the reason beside it. */
function exempted(object: Manifest, check: Check): boolean {
  const annotations: Record<string, string> = object.metadata.annotations ?? {};
  if (check.tool === 'kube-linter')
    return (annotations[`${KUBE_LINTER_IGNORE_PREFIX}${check.name}`] ?? '').trim() !== '';
  return (
    annotations[POLARIS_EXEMPT(check.name)] === 'true' &&
    (annotations[POLARIS_EXEMPT_REASON(check.name)] ?? '').trim() !== ''
  );
}

const results = units.flatMap(({ unit, objects }) =>
  objects.flatMap((object) =>
    CHECKS.filter((check) => check.kinds.includes(object.kind)).map((check) => ({
      where: `${check.tool} ${check.name} on dist/${unit} ${object.kind} ${object.metadata.namespace ?? ''}/${object.metadata.name}`,
      object,
      check,
      findings: check.findings(object, objects),
    })),
  ),
);

describe("kube-linter's and Polaris's checks on dist/ (hand-written: neither tool installs here)", () => {
  test('dist/ has workloads, disruption budgets, autoscalers and NetworkPolicies to check', () => {
    const kinds = new Set(units.flatMap((u) => u.objects.map((o) => o.kind)));
    for (const kind of [
      'Deployment',
      'CronJob',
      'Service',
      'PodDisruptionBudget',
      'HorizontalPodAutoscaler',
      'NetworkPolicy',
      'ConfigMap',
      'Role',
    ])
      expect(kinds).toContain(kind);
  });

  test('every finding is fixed, or exempted on its object with the tool’s annotation and a reason', () => {
    const open = results
      .filter((r) => r.findings.length > 0 && !exempted(r.object, r.check))
      .map((r) => `${r.where}: ${r.findings.join('; ')}`);
    expect(open).toEqual([]);
  });

  test('every exemption still answers a finding (none is left behind once the finding is fixed)', () => {
    const stale = results.filter((r) => r.findings.length === 0 && exempted(r.object, r.check)).map((r) => r.where);
    expect(stale).toEqual([]);
    // Each exemption annotation on an object names a check this test knows.
    const known = new Set(CHECKS.map((c) => `${c.tool}/${c.name}`));
    const unknown = units.flatMap(({ objects }) =>
      objects.flatMap((o) =>
        Object.keys(o.metadata.annotations ?? {}).flatMap((key) => {
          const kubeLinter = key.startsWith(KUBE_LINTER_IGNORE_PREFIX)
            ? `kube-linter/${key.slice(KUBE_LINTER_IGNORE_PREFIX.length)}`
            : undefined;
          const polaris = /^polaris\.fairwinds\.com\/(.+)-exempt$/.exec(key)?.[1];
          const id = kubeLinter ?? (polaris ? `polaris/${polaris}` : undefined);
          return id && !known.has(id) ? [`${o.kind} ${o.metadata.name}: ${key}`] : [];
        }),
      ),
    );
    expect(unknown).toEqual([]);
  });

  // The checks themselves, on objects that fail and pass them: a check that never fires proves nothing.
  const deployment = (spec: Manifest = {}, pod: Manifest = {}, container: Manifest = {}): Manifest => ({
    kind: 'Deployment',
    metadata: { name: 'd', namespace: 'n', labels: { 'app.kubernetes.io/instance': 'd' } },
    spec: {
      replicas: 2,
      selector: { matchLabels: { app: 'd' } },
      ...spec,
      template: {
        metadata: { labels: { app: 'd', tier: 'web' } },
        spec: { containers: [{ name: 'c', image: 'r/i:1', ...container }], ...pod },
      },
    },
  });
  const check = (tool: string, name: string) => CHECKS.find((c) => c.tool === tool && c.name === name)!;
  test.each([
    [
      'kube-linter',
      'no-anti-affinity',
      deployment(),
      deployment(
        {},
        {
          affinity: {
            podAntiAffinity: {
              preferredDuringSchedulingIgnoredDuringExecution: [
                {
                  weight: 1,
                  podAffinityTerm: {
                    topologyKey: 'kubernetes.io/hostname',
                    labelSelector: { matchLabels: { app: 'd' } },
                  },
                },
              ],
            },
          },
        },
      ),
    ],
    [
      'kube-linter',
      'env-var-secret',
      deployment({}, {}, { env: [{ name: 'WEBHOOK_SECRET_NAME', value: 'tls' }] }),
      deployment({}, {}, { env: [{ name: 'WEBHOOK_SECRET', valueFrom: { secretKeyRef: { name: 's', key: 'k' } } }] }),
    ],
    [
      'kube-linter',
      'latest-tag',
      deployment({}, {}, { image: 'registry:5000/i' }),
      deployment({}, {}, { image: 'registry:5000/i:1.2' }),
    ],
    [
      'kube-linter',
      'liveness-port',
      deployment({}, {}, { livenessProbe: { httpGet: { port: 'health' } } }),
      deployment(
        {},
        {},
        { ports: [{ name: 'health', containerPort: 1 }], livenessProbe: { httpGet: { port: 'health' } } },
      ),
    ],
    [
      'kube-linter',
      'job-ttl-seconds-after-finished',
      { kind: 'CronJob', metadata: {}, spec: { jobTemplate: { spec: { ttlSecondsAfterFinished: 1 } } } },
      { kind: 'CronJob', metadata: {}, spec: { jobTemplate: { spec: {} } } },
    ],
    [
      'kube-linter',
      'pdb-unhealthy-pod-eviction-policy',
      { kind: 'PodDisruptionBudget', metadata: {}, spec: {} },
      { kind: 'PodDisruptionBudget', metadata: {}, spec: { unhealthyPodEvictionPolicy: 'AlwaysAllow' } },
    ],
    [
      'polaris',
      'topologySpreadConstraint',
      deployment(),
      deployment({}, { topologySpreadConstraints: [{ topologyKey: 'topology.kubernetes.io/zone' }] }),
    ],
    [
      'polaris',
      'metadataAndInstanceMismatched',
      { ...deployment(), metadata: { name: 'd', labels: {} } },
      deployment(),
    ],
    [
      'polaris',
      'sensitiveContainerEnvVar',
      deployment({}, {}, { env: [{ name: 'DB_PASSWORD', value: 'hunter2' }] }),
      deployment({}, {}, { env: [{ name: 'DB_PASSWORD', valueFrom: { secretKeyRef: { name: 's', key: 'k' } } }] }),
    ],
    [
      'polaris',
      'livenessProbeMissing',
      deployment(),
      deployment({}, {}, { livenessProbe: { exec: { command: ['true'] } } }),
    ],
  ] as [string, string, Manifest, Manifest][])(
    '%s %s fires on an object that fails it and not on one that passes',
    (tool, name, failing, passing) => {
      expect(check(tool, name).findings(failing, [failing]).length).toBeGreaterThan(0);
      expect(check(tool, name).findings(passing, [passing])).toEqual([]);
    },
  );

  test("Polaris's missingNetworkPolicy wants a policy selecting exactly one of the pod's labels, with ingress and egress rules", () => {
    const pod = deployment();
    const policy = (matchLabels: Record<string, string>, ingress = [{}], egress = [{}]): Manifest => ({
      kind: 'NetworkPolicy',
      metadata: { name: 'p', namespace: 'n' },
      spec: { podSelector: { matchLabels }, policyTypes: ['Ingress', 'Egress'], ingress, egress },
    });
    const findings = (np: Manifest) => check('polaris', 'missingNetworkPolicy').findings(pod, [pod, np]);
    expect(findings(policy({ app: 'd' }))).toEqual([]);
    expect(findings(policy({ app: 'd', tier: 'web' }))).not.toEqual([]);
    expect(findings(policy({ app: 'd' }, []))).not.toEqual([]);
    expect(findings({ ...policy({ app: 'd' }), metadata: { name: 'p', namespace: 'elsewhere' } })).not.toEqual([]);
  });
});
