import { App, Chart } from 'cdk8s';
import { createNamespace, deleteNamespace, getJson, kubectl, ok, website } from '../../harness/cluster/kube.ts';
import { eventually } from '../../harness/process/poll.ts';
import { WebsiteWorkload } from '../../lib/workload/website-workload.ts';

let ns: string;
beforeAll(async () => {
  ns = await createNamespace('workload', {
    'pod-security.kubernetes.io/enforce': 'restricted',
    'pod-security.kubernetes.io/warn': 'restricted',
  });
});
afterAll(() => deleteNamespace(ns));

/** The children the operator would apply for a Website as stored in the cluster. */
async function render(name: string) {
  const stored = await getJson(['website', name, '-n', ns]);
  const chart = new Chart(new App({ outdir: '/nonexistent' }), 'children');
  new WebsiteWorkload(chart, 'workload', { website: stored });
  return chart.toJson();
}

describe('WebsiteWorkload on a real cluster', () => {
  test('is admitted under Pod Security restricted, becomes available, and is collected with its Website', async () => {
    await ok(['create', '-f', '-'], {
      input: JSON.stringify(website('shop', ns, { title: '<b>Shop</b> & "more"', replicas: 3 })),
    });
    const children = await render('shop');
    const applied = await kubectl(['apply', '--server-side', '--field-manager=website-operator', '-f', '-'], {
      input: children.map((c) => JSON.stringify(c)).join('\n'),
    });
    expect([applied.code, applied.stderr]).toEqual([0, '']);

    // kwok's nodes run the pods: availableReplicas really reaches spec.replicas.
    const deployment = await eventually('3 available replicas', async () => {
      const d = await getJson(['deployment', 'website-shop', '-n', ns]);
      return d.status?.availableReplicas === 3 ? d : undefined;
    });
    expect(deployment.metadata.ownerReferences[0]).toMatchObject({
      kind: 'Website',
      name: 'shop',
      controller: true,
      blockOwnerDeletion: true,
    });
    const endpoints = await eventually('the Service to select the 3 pods', async () => {
      const slices = await getJson(['endpointslices', '-n', ns, '-l', 'kubernetes.io/service-name=website-shop']);
      const ready = slices.items
        .flatMap((s: { endpoints?: { conditions: { ready: boolean } }[] }) => s.endpoints ?? [])
        .filter((e: { conditions: { ready: boolean } }) => e.conditions.ready);
      return ready.length === 3 ? ready : undefined;
    });
    expect(endpoints).toHaveLength(3);

    await ok(['delete', 'website', 'shop', '-n', ns]);
    await eventually('the children to be garbage-collected', async () => {
      const left = await ok([
        'get',
        'deployments,services',
        '-n',
        ns,
        '-l',
        'app.kubernetes.io/instance=shop',
        '-o',
        'name',
      ]);
      return left.trim() === '' ? true : undefined;
    });
  });

  test("two Websites' Services select only their own pods", async () => {
    for (const name of ['left', 'right']) {
      await ok(['create', '-f', '-'], { input: JSON.stringify(website(name, ns, { title: name, replicas: 2 })) });
      await ok(['apply', '--server-side', '--field-manager=website-operator', '-f', '-'], {
        input: (await render(name)).map((c) => JSON.stringify(c)).join('\n'),
      });
    }
    for (const name of ['left', 'right']) {
      const pods = await eventually(`2 endpoints for ${name}`, async () => {
        const slices = await getJson(['endpointslices', '-n', ns, '-l', `kubernetes.io/service-name=website-${name}`]);
        const refs = slices.items
          .flatMap((s: { endpoints?: { targetRef: { name: string } }[] }) => s.endpoints ?? [])
          .map((e: { targetRef: { name: string } }) => e.targetRef.name);
        return refs.length === 2 ? refs : undefined;
      });
      for (const pod of pods) expect(pod).toMatch(new RegExp(`^website-${name}-`));
    }
  });
});
