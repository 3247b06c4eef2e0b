import { App, Chart } from 'cdk8s';

/** A Kubernetes object as synthesized: plain JSON. */
export type Manifest = Record<string, any>;

/**
 * A chart of a fresh App that never writes to disk: its objects are read with `chart.toJson()`.
 * (cdk8s's Testing.app() makes a temporary folder on every call and leaves it behind.)
 */
export function chartInMemory(id = 'test'): Chart {
  return new Chart(new App({ outdir: '/nonexistent' }), id);
}

/** Synthesizes whatever `build` adds to a fresh chart, in memory (nothing touches disk). */
export function synth(build: (chart: Chart) => void): Manifest[] {
  const chart = chartInMemory();
  build(chart);
  return chart.toJson();
}

/** The one object of `kind` (and `name`, when given) among `manifests`; fails when not exactly one. */
export function only(manifests: Manifest[], kind: string, name?: string): Manifest {
  const found = manifests.filter((m) => m.kind === kind && (name === undefined || m.metadata?.name === name));
  if (found.length !== 1) throw new Error(`expected one ${kind}${name ? ` '${name}'` : ''}, found ${found.length}`);
  return found[0];
}

/**
 * Website titles that stay text: each would run `touch <marker(n)>` if the shell operator ever let
 * one reach shell or jq code, and the rest are quotes, escapes, markup, tabs, flags and the longest
 * title the schema allows. The page shows each as renderPage escapes it.
 */
export function hostileTitles(marker: (n: number) => string): string[] {
  return [
    `$(touch ${marker(0)})`,
    `\`touch ${marker(1)}\``,
    `"; touch ${marker(2)}; echo "`,
    `'; touch ${marker(3)}; echo '`,
    `first line\ntouch ${marker(4)}\n$(touch ${marker(5)})`,
    `\\"$(touch ${marker(6)})\\" \\(env) \\u0000 back\\slash \\n \${HOME} $HOME %s %n`,
    '<script>alert("x")</script> & &amp; <b>bold</b>',
    'tab\tand emoji 🚀🌈, ünïcödé, 中文',
    '\t\tleading tabs',
    '--server-side --dry-run=server -o yaml',
    '#'.repeat(4096),
  ];
}

/**
 * Asserts what the Pod Security `restricted` profile asks of a pod spec and its containers:
 * non-root, the RuntimeDefault seccomp profile, no privilege escalation, every capability dropped,
 * and (our own rule on top) a read-only root filesystem.
 */
export function expectPodSecurityRestricted(pod: Manifest): void {
  expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } });
  for (const container of pod.containers) {
    expect(container.securityContext).toEqual({
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      runAsNonRoot: true,
      capabilities: { drop: ['ALL'] },
    });
  }
}

/**
 * Asserts that the RoleBinding binds the Role `name` to the ServiceAccount `name` in `namespace`,
 * and that the pod runs as that ServiceAccount with its token mounted (it talks to the API server).
 */
export function expectPodRunsAsBoundServiceAccount(
  manifests: Manifest[],
  pod: Manifest,
  name: string,
  namespace = 'website-system',
): void {
  const binding = only(manifests, 'RoleBinding');
  expect(binding.roleRef).toEqual({ apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name });
  expect(binding.subjects).toEqual([{ kind: 'ServiceAccount', name, namespace }]);
  expect(pod.serviceAccountName).toBe(name);
  expect(pod.automountServiceAccountToken).toBe(true);
}
