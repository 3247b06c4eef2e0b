// A fast pre-check of the Argo CD section of docs/use/dist-and-argocd.md, before the real Argo CD in test/argocd/ takes
// minutes to say the same: each claim names the test there that proves it on Argo CD itself. What
// only Argo CD can judge (how it reads a folder, the order it syncs in, health, pruning, drift) is
// left to that test.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { DIST_ALTERNATIVES } from '../../lib/app.ts';
import { ArgoSync } from '../../lib/argocd.ts';

type Manifest = Record<string, any>;
const root = fileURLToPath(new URL('../..', import.meta.url));
const page = readFileSync(join(root, 'docs/use/dist-and-argocd.md'), 'utf8');
const manifests: Manifest[] = [...page.matchAll(/```yaml\n([\s\S]*?)```/g)]
  .flatMap((m) => parseAllDocuments(m[1]).map((d) => d.toJS() as Manifest))
  .filter(Boolean);
const applicationSet = manifests.find((m) => m.kind === 'ApplicationSet');
const elements: Array<{ name: string; folder: string; namespace: string }> =
  applicationSet?.spec.generators[0].list.elements ?? [];
/** The ApplicationSet's text in that page: its comments name the alternatives of each element. */
const applicationSetText =
  page.match(/```yaml\n(kind: ApplicationSet|apiVersion[^\n]*\nkind: ApplicationSet)[\s\S]*?```/)?.[0] ?? '';
const distFolders = readdirSync(join(root, 'dist')).filter((f) => statSync(join(root, 'dist', f)).isDirectory());

/** `template` rendered for `element` as goTemplate with missingkey=error renders it: an unknown key throws. */
function render(template: unknown, element: Record<string, string>): unknown {
  if (typeof template === 'string')
    return template.replace(/\{\{\s*\.(\w+)\s*\}\}/g, (_, key: string) => {
      if (!(key in element)) throw new Error(`{{.${key}}} is not a key of the element ${JSON.stringify(element)}`);
      return element[key];
    });
  if (Array.isArray(template)) return template.map((v) => render(v, element));
  if (template && typeof template === 'object')
    return Object.fromEntries(Object.entries(template).map(([k, v]) => [k, render(v, element)]));
  return template;
}

describe('the Argo CD section of docs/use/dist-and-argocd.md (proven on Argo CD by test/argocd/argocd.test.ts)', () => {
  // Proven by "every Application reaches Synced and Healthy".
  test('its ApplicationSet renders, for every element, an Application syncing a folder of dist/', () => {
    expect(applicationSet?.spec.goTemplateOptions).toContain('missingkey=error');
    expect(elements.length).toBeGreaterThanOrEqual(3);
    for (const element of elements) {
      const application = render(applicationSet?.spec.template, element) as Manifest;
      expect(application.metadata.name).toBe(element.name);
      expect(application.spec.source.path).toBe(`dist/${element.folder}`);
      expect(distFolders).toContain(element.folder);
      expect(application.spec.destination.namespace).toBe(element.namespace);
    }
  });

  // Proven for each alternative by the "switching to the shell operator" and "switching the trace
  // stack" tests; that a folder no element names is never synced, only this test can say.
  test('every folder of dist/ is synced by one element, or is an alternative its comment names', () => {
    const synced = elements.map((e) => e.folder);
    for (const group of DIST_ALTERNATIVES) {
      expect(group.filter((folder) => synced.includes(folder))).toHaveLength(1);
      for (const folder of group) expect(applicationSetText).toContain(folder);
    }
    const alternatives = DIST_ALTERNATIVES.flat();
    expect(distFolders.filter((f) => !synced.includes(f) && !alternatives.includes(f))).toEqual([]);
  });

  // Proven by the Healthy, Progressing and Degraded states the real Argo CD reports.
  test("its argocd-cm carries the package's Website health check, as lib/argocd.ts renders it", () => {
    const argocdCm = manifests.find((m) => m.kind === 'ConfigMap' && m.metadata.name === 'argocd-cm');
    expect(argocdCm?.metadata.labels).toEqual({ 'app.kubernetes.io/part-of': 'argocd' });
    expect(argocdCm?.data).toEqual(ArgoSync.websiteHealthCheck());
  });
});
