// Websites in many namespaces: the real operator bundle as a process, authenticated as its
// ServiceAccount under exactly the RBAC the WebsiteOperator construct synthesizes for its
// watchNamespaces, against the real local cluster. Each test installs the operator's ServiceAccount
// in a namespace of its own, so no other test's operator or Role is touched.

import { createNamespace, deleteNamespace, getJson, kubectl, ok } from '../../harness/cluster/kube.ts';
import { type Manifest, synth } from '../../harness/manifests.ts';
import type { LogLine } from '../../harness/operator/operator-process.ts';
import { eventually } from '../../harness/process/poll.ts';
import { WatchNamespaces } from '../../lib/operator/watch-namespaces.ts';
import { WebsiteOperator, type WebsiteOperatorProps } from '../../lib/operator/website-operator.ts';
import { WebsiteCrd } from '../../lib/website/website-crd.ts';
import { OperatorProcess, serviceAccountKubeconfig } from './operator-process.ts';

const RBAC_KINDS = ['ServiceAccount', 'Role', 'RoleBinding', 'ClusterRole', 'ClusterRoleBinding'];

/** The ServiceAccount and RBAC of a WebsiteOperator with `props`, as `npm run synth` would write them. */
function operatorRbac(props: WebsiteOperatorProps): Manifest[] {
  return synth((chart) => new WebsiteOperator(chart, 'Operator', { createNamespace: false, ...props })).filter((m) =>
    RBAC_KINDS.includes(m.kind),
  );
}

const apply = (manifests: Manifest[]) =>
  ok(['apply', '--server-side', '--force-conflicts', '-f', '-'], {
    input: manifests.map((m) => JSON.stringify(m)).join('\n'),
  });

const websiteOf = (group: string, namespace: string, name: string) => ({
  apiVersion: `${group}/v1`,
  kind: 'Website',
  metadata: { name, namespace },
  spec: { title: `${name} in ${namespace}`, replicas: 1 },
});

const exists = async (kind: string, namespace: string, name: string) =>
  (await kubectl(['get', kind, name, '-n', namespace, '-o', 'name'])).code === 0;

/** The Website once its Ready condition is True, status caught up with the spec, and both children exist. */
const ready = (resource: string, namespace: string, name: string, timeoutMs = 60_000) =>
  eventually(
    `Website ${namespace}/${name} to be Ready`,
    async () => {
      const current = await getJson([resource, name, '-n', namespace]);
      const condition = current.status?.conditions?.find((c: any) => c.type === 'Ready');
      const done =
        condition?.status === 'True' &&
        current.status.availableReplicas === 1 &&
        (await exists('deployment', namespace, `website-${name}`)) &&
        (await exists('service', namespace, `website-${name}`));
      return done ? current : undefined;
    },
    timeoutMs,
  );

/** Websites of `resource` in `namespaces`, finalizers dropped (the operator is gone), then deleted with the namespaces. */
async function removeAll(resource: string, namespaces: string[]): Promise<void> {
  for (const namespace of namespaces) {
    const names = (await kubectl(['get', resource, '-n', namespace, '-o', 'name'])).stdout.split('\n').filter(Boolean);
    for (const name of names)
      await kubectl(['patch', name, '-n', namespace, '--type=merge', '-p', '{"metadata":{"finalizers":null}}']);
    await deleteNamespace(namespace);
  }
}

const running: OperatorProcess[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((operator) => operator.kill()));
});

