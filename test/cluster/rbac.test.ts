import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { ROOT } from './env.ts';
import { createNamespace, deleteNamespace, kubectl, loadClusterInfo, ok, testDeployment, website } from './kube.ts';

// The operator's ServiceAccount, Role and RoleBinding exactly as dist/ ships them.
const operatorManifests = parseAllDocuments(readFileSync(join(ROOT, 'dist/website-operator.yaml'), 'utf8')).map((d) => d.toJS());
const NS = operatorManifests.find((m) => m.kind === 'Namespace').metadata.name;
const USER = `system:serviceaccount:${NS}:website-operator`;

let token: string;
let other: string;
beforeAll(async () => {
  const rbac = operatorManifests.filter((m) => ['Namespace', 'ServiceAccount', 'Role', 'RoleBinding'].includes(m.kind));
  await ok(['apply', '--server-side', '-f', '-'], { input: rbac.map((m) => JSON.stringify(m)).join('\n') });
  // Fixtures of an earlier, interrupted run in this fixed namespace.
  await kubectl(['delete', 'deployment,service', 'website-rbac', '-n', NS, '--ignore-not-found', '--wait']);
  await loadClusterInfo();
  token = (await ok(['create', 'token', 'website-operator', '-n', NS, '--duration=10m'])).trim();
  other = await createNamespace('rbac-other');
  await ok(['apply', '-f', '-'], { input: JSON.stringify(website('rbac', NS, { title: 'RBAC', replicas: 1 })) });
});
afterAll(async () => {
  await kubectl(['delete', 'website', 'rbac', '-n', NS, '--ignore-not-found']);
  await deleteNamespace(other);
});

const asOperator = (args: string[], input?: object) => kubectl(args, { token, input: input && JSON.stringify(input) });
const allowed = async (args: string[], input?: object) => {
  const result = await asOperator(args, input);
  expect([args.join(' '), result.code, result.stderr]).toEqual([args.join(' '), 0, '']);
  return result.stdout;
};
const forbidden = async (args: string[], input?: object) => {
  const result = await asOperator(args, input);
  expect(result.code).not.toBe(0);
  expect(result.stderr).toContain(`is forbidden: User "${USER}" cannot`);
};

const labels = { 'app.kubernetes.io/name': 'website', 'app.kubernetes.io/instance': 'rbac' };
const deployment = (namespace: string) => testDeployment('rbac', namespace);
const service = { apiVersion: 'v1', kind: 'Service', metadata: { name: 'website-rbac', namespace: NS, labels }, spec: { selector: labels, ports: [{ port: 80 }] } };
const watchOnce = (resource: string) => ['get', '--raw', `${resource}?watch=true&timeoutSeconds=1`];

describe("the operator's ServiceAccount, under exactly its Role", () => {
  test('websites: get, list, watch, update, patch; status: update, patch', async () => {
    const stored = JSON.parse(await allowed(['get', 'website', 'rbac', '-n', NS, '-o', 'json']));
    await allowed(['get', 'websites', '-n', NS]);
    await allowed(watchOnce(`/apis/web.example.com/v1/namespaces/${NS}/websites`));
    await allowed(['replace', '-f', '-'], { ...stored, metadata: { ...stored.metadata, labels: { replaced: 'yes' } } });
    await allowed(['patch', 'website', 'rbac', '-n', NS, '--type=merge', '-p', '{"metadata":{"finalizers":["websites.web.example.com/cleanup"]}}']);
    const current = JSON.parse(await allowed(['get', 'website', 'rbac', '-n', NS, '-o', 'json']));
    await allowed(['replace', '--subresource=status', '-f', '-'], { ...current, status: { availableReplicas: 0 } });
    await allowed(['patch', 'website', 'rbac', '-n', NS, '--subresource=status', '--type=merge', '-p', '{"status":{"url":"http://website-rbac"}}']);
    await allowed(['patch', 'website', 'rbac', '-n', NS, '--type=json', '-p', '[{"op":"remove","path":"/metadata/finalizers"}]']);
  });

  test('deployments and services: create, get, list, watch, update, delete', async () => {
    for (const [object, resource, path] of [
      [deployment(NS), 'deployment', `/apis/apps/v1/namespaces/${NS}/deployments`],
      [service, 'service', `/api/v1/namespaces/${NS}/services`],
    ] as const) {
      await allowed(['create', '-f', '-'], object);
      const stored = JSON.parse(await allowed(['get', resource, 'website-rbac', '-n', NS, '-o', 'json']));
      await allowed(['get', `${resource}s`, '-n', NS]);
      await allowed(watchOnce(path));
      // Without resourceVersion the update is unconditional: the Deployment controller writes status concurrently.
      const { resourceVersion: _, ...metadata } = stored.metadata;
      await allowed(['replace', '-f', '-'], { ...stored, metadata: { ...metadata, annotations: { updated: 'yes' } } });
      await allowed(['delete', resource, 'website-rbac', '-n', NS, '--wait=false']);
    }
  });

  test('events: create', async () => {
    await allowed(['create', '-f', '-'], {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { generateName: 'rbac-test-', namespace: NS },
      involvedObject: { apiVersion: 'web.example.com/v1', kind: 'Website', name: 'rbac', namespace: NS },
      reason: 'Created',
      message: 'created by the RBAC test',
      type: 'Normal',
      source: { component: 'website-operator' },
    });
  });

  test('leases: create, and get and update only its own Lease', async () => {
    const lease = { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: 'website-operator', namespace: NS }, spec: { holderIdentity: 'test' } };
    await kubectl(['delete', 'lease', 'website-operator', '-n', NS, '--ignore-not-found']);
    await allowed(['create', '-f', '-'], lease);
    const stored = JSON.parse(await allowed(['get', 'lease', 'website-operator', '-n', NS, '-o', 'json']));
    await allowed(['replace', '-f', '-'], { ...stored, spec: { holderIdentity: 'test-2' } });
    await forbidden(['get', 'lease', 'someone-else', '-n', NS]);
    await forbidden(['delete', 'lease', 'website-operator', '-n', NS]);
  });

  test.each<[string, string[], object | undefined]>([
    ['delete websites', ['delete', 'website', 'rbac', '-n', NS], undefined],
    ['create websites', ['create', '-f', '-'], website('new', NS, { title: 'N', replicas: 1 })],
    ['get secrets', ['get', 'secrets', '-n', NS], undefined],
    ['list pods', ['get', 'pods', '-n', NS], undefined],
    ['list websites cluster-wide', ['get', 'websites', '--all-namespaces'], undefined],
    ['update configmaps', ['create', 'configmap', 'x', '-n', NS], undefined],
  ])('is forbidden to %s', async (_, args, input) => {
    await forbidden(args, input);
  });

  test('may server-side apply Deployments and Services (create through apply, then update through apply)', async () => {
    for (const object of [deployment(NS), service]) {
      await allowed(['apply', '--server-side', '--field-manager=website-operator', '-f', '-'], object);
      await allowed(['apply', '--server-side', '--field-manager=website-operator', '-f', '-'], { ...object, metadata: { ...object.metadata, annotations: { again: 'yes' } } });
    }
    await ok(['delete', 'deployment,service', 'website-rbac', '-n', NS]);
  });

  test('is forbidden to create deployments in another namespace', async () => {
    await forbidden(['create', '-f', '-'], deployment(other));
  });
});
