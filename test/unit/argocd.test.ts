// The README's Argo CD manifests, checked against the committed dist/ the way Argo CD reads it: each
// Application's directory source (its folder's own *.yaml, *.yml and *.json files; subfolders only
// with directory.recurse; directory.include / exclude), objects identified by (group, kind,
// namespace, name) with namespaced objects lacking a namespace placed in the destination namespace.
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { buildDist, DIST_ALTERNATIVES } from '../../lib/app.ts';
import { SYNC_WAVE_ANNOTATION } from '../../lib/argocd.ts';

type Manifest = Record<string, any>;
const root = fileURLToPath(new URL('../..', import.meta.url));
const readme = readFileSync(join(root, 'README.md'), 'utf8');

/** One Application as Argo CD sees it: a name, directory sources (repository paths) and a destination namespace. */
interface Application {
  readonly name: string;
  readonly sources: readonly {
    readonly path: string;
    readonly directory?: { recurse?: boolean; include?: string; exclude?: string };
  }[];
  readonly namespace?: string;
}

/** Every ```yaml block of `markdown`, parsed (all documents). */
function yamlBlocks(markdown: string): Manifest[] {
  return [...markdown.matchAll(/```yaml\n([\s\S]*?)```/g)]
    .flatMap((m) => parseAllDocuments(m[1]).map((d) => d.toJS() as Manifest))
    .filter(Boolean);
}

/** `value` with every `{{.key}}` (goTemplate) or `{{key}}` (fasttemplate) replaced from `params`; an unknown key throws (missingkey=error). */
function render(value: unknown, params: Record<string, unknown>): unknown {
  if (typeof value === 'string') {
    return value.replace(/\{\{\s*\.?([\w.-]+)\s*\}\}/g, (_, key: string) => {
      if (!(key in params))
        throw new Error(`template parameter '${key}' is not in the generator element ${JSON.stringify(params)}`);
      return String(params[key]);
    });
  }
  if (Array.isArray(value)) return value.map((v) => render(v, params));
  if (value && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, render(v, params)]));
  return value;
}

function toApplication(app: Manifest): Application {
  const spec = app.spec ?? {};
  const sources: Manifest[] = spec.sources ?? (spec.source ? [spec.source] : []);
  for (const s of sources) {
    if (s.helm || s.kustomize || s.plugin || s.chart)
      throw new Error(`Application ${app.metadata?.name}: only directory sources are checked`);
  }
  return {
    name: app.metadata?.name,
    sources: sources.map((s) => ({ path: s.path, directory: s.directory })),
    namespace: spec.destination?.namespace,
  };
}

/** The Applications that `manifests` define: Applications as they are, ApplicationSets' list generators rendered. */
function applicationsOf(manifests: Manifest[]): Application[] {
  return manifests
    .filter((m) => m.apiVersion === 'argoproj.io/v1alpha1')
    .flatMap((m) => {
      if (m.kind === 'Application') return [toApplication(m)];
      if (m.kind !== 'ApplicationSet') return [];
      return (m.spec.generators as Manifest[]).flatMap((g) => {
        if (!g.list)
          throw new Error(`ApplicationSet ${m.metadata.name}: only list generators are checked, not ${Object.keys(g)}`);
        return (g.list.elements as Manifest[]).map((element) =>
          toApplication(render(m.spec.template, element) as Manifest),
        );
      });
    });
}

