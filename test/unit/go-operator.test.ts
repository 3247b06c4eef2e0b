// The benchmark's Go peer (bench/go-operator/main.go) fills in the template renderWorkload's output
// becomes (harness/go-operator): the placeholders of the one must be the markers of the other. That
// its children equal ours is checked on the cluster by the benchmark, which builds and runs it.
import { readFileSync } from 'node:fs';
import { CONTROLLER_RUNTIME_VERSION, goOperatorTemplate } from '../../harness/go-operator/go-operator.ts';
import type { WebsiteV1 } from '../../lib/website/types.ts';
import { escapeHtml, textColorOn } from '../../lib/workload/page.ts';
import { renderedKind, renderWorkload } from '../../operator/src/reconciler/render.ts';

const program = readFileSync(new URL('../../bench/go-operator/main.go', import.meta.url), 'utf8');
const placeholders = Object.fromEntries(
  [...program.matchAll(/^\s*placeholder(\w+)\s*=\s*"([^"]+)"$/gm)].map(([, name, value]) => [name, value]),
);

describe('the Go peer and its template', () => {
  test('the program replaces every placeholder the template holds, and the template holds nothing else of a Website', () => {
    expect(Object.keys(placeholders).sort()).toEqual(['Background', 'Foreground', 'Name', 'Namespace', 'Text', 'UID']);
    // Go's strings.Replacer takes the first placeholder that matches at a position: none may hold another.
    for (const a of Object.values(placeholders))
      for (const b of Object.values(placeholders)) if (a !== b) expect(a.includes(b)).toBe(false);
    const text = JSON.stringify(goOperatorTemplate());
    for (const value of Object.values(placeholders)) expect(text).toContain(value);
    expect(text.match(/go-placeholder-[a-z]+/g)!.every((m) => Object.values(placeholders).includes(m))).toBe(true);
  });

  test('filled in by hand as the program does, the template is what renderWorkload renders', () => {
    const website: WebsiteV1 = {
      apiVersion: 'web.example.com/v1',
      kind: 'Website',
      metadata: { name: 'shop', namespace: 'team-a', uid: '1234', generation: 1 },
      spec: { title: 'Fish &amp; Chips', replicas: 2, color: '#2196F3' },
    };
    const fill = (value: string) =>
      value
        .replaceAll(placeholders.Namespace, 'team-a')
        .replaceAll(placeholders.Name, 'shop')
        .replaceAll(placeholders.UID, '1234')
        .replaceAll(placeholders.Text, escapeHtml('Fish &amp; Chips'))
        .replaceAll(placeholders.Background, '#2196F3')
        .replaceAll(placeholders.Foreground, textColorOn('#2196F3'));
    const { deployment, service } = JSON.parse(fill(JSON.stringify(goOperatorTemplate())));
    deployment.spec.replicas = 2;
    const rendered = renderWorkload(website);
    expect(deployment).toEqual(renderedKind(rendered, 'Deployment'));
    expect(service).toEqual(renderedKind(rendered, 'Service'));
  });

  test('controller-runtime is pinned in its go.mod', () => {
    expect(CONTROLLER_RUNTIME_VERSION).toMatch(/^v0\.\d+\.\d+$/);
  });
});