describe("the operator watching a list of namespaces, as its ServiceAccount under the construct's Roles", () => {
  const GROUP = 'web.example.com';
  let operatorNs: string;
  let granted: string[];
  let notGranted: string;
  let notListed: string;

  beforeAll(async () => {
    operatorNs = await createNamespace('watch-op');
    granted = [await createNamespace('team-a'), await createNamespace('team-b')];
    notGranted = await createNamespace('team-c');
    notListed = await createNamespace('team-d');
  });
  afterAll(async () => {
    await removeAll('websites', [...granted, notGranted, notListed, operatorNs]);
    await kubectl([
      'delete',
      'clusterrole,clusterrolebinding',
      `website-operator-webhook-${operatorNs}`,
      '--ignore-not-found',
    ]);
  });

  test('Websites of both granted namespaces converge; one in a listed namespace without a Role, or in an unlisted one, gets nothing; the operator keeps running, says what is missing, and picks up the Role once applied', async () => {
    await apply(operatorRbac({ namespace: operatorNs, watchNamespaces: WatchNamespaces.of(...granted) }));
    for (const namespace of [...granted, notGranted, notListed])
      await ok(['apply', '-f', '-'], { input: JSON.stringify(websiteOf(GROUP, namespace, 'site')) });

    const kubeconfig = await serviceAccountKubeconfig('website-operator', operatorNs);
    const operator = await OperatorProcess.start('op-watch-list', kubeconfig, {
      OPERATOR_NAMESPACE: operatorNs,
      WATCH_NAMESPACE: [...granted, notGranted].join(','),
      // Beyond the test's patience: the namespace without a Role must not hold up the others.
      CACHE_SYNC_TIMEOUT_SECONDS: '600',
    });
    running.push(operator);

    for (const namespace of granted) {
      const current = await ready('websites', namespace, 'site');
      expect(current.status.url).toBe(`http://website-site.${namespace}.svc.cluster.local`);
      const deployment = await getJson(['deployment', 'website-site', '-n', namespace]);
      expect(deployment.metadata.ownerReferences).toEqual([
        expect.objectContaining({ kind: 'Website', name: 'site', uid: current.metadata.uid, controller: true }),
      ]);
      // The event is written in the Website's own namespace, under the Role there.
      await eventually(`the Created event in ${namespace}`, async () => {
        const events = await getJson([
          'events',
          '-n',
          namespace,
          '--field-selector',
          `involvedObject.uid=${current.metadata.uid}`,
        ]);
        return events.items.some((e: any) => e.reason === 'Created') || undefined;
      });
    }

    // The listed namespace without a Role: an error naming it, its resource and the fix, at each retry.
    const errors = await eventually('two errors about each resource in the namespace without a Role', async () => {
      const found = operator.logs.filter((l: LogLine) => l.level === 'error' && l.namespace === notGranted);
      return ['websites', 'deployments', 'services'].every(
        (resource) => found.filter((l) => l.resource === resource).length >= 2,
      )
        ? found
        : undefined;
    });
    expect(errors.find((l) => l.resource === 'websites')).toMatchObject({
      msg: `list/watch of websites in namespace ${notGranted} is forbidden; retrying`,
      fix: expect.stringContaining(`grant this ServiceAccount the Website rules in namespace ${notGranted}`),
    });
    // Its caches fill from streaming lists: the watch is what is refused.
    expect(errors[0].error).toContain(
      `User "system:serviceaccount:${operatorNs}:website-operator" cannot watch resource`,
    );
    expect(operator.logs.filter((l) => l.level === 'error' && l.namespace !== notGranted)).toEqual([]);

    // Nothing happened to the Websites the operator may not or need not touch.
    for (const namespace of [notGranted, notListed]) {
      const untouched = await getJson(['website', 'site', '-n', namespace]);
      expect([namespace, untouched.status, untouched.metadata.finalizers]).toEqual([namespace, undefined, undefined]);
      expect(await exists('deployment', namespace, 'website-site')).toBe(false);
      expect(await exists('service', namespace, 'website-site')).toBe(false);
    }
    expect(operator.running).toBe(true);
    expect((await operator.get('/healthz', operator.healthPort)).status).toBe(200);
    const readyz = await operator.get('/readyz', operator.healthPort);
    expect(readyz.status).toBe(503);
    expect(readyz.body.split('\n').filter((line: string) => line.startsWith('[-]'))).toEqual([
      `[-]caches of namespace ${notGranted} failed`,
    ]);
    expect(await operator.metric('watched_namespace_synced', { namespace: notGranted })).toBe(0);
    expect(await operator.metric('watched_namespace_synced', { namespace: granted[0] })).toBe(1);

    // The Role the construct adds for it, applied while the operator runs: picked up at the next retry.
    await apply(operatorRbac({ namespace: operatorNs, watchNamespaces: WatchNamespaces.of(...granted, notGranted) }));
    await ready('websites', notGranted, 'site', 90_000);
    expect((await operator.get('/readyz', operator.healthPort)).status).toBe(200);
    expect(await exists('deployment', notListed, 'website-site')).toBe(false);
    expect(await operator.stop()).toBe(0);
  });
});