/** A glob as Argo CD's directory include/exclude take it: `*` and `?` within one path segment, `**` across, `{a,b}` alternatives. */
function globToRegExp(glob: string): RegExp {
  let re = '';
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i];
    if (c === '*' && glob[i + 1] === '*') {
      re += '.*';
      i++;
    } else if (c === '*') re += '[^/]*';
    else if (c === '?') re += '[^/]';
    else if (c === '{') re += '(?:';
    else if (c === '}') re += ')';
    else if (c === ',' && re.lastIndexOf('(?:') > re.lastIndexOf(')')) re += '|';
    else re += c.replace(/[.+^$()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${re}$`);
}

/** The files, relative to the repository `repo`, that Argo CD's directory source reads for `source`. */
function directoryFiles(repo: string, source: Application['sources'][number]): string[] {
  const dir = join(repo, source.path);
  const names = (
    source.directory?.recurse ? readdirSync(dir, { recursive: true, encoding: 'utf8' }) : readdirSync(dir)
  ).filter((f) => statSync(join(dir, f)).isFile());
  const include = source.directory?.include ? globToRegExp(source.directory.include) : undefined;
  const exclude = source.directory?.exclude ? globToRegExp(source.directory.exclude) : undefined;
  return names
    .filter((f) => /\.(ya?ml|json)$/.test(f))
    .filter((f) => !include || include.test(f))
    .filter((f) => !exclude?.test(f))
    .sort()
    .map((f) => join(source.path, f));
}

function parseFile(file: string): Manifest[] {
  const text = readFileSync(file, 'utf8');
  return file.endsWith('.json')
    ? [JSON.parse(text)].flat()
    : parseAllDocuments(text)
        .map((d) => d.toJS() as Manifest)
        .filter(Boolean);
}

const CLUSTER_SCOPED = new Set([
  'Namespace',
  'CustomResourceDefinition',
  'ClusterRole',
  'ClusterRoleBinding',
  'PersistentVolume',
  'StorageClass',
  'PriorityClass',
  'ValidatingWebhookConfiguration',
  'MutatingWebhookConfiguration',
  'APIService',
  'IngressClass',
  'ClusterIssuer',
  'FlowSchema',
  'PriorityLevelConfiguration',
]);
const NAMESPACED = new Set([
  'ConfigMap',
  'Secret',
  'Service',
  'ServiceAccount',
  'Deployment',
  'StatefulSet',
  'DaemonSet',
  'Job',
  'CronJob',
  'Role',
  'RoleBinding',
  'HorizontalPodAutoscaler',
  'PodDisruptionBudget',
  'Ingress',
  'NetworkPolicy',
  'PersistentVolumeClaim',
  'Lease',
  'Issuer',
  'Certificate',
]);

/**
 * What is wrong with syncing the repository `repo` (its dist/) with `apps`, one message per problem;
 * `documented`, the text that must name every alternative folder the Applications leave out.
 */
function problems(apps: readonly Application[], repo: string, documented: string): string[] {
  const out: string[] = [];
  const dist = join(repo, 'dist');
  const groupOf = (group: string) => group.split('/')[0];
  const all = readdirSync(dist, { recursive: true, encoding: 'utf8' }).filter((f) => /\.(ya?ml|json)$/.test(f));
  // Custom resources' scope, from the CRDs in dist/.
  const crdScope = new Map<string, string>();
  for (const m of all.flatMap((f) => parseFile(join(dist, f)))) {
    if (m.kind === 'CustomResourceDefinition') crdScope.set(`${m.spec.group}/${m.spec.names.kind}`, m.spec.scope);
  }
  const namespaced = (m: Manifest): boolean | undefined => {
    const group = m.apiVersion.includes('/') ? groupOf(m.apiVersion) : '';
    if (crdScope.has(`${group}/${m.kind}`)) return crdScope.get(`${group}/${m.kind}`) === 'Namespaced';
    return CLUSTER_SCOPED.has(m.kind) ? false : NAMESPACED.has(m.kind) ? true : undefined;
  };

  const readers = new Map<string, string[]>(); // dist/ folder → Applications reading from it
  const owners = new Map<string, string>(); // object → Application
  for (const app of apps) {
    const files: string[] = [];
    for (const source of app.sources) {
      const dir = join(repo, source.path ?? '');
      if (!source.path || !existsSync(dir) || !statSync(dir).isDirectory()) {
        out.push(`${app.name}: path ${source.path} is not a folder of the repository`);
        continue;
      }
      const read = directoryFiles(repo, source);
      if (read.length === 0)
        out.push(
          `${app.name}: ${source.path} holds no manifest Argo CD reads (it does not descend into subfolders without directory.recurse)`,
        );
      files.push(...read);
    }
    // Each folder it reads from, it reads whole: a folder is one deployable unit.
    for (const folder of new Set(files.map((f) => relative('dist', dirname(f))))) {
      readers.set(folder, [...(readers.get(folder) ?? []), app.name]);
      const unit = readdirSync(join(dist, folder))
        .filter((f) => /\.(ya?ml|json)$/.test(f))
        .map((f) => join('dist', folder, f));
      for (const f of unit)
        if (!files.includes(f)) out.push(`${app.name}: syncs ${join('dist', folder)}/ but not its ${f}`);
    }
    const seen = new Map<string, string>();
    for (const file of files) {
      for (const m of parseFile(join(repo, file))) {
        const where = `${app.name}: ${m.kind} ${m.metadata?.name} (${file})`;
        const wave = m.metadata?.annotations?.[SYNC_WAVE_ANNOTATION];
        if (!/^-?\d+$/.test(wave ?? '')) out.push(`${where} has no ${SYNC_WAVE_ANNOTATION}`);
        const isNamespaced = namespaced(m);
        let namespace = '';
        if (isNamespaced === undefined) out.push(`${where}: unknown kind, add its scope to this test`);
        else if (isNamespaced) {
          namespace = m.metadata.namespace ?? app.namespace ?? '';
          if (!namespace) out.push(`${where} has no namespace, nor has the Application a destination namespace`);
          else if (app.namespace && namespace !== app.namespace)
            out.push(`${where} is in namespace ${namespace}, not the destination namespace ${app.namespace}`);
        } else if (m.metadata.namespace)
          out.push(`${where} is cluster-scoped but names namespace ${m.metadata.namespace}`);
        const group = m.apiVersion.includes('/') ? groupOf(m.apiVersion) : '';
        const key = `${group}/${m.kind}/${namespace}/${m.metadata.name}`;
        if (seen.has(key)) out.push(`${app.name}: ${key} defined twice, in ${seen.get(key)} and ${file}`);
        else seen.set(key, file);
        if (owners.has(key) && owners.get(key) !== app.name)
          out.push(`${key} is synced by two Applications, ${owners.get(key)} and ${app.name}`);
        owners.set(key, app.name);
      }
    }
  }

  // Every folder of dist/ is synced by exactly one Application, but for alternatives: exactly one of each group.
  const folders = readdirSync(dist).filter((f) => statSync(join(dist, f)).isDirectory());
  const alternative = new Map(DIST_ALTERNATIVES.flatMap((group) => group.map((f) => [f, group] as const)));
  for (const folder of folders) {
    const by = readers.get(folder) ?? [];
    if (by.length > 1) out.push(`dist/${folder}/ is synced by ${by.length} Applications: ${by.join(', ')}`);
    if (by.length === 0 && !alternative.has(folder)) out.push(`dist/${folder}/ is synced by no Application`);
  }
  for (const group of DIST_ALTERNATIVES) {
    const synced = group.filter((f) => readers.has(f));
    if (synced.length !== 1)
      out.push(
        `exactly one of ${group.join(', ')} must be synced (they replace one another), not ${synced.length}: ${synced.join(', ')}`,
      );
    for (const f of group)
      if (!readers.has(f) && !documented.includes(f))
        out.push(`the alternative ${f} is neither synced nor named in the README's Argo CD section`);
  }
  return out;
}

