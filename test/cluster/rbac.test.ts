import {
  createNamespace,
  deleteNamespace,
  kubectl,
  loadClusterInfo,
  ok,
  testDeployment,
  website,
} from '../../harness/cluster/kube.ts';
import { operatorRbacManifests } from '../../harness/operator/operator-manifests.ts';
import { createCertificateAuthority } from '../../operator/src/webhook/certificates.ts';

// The operator's ServiceAccount, Role, ClusterRole and their bindings exactly as dist/ ships them.
const rbac = operatorRbacManifests();
const NS = rbac.find((m) => m.kind === 'Namespace')!.metadata.name;
const USER = `system:serviceaccount:${NS}:website-operator`;
const WEBHOOK_SECRET = 'website-operator-webhook-tls';
const CRD = 'websites.web.example.com';

let token: string;
let other: string;
beforeAll(async () => {
  await ok(['apply', '--server-side', '-f', '-'], { input: rbac.map((m) => JSON.stringify(m)).join('\n') });
  // Fixtures of an earlier, interrupted run in this fixed namespace.
  await kubectl(['delete', 'deployment,service', 'website-rbac', '-n', NS, '--ignore-not-found', '--wait']);
  await kubectl(['delete', 'secret', WEBHOOK_SECRET, 'rbac-other-secret', '-n', NS, '--ignore-not-found']);
  await loadClusterInfo();
  token = (await ok(['create', 'token', 'website-operator', '-n', NS, '--duration=10m'])).trim();
  other = await createNamespace('rbac-other');
  await ok(['apply', '-f', '-'], { input: JSON.stringify(website('rbac', NS, { title: 'RBAC', replicas: 1 })) });
});
afterAll(async () => {
  await kubectl(['delete', 'website', 'rbac', '-n', NS, '--ignore-not-found']);
  await kubectl(['delete', 'secret', WEBHOOK_SECRET, 'rbac-other-secret', '-n', NS, '--ignore-not-found']);
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
const service = {
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name: 'website-rbac', namespace: NS, labels },
  spec: { selector: labels, ports: [{ port: 80 }] },
};
const watchOnce = (resource: string) => ['get', '--raw', `${resource}?watch=true&timeoutSeconds=1`];
const patchWebsite = (type: 'merge' | 'json', patch: string, ...flags: string[]) => [
  'patch',
  'website',
  'rbac',
  '-n',
  NS,
  ...flags,
  `--type=${type}`,
  '-p',
  patch,
];

describe("the operator's ServiceAccount, under exactly its Role", () => {
  test('websites: get, list, watch, update, patch; status: update, patch', async () => {
    const stored = JSON.parse(await allowed(['get', 'website', 'rbac', '-n', NS, '-o', 'json']));
    await allowed(['get', 'websites', '-n', NS]);
    await allowed(watchOnce(`/apis/web.example.com/v1/namespaces/${NS}/websites`));
    await allowed(['replace', '-f', '-'], { ...stored, metadata: { ...stored.metadata, labels: { replaced: 'yes' } } });
    await allowed(patchWebsite('merge', '{"metadata":{"finalizers":["websites.web.example.com/cleanup"]}}'));
    const current = JSON.parse(await allowed(['get', 'website', 'rbac', '-n', NS, '-o', 'json']));
    await allowed(['replace', '--subresource=status', '-f', '-'], { ...current, status: { availableReplicas: 0 } });
    await allowed(patchWebsite('merge', '{"status":{"url":"http://website-rbac"}}', '--subresource=status'));
    await allowed(patchWebsite('json', '[{"op":"remove","path":"/metadata/finalizers"}]'));
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
    const lease = {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name: 'website-operator', namespace: NS },
      spec: { holderIdentity: 'test' },
    };
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
      await allowed(['apply', '--server-side', '--field-manager=website-operator', '-f', '-'], {
        ...object,
        metadata: { ...object.metadata, annotations: { again: 'yes' } },
      });
    }
    await ok(['delete', 'deployment,service', 'website-rbac', '-n', NS]);
  });

  test('webhook Secret (built-in certificates): create, and get and update only that Secret', async () => {
    // A real pair: the API server warns about a kubernetes.io/tls Secret without PEM data.
    const pair = await createCertificateAuthority({ commonName: 'rbac-test', validityMs: 3600_000 });
    const b64 = (pem: string) => Buffer.from(pem).toString('base64');
    const tls = (name: string) => ({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name, namespace: NS },
      type: 'kubernetes.io/tls',
      data: { 'tls.crt': b64(pair.cert), 'tls.key': b64(pair.key), 'ca.crt': b64(pair.cert), 'ca.key': b64(pair.key) },
    });
    await allowed(['create', '-f', '-'], tls(WEBHOOK_SECRET));
    const stored = JSON.parse(await allowed(['get', 'secret', WEBHOOK_SECRET, '-n', NS, '-o', 'json']));
    await allowed(['replace', '-f', '-'], { ...stored, metadata: { ...stored.metadata, labels: { renewed: 'yes' } } });
    await forbidden([
      'patch',
      'secret',
      WEBHOOK_SECRET,
      '-n',
      NS,
      '--type=merge',
      '-p',
      '{"metadata":{"labels":{"x":"y"}}}',
    ]);
    await forbidden(['delete', 'secret', WEBHOOK_SECRET, '-n', NS]);
    await forbidden([
      'get',
      '--raw',
      `/api/v1/namespaces/${NS}/secrets?watch=true&fieldSelector=metadata.name%3D${WEBHOOK_SECRET}&timeoutSeconds=1`,
    ]);
    // Create cannot be limited by name: another Secret can be created, but then neither read nor changed.
    await allowed(['create', '-f', '-'], tls('rbac-other-secret'));
    await forbidden(['get', 'secret', 'rbac-other-secret', '-n', NS]);
    const otherSecret = JSON.parse(await ok(['get', 'secret', 'rbac-other-secret', '-n', NS, '-o', 'json']));
    await forbidden(['replace', '-f', '-'], {
      ...otherSecret,
      metadata: { ...otherSecret.metadata, labels: { renewed: 'yes' } },
    });
    // The Role is namespaced: a Secret of that name elsewhere is out of reach.
    await forbidden(['get', 'secret', WEBHOOK_SECRET, '-n', other]);
  });

  test('Website CRD (built-in certificates): get and patch that CRD only, nothing else on CRDs', async () => {
    await allowed(['get', 'crd', CRD, '-o', 'name']);
    // Dry run: authorized exactly like a real patch, without changing the CRD other tests use.
    await allowed([
      'patch',
      'crd',
      CRD,
      '--dry-run=server',
      '--type=merge',
      '-p',
      '{"metadata":{"annotations":{"rbac-probe":"x"}}}',
      '-o',
      'name',
    ]);
    await forbidden(['get', 'crds']);
    await forbidden(['get', 'crd', 'other.example.com']);
    await forbidden([
      'patch',
      'crd',
      'other.example.com',
      '--dry-run=server',
      '--type=merge',
      '-p',
      '{"metadata":{"annotations":{"x":"y"}}}',
    ]);
    await forbidden(['delete', 'crd', CRD, '--dry-run=server']);
    const crd = JSON.parse(await ok(['get', 'crd', CRD, '-o', 'json']));
    await forbidden(['replace', '--dry-run=server', '-f', '-'], crd);
  });

  test('is forbidden to create deployments in another namespace', async () => {
    await forbidden(['create', '-f', '-'], deployment(other));
  });
});