describe("the operator watching all namespaces, as its ServiceAccount under the construct's ClusterRole", () => {
  // A group of its own, so that an operator watching every namespace reconciles no other test's Websites.
  const GROUP = 'all-namespaces.example.com';
  const RESOURCE = `websites.${GROUP}`;
  let operatorNs: string;
  let teams: string[];

  beforeAll(async () => {
    operatorNs = await createNamespace('watch-all-op');
    teams = [await createNamespace('team-x'), await createNamespace('team-y')];
    const crd = synth(
      (chart) =>
        new WebsiteCrd(chart, 'Crd', { group: GROUP, versions: [{ name: 'v1', served: true, storage: true }] }),
    );
    await apply(crd);
    await ok(['wait', '--for=condition=Established', '--timeout=60s', `crd/${RESOURCE}`]);
  });
  afterAll(async () => {
    await removeAll(RESOURCE, [...teams, operatorNs]);
    await kubectl(['delete', 'crd', RESOURCE, '--ignore-not-found', '--wait=true', '--timeout=60s']);
    // kubectl's discovery cache still names this group's `websites` (and `ws`): later tests' plain
    // `kubectl get websites` would resolve to it. api-resources discovers afresh and rewrites the cache.
    await ok(['api-resources', '--api-group', GROUP]);
    await kubectl([
      'delete',
      'clusterrole,clusterrolebinding',
      `website-operator-${operatorNs}`,
      `website-operator-webhook-${operatorNs}`,
      '--ignore-not-found',
    ]);
  });

  test('Websites of every namespace converge, including a namespace created after the operator started; no Role is needed in any of them', async () => {
    const rbac = operatorRbac({ namespace: operatorNs, group: GROUP, watchNamespaces: WatchNamespaces.all() });
    expect(rbac.filter((m) => m.kind === 'Role').map((m) => m.metadata.namespace)).toEqual([operatorNs]);
    await apply(rbac);
    for (const namespace of teams)
      await ok(['apply', '-f', '-'], { input: JSON.stringify(websiteOf(GROUP, namespace, 'site')) });

    const kubeconfig = await serviceAccountKubeconfig('website-operator', operatorNs);
    const operator = await OperatorProcess.start('op-watch-all', kubeconfig, {
      OPERATOR_NAMESPACE: operatorNs,
      WEBSITE_GROUP: GROUP,
      WATCH_NAMESPACE: '*',
    });
    running.push(operator);
    for (const namespace of teams) await ready(RESOURCE, namespace, 'site');

    const later = await createNamespace('team-z');
    teams.push(later);
    await ok(['apply', '-f', '-'], { input: JSON.stringify(websiteOf(GROUP, later, 'site')) });
    await ready(RESOURCE, later, 'site');

    // One cluster-wide streaming list, which goes on as the watch: no list, and no second watch.
    expect(await operator.metric('rest_client_requests_total', { verb: 'LIST', resource: 'websites' })).toBe(0);
    expect(
      await operator.metric('rest_client_requests_total', { verb: 'WATCH', resource: 'websites', code: '200' }),
    ).toBe(1);
    const readyz = await operator.get('/readyz', operator.healthPort);
    expect([readyz.status, readyz.body.split('\n')[0]]).toEqual([200, '[+]caches ok']);
    expect(await operator.metric('watched_namespace_synced', { namespace: '*' })).toBe(1);
    expect(operator.logs.filter((l) => l.level === 'error')).toEqual([]);
    expect(await operator.stop()).toBe(0);
  });
});
