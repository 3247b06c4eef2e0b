// The child caches' projection (operator/src/controller/projection.ts, childMasks in
// website-controller.ts): what a cached Deployment and Service keep of the objects the API server
// returns. The request budgets in reconcile-budget.test.ts prove the operator behaves the same with it.
import { isSubset } from '../../operator/src/controller/apply.ts';
import { fieldMask, maskOf, project, projection } from '../../operator/src/controller/projection.ts';
import { renderedKind, renderWorkload } from '../../operator/src/reconciler/render.ts';
import { childMasks } from '../../operator/src/reconciler/website-controller.ts';
import { testOperatorConfig } from './operator-config.ts';

const config = testOperatorConfig();
const website = (title: string, replicas: number, color: string) => ({
  apiVersion: 'web.example.com/v1' as const,
  kind: 'Website' as const,
  metadata: { name: 'shop', namespace: 'team-a', uid: '6f1c7a1e-0d8e-4a43-9d7a-3c0d3d4b1e11' },
  spec: { title, replicas, color },
});

/** A rendered Deployment as the API server would return it: defaults, status, managers' bookkeeping. */
function asStored(rendered: any): any {
  const stored = structuredClone(rendered);
  stored.metadata = {
    ...stored.metadata,
    uid: 'd-uid',
    resourceVersion: '42',
    generation: 3,
    creationTimestamp: '2026-11-26T00:00:00Z',
    annotations: { ...stored.metadata.annotations, 'deployment.kubernetes.io/revision': '3' },
  };
  Object.assign(stored.spec, { progressDeadlineSeconds: 600, revisionHistoryLimit: 10 });
  stored.spec.strategy = { type: 'RollingUpdate', rollingUpdate: { maxSurge: '25%', maxUnavailable: '25%' } };
  const pod = stored.spec.template.spec;
  Object.assign(pod, { dnsPolicy: 'ClusterFirst', restartPolicy: 'Always', schedulerName: 'default-scheduler' });
  for (const c of pod.containers)
    Object.assign(c, { terminationMessagePath: '/dev/termination-log', terminationMessagePolicy: 'File' });
  stored.status = {
    observedGeneration: 3,
    replicas: 2,
    updatedReplicas: 2,
    readyReplicas: 2,
    availableReplicas: 2,
    conditions: [{ type: 'Available', status: 'True', reason: 'MinimumReplicasAvailable', message: 'x'.repeat(200) }],
  };
  return stored;
}

describe('the child caches keep what the operator reads', () => {
  const masks = childMasks(config);
  const rendered = renderedKind(
    renderWorkload(website('Shop <b>', 2, '#123456'), { group: config.group }),
    'Deployment',
  );
  const cached = projection(masks.get('Deployment')!)(asStored(rendered)) as any;

  test('every field the operator renders, for any title, replica count and colour', () => {
    for (const [title, replicas, color] of [
      ['Shop <b>', 2, '#123456'],
      ['x'.repeat(4096), 5, '#fff'],
      ['$(id) `id`', 1, '#2196F3'],
    ] as const) {
      const desired = renderedKind(
        renderWorkload(website(title, replicas, color), { group: config.group }),
        'Deployment',
      );
      const stored = asStored(desired);
      expect(isSubset(desired, projection(masks.get('Deployment')!)(stored))).toBe(true);
    }
  });

  test('the metadata and the status fields it reads, and nothing the API server or controllers add', () => {
    expect(cached.metadata).toMatchObject({ uid: 'd-uid', resourceVersion: '42', generation: 3 });
    expect(cached.metadata.ownerReferences).toEqual(rendered.metadata!.ownerReferences);
    expect(cached.status).toEqual({ observedGeneration: 3, replicas: 2, updatedReplicas: 2, availableReplicas: 2 });
    expect(cached.spec.progressDeadlineSeconds).toBeUndefined();
    expect(cached.spec.strategy).toBeUndefined();
    expect(cached.spec.template.spec.dnsPolicy).toBeUndefined();
    expect(cached.spec.template.spec.containers[0].terminationMessagePath).toBeUndefined();
    const size = (o: unknown) => JSON.stringify(o).length;
    expect(size(cached)).toBeLessThan(size(asStored(rendered)));
  });

  test('a list keeps every element, so an element someone added is still a difference', () => {
    const stored = asStored(rendered);
    stored.spec.template.spec.containers.push({ name: 'sidecar', image: 'busybox', terminationMessagePath: '/x' });
    const projected = projection(masks.get('Deployment')!)(stored) as any;
    expect(projected.spec.template.spec.containers.map((c: { name: string }) => c.name)).toEqual(['web', 'sidecar']);
    expect(isSubset(rendered, projected)).toBe(false);
  });

  test('a value of another shape than the mask expects is kept whole', () => {
    expect(project({ spec: 'not an object' }, { spec: { replicas: true } })).toEqual({ spec: 'not an object' });
    expect(project({ a: [1, { b: 2, c: 3 }] }, maskOf({ a: [{ b: 0 }] }))).toEqual({ a: [1, { b: 2 }] });
  });

  test('masks unite: the union keeps what either keeps', () => {
    expect(fieldMask([{ a: { b: 1 } }, { a: { c: 1 }, d: [1] }])).toEqual({ a: { b: true, c: true }, d: true });
  });

  test('the Service keeps its rendered fields, not the addresses the API server assigns', () => {
    const service = renderedKind(renderWorkload(website('Shop', 1, '#fff'), { group: config.group }), 'Service') as any;
    const stored = structuredClone(service);
    Object.assign(stored.spec, { clusterIP: '10.0.0.7', clusterIPs: ['10.0.0.7'], ipFamilies: ['IPv4'] });
    const projected = projection(masks.get('Service')!)(stored) as any;
    expect(isSubset(service, projected)).toBe(true);
    expect(projected.spec.clusterIP).toBeUndefined();
  });
});
