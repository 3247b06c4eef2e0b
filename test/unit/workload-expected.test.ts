import { readFileSync } from 'node:fs';
import { synth } from '../../harness/manifests.ts';
import type { WebsiteV1 } from '../../lib/website/types.ts';
import { WebsiteWorkload, type WebsiteWorkloadProps } from '../../lib/workload/website-workload.ts';
import { renderWorkload } from '../../operator/src/reconciler/render.ts';

interface ExpectedCase {
  readonly name: string;
  readonly website: WebsiteV1;
  readonly options: Omit<WebsiteWorkloadProps, 'website'>;
  readonly deployment: Record<string, unknown>;
  readonly service: Record<string, unknown>;
}

// The Deployment and Service cdk8s-plus-34's k8s.KubeDeployment and k8s.KubeService synthesized
// for these Websites, before WebsiteWorkload moved to plain ApiObjects. Any change to this file
// changes every Website's children (and rolls every Deployment), so it is updated by hand, on purpose.
const cases = JSON.parse(
  readFileSync(new URL('./expected/website-workload.json', import.meta.url), 'utf8'),
) as ExpectedCase[];

describe.each(cases)('WebsiteWorkload for $name', ({ website, options, deployment, service }) => {
  // Compared as JSON text, so the order of keys is pinned too: the shell operator's template and
  // dist/ are serialized from this output.
  const expected = JSON.stringify([deployment, service]);

  test('synthesizes exactly the expected Deployment and Service', () => {
    expect(JSON.stringify(synth((chart) => new WebsiteWorkload(chart, 'w', { ...options, website })))).toBe(expected);
  });

  test("the operator's renderWorkload renders exactly the same", () => {
    const rendered = renderWorkload(website, options);
    expect(JSON.stringify(rendered.map((child) => child.object))).toBe(expected);
  });
});