/** The README's "Syncing with Argo CD" section. */
const argoSection = readme.slice(
  readme.indexOf('### Syncing with Argo CD'),
  readme.indexOf('\n## ', readme.indexOf('### Syncing with Argo CD')),
);
const apps = applicationsOf(yamlBlocks(readme));

describe("the README's Argo CD manifests against dist/", () => {
  test('define one Application per deployable unit', () => {
    expect(apps.length).toBeGreaterThanOrEqual(3);
    expect(new Set(apps.map((a) => a.name)).size).toBe(apps.length);
    expect(argoSection).toContain('```yaml');
  });

  test('sync every folder whole, each object once, each with a sync wave, in its destination namespace', () => {
    expect(problems(apps, root, argoSection)).toEqual([]);
  });

  // Switching an Application to another folder of its group, as the README says to: that passes too.
  test.each(DIST_ALTERNATIVES.flatMap((group) => group.map((folder) => [folder, group] as const)))(
    'with %s in place of its alternative',
    (folder, group) => {
      const switched = apps.map((app) => ({
        ...app,
        sources: app.sources.map((s) =>
          group.some((g) => s.path === `dist/${g}`) ? { ...s, path: `dist/${folder}` } : s,
        ),
      }));
      expect(switched.some((app) => app.sources.some((s) => s.path === `dist/${folder}`))).toBe(true);
      expect(problems(switched, root, argoSection)).toEqual([]);
    },
  );

  describe('the check itself', () => {
    // The README's Application before dist/ had a folder per unit: all of dist/ but one file.
    const old = applicationsOf(
      yamlBlocks(`\`\`\`yaml
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: website-stack
  namespace: argocd
spec:
  project: default
  source:
    repoURL: <your fork of this repository>
    targetRevision: main
    path: dist
    directory:
      exclude: website-shell-operator.yaml   # or website-operator.yaml, to run the shell operator
  destination:
    server: https://kubernetes.default.svc
  syncPolicy:
    automated: { prune: true, selfHeal: true }
\`\`\``),
    );

    test('refuses the old Application on the old flat dist/ (every chart one file in dist/): the trace stacks collide', () => {
      const repo = mkdtempSync(join(tmpdir(), 'old-dist-'));
      try {
        mkdirSync(join(repo, 'dist/stale'), { recursive: true });
        for (const app of Object.values(buildDist(join(repo, 'unused')))) {
          for (const chart of app.charts)
            writeFileSync(
              join(repo, 'dist', `${chart.node.id}.yaml`),
              chart
                .toJson()
                .map((m: Manifest) => JSON.stringify(m))
                .join('\n---\n'),
            );
        }
        const found = problems(old, repo, '');
        expect(found).toEqual(
          expect.arrayContaining([
            'website-stack: /Namespace//tracing defined twice, in dist/tracing-dev.yaml and dist/tracing-production-cassandra.yaml',
            'website-stack: apps/Deployment/tracing/otel-collector defined twice, in dist/tracing-dev.yaml and dist/tracing-production-cassandra.yaml',
            'website-stack: apps/Deployment/tracing/jaeger-collector defined twice, in dist/tracing-production-cassandra.yaml and dist/tracing-production-elasticsearch.yaml',
            'dist/stale/ is synced by no Application',
          ]),
        );
        // directory.exclude is honoured: the excluded shell operator's namespace collides with nothing.
        expect(found.filter((p) => p.includes('website-system'))).toEqual([]);
        // 17 objects both production stacks define, 6 of which (namespace, collector, the collector's
        // NetworkPolicy and the default deny) dev does too.
        expect(found.filter((p) => p.includes('defined twice'))).toHaveLength(17 + 6);
      } finally {
        rmSync(repo, { recursive: true, force: true });
      }
    });

    test('refuses the old Application on the new dist/: Argo CD does not descend into the folders', () => {
      expect(problems(old, root, '')).toEqual(
        expect.arrayContaining([
          'website-stack: dist holds no manifest Argo CD reads (it does not descend into subfolders without directory.recurse)',
          'dist/website-samples/ is synced by no Application',
          'exactly one of website-operator, website-shell-operator must be synced (they replace one another), not 0: ',
        ]),
      );
    });

    test('refuses both alternatives at once, a unit split across Applications, a missing wave and a foreign namespace', () => {
      const both = [
        ...apps,
        { name: 'shell', sources: [{ path: 'dist/website-shell-operator' }], namespace: 'website-system' },
      ];
      expect(problems(both, root, argoSection)).toEqual(
        expect.arrayContaining([
          expect.stringMatching(/^exactly one of website-operator, website-shell-operator must be synced .* not 2/),
        ]),
      );
      expect(problems(both, root, argoSection)).toContain(
        '/Namespace//website-system is synced by two Applications, website-api and shell',
      );

      const split = apps.map((a) =>
        a.sources[0].path === 'dist/website-operator'
          ? { ...a, sources: [{ path: a.sources[0].path, directory: { include: 'website-operator.yaml' } }] }
          : a,
      );
      expect(problems(split, root, argoSection)).toContain(
        'website-api: syncs dist/website-operator/ but not its dist/website-operator/website-crd.yaml',
      );

      const elsewhere = apps.map((a) =>
        a.sources[0].path === 'dist/website-samples' ? { ...a, namespace: 'default' } : a,
      );
      expect(problems(elsewhere, root, argoSection)).toContain(
        'website-samples: Website hello (dist/website-samples/website-samples.yaml) is in namespace website-system, not the destination namespace default',
      );

      const repo = mkdtempSync(join(tmpdir(), 'no-wave-'));
      try {
        mkdirSync(join(repo, 'dist/unit'), { recursive: true });
        writeFileSync(join(repo, 'dist/unit/a.yml'), 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n');
        expect(problems([{ name: 'unit', sources: [{ path: 'dist/unit' }], namespace: 'x' }], repo, '')).toEqual(
          expect.arrayContaining([`unit: ConfigMap a (dist/unit/a.yml) has no ${SYNC_WAVE_ANNOTATION}`]),
        );
      } finally {
        rmSync(repo, { recursive: true, force: true });
      }
    });

    test('renders ApplicationSet list generators, refusing unknown parameters', () => {
      expect(render({ a: ['dist/{{.folder}}', '{{ name }}'] }, { folder: 'f', name: 'n' })).toEqual({
        a: ['dist/f', 'n'],
      });
      expect(() => render('{{.nope}}', {})).toThrow(/nope/);
      expect(globToRegExp('{a.yaml,b/*}').test('b/c.yaml')).toBe(true);
      expect(globToRegExp('*.yaml').test('b/c.yaml')).toBe(false);
    });
  });
});
