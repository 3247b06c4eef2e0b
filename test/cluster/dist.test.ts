import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { ROOT } from '../../harness/cluster/env.ts';
import { createNamespace, deleteNamespace, kubectl, ok } from '../../harness/cluster/kube.ts';

type Manifest = Record<string, any>;
const dist = join(ROOT, 'dist');
// One folder per deployable unit (dist/<unit>/<chart>.yaml); paths relative to dist/.
const files = readdirSync(dist, { recursive: true, encoding: 'utf8' })
  .filter((f) => f.endsWith('.yaml'))
  .sort();
const manifests: Manifest[] = files.flatMap((f) =>
  parseAllDocuments(readFileSync(join(dist, f), 'utf8')).map((d) => d.toJS()),
);

/** Pod templates of every workload in dist/, as the Pods their controllers would create. */
function podTemplates(): { owner: string; template: Manifest }[] {
  const templateOf = (m: Manifest) =>
    m.kind === 'CronJob'
      ? m.spec.jobTemplate.spec.template
      : ['Deployment', 'StatefulSet', 'DaemonSet', 'Job'].includes(m.kind)
        ? m.spec.template
        : undefined;
  return manifests.filter(templateOf).map((m) => ({ owner: `${m.kind}/${m.metadata.name}`, template: templateOf(m) }));
}

describe('dist/ as a user applies it', () => {
  beforeAll(async () => {
    // Namespaces first, for real: a dry run of a namespaced object needs its namespace to exist.
    const namespaces = manifests.filter((m) => m.kind === 'Namespace');
    await ok(['apply', '--server-side', '-f', '-'], { input: namespaces.map((m) => JSON.stringify(m)).join('\n') });
  });

  test.each(files)('%s passes server-side dry-run', async (file) => {
    const result = await kubectl([
      'apply',
      '--server-side',
      '--dry-run=server',
      '--force-conflicts',
      '-f',
      join(dist, file),
    ]);
    expect([result.code, result.stderr]).toEqual([0, '']);
  });

  describe('in a namespace enforcing Pod Security restricted', () => {
    let ns: string;
    beforeAll(async () => {
      ns = await createNamespace('psa', {
        'pod-security.kubernetes.io/enforce': 'restricted',
        'pod-security.kubernetes.io/warn': 'restricted',
      });
      // The templates name their ServiceAccounts; give them the same ones here.
      const accounts = new Set(podTemplates().map(({ template }) => template.spec.serviceAccountName ?? 'default'));
      for (const name of accounts) await kubectl(['create', 'serviceaccount', name, '-n', ns]);
    });
    afterAll(() => deleteNamespace(ns));

    test('dist/ has pod templates to check', () => {
      expect(podTemplates().length).toBeGreaterThan(0);
    });

    test.each(podTemplates().map(({ owner, template }) => [owner, template]))(
      'the pod of %s is admitted without warnings',
      async (_, template) => {
        const pod = {
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { ...template.metadata, generateName: 'psa-', namespace: ns },
          spec: template.spec,
        };
        const result = await kubectl(['create', '--dry-run=server', '-f', '-'], { input: JSON.stringify(pod) });
        expect([result.code, result.stderr]).toEqual([0, '']);
      },
    );

    test('a privileged pod is rejected there (the check is live)', async () => {
      const pod = {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'privileged', namespace: ns },
        spec: { containers: [{ name: 'c', image: 'busybox:1.37', securityContext: { privileged: true } }] },
      };
      const result = await kubectl(['create', '--dry-run=server', '-f', '-'], { input: JSON.stringify(pod) });
      expect(result.code).not.toBe(0);
      expect(result.stderr).toMatch(/violates PodSecurity "restricted:latest"/);
    });
  });
});
