// The operator end to end: the real entrypoint as a process, authenticated as its ServiceAccount
// under exactly the Role dist/ ships, against the real local cluster (kwok pods become Ready).

import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { KUBECONFIG as ADMIN_KUBECONFIG, CLUSTER_ENV, ROOT } from '../../harness/cluster/env.ts';
import { TestHostAddress } from '../../harness/cluster/host-address.ts';
import { getJson, kubectl, ok, website } from '../../harness/cluster/kube.ts';
import {
  localEndpointRbacManifests,
  OPERATOR_NS as NS,
  operatorRbacManifests,
  webhookServiceManifest,
} from '../../harness/operator/operator-manifests.ts';
import { eventually } from '../../harness/process/poll.ts';
import { freePort } from '../../harness/process/ports.ts';
import { jaegerTraces, startStack, synthYaml } from '../../harness/trace/traces.ts';
import { JaegerAllInOne } from '../../lib/tracing/jaeger-all-in-one.ts';
import { escapeHtml, renderPage } from '../../lib/workload/page.ts';
import { OperatorProcess, serviceAccountKubeconfig } from './operator-process.ts';

const rbac = operatorRbacManifests();
const role = rbac.find((m) => m.kind === 'Role')!;
const LABEL = 'website-stack/test=operator';
const FINALIZER = 'websites.web.example.com/cleanup';

let kubeconfig: string;
const running: OperatorProcess[] = [];
const start = async (identity: string, env: Record<string, string> = {}) => {
  const operator = await OperatorProcess.start(identity, kubeconfig, env);
  running.push(operator);
  return operator;
};

async function applyRbac(roleObject = role) {
  const objects = rbac.map((m) => (m.kind === 'Role' ? roleObject : m));
  await ok(['apply', '--server-side', '--force-conflicts', '-f', '-'], {
    input: objects.map((m) => JSON.stringify(m)).join('\n'),
  });
}

/** Websites of this file, finalizers dropped (no operator may be running to remove them). */
async function removeWebsites() {
  const names = (await ok(['get', 'websites', '-n', NS, '-l', LABEL, '-o', 'name'])).split('\n').filter(Boolean);
  for (const name of names)
    await kubectl(['patch', name, '-n', NS, '--type=merge', '-p', '{"metadata":{"finalizers":null}}']);
  if (names.length) await ok(['delete', ...names, '-n', NS, '--ignore-not-found', '--wait=true']);
}

beforeAll(async () => {
  await applyRbac();
  await removeWebsites();
  await kubectl(['delete', 'lease', 'website-operator', '-n', NS, '--ignore-not-found']);
  kubeconfig = await serviceAccountKubeconfig();
});
afterEach(async () => {
  await Promise.all(running.splice(0).map((operator) => operator.kill()));
});
afterAll(async () => {
  await applyRbac();
  await removeWebsites();
});

async function createWebsite(name: string, spec: Record<string, unknown>) {
  await ok(['apply', '-f', '-'], {
    input: JSON.stringify(website(name, NS, spec, { labels: { 'website-stack/test': 'operator' } })),
  });
}
const websiteJson = (name: string) => getJson(['website', name, '-n', NS]);
const deploymentOf = (name: string) => getJson(['deployment', `website-${name}`, '-n', NS]);
const exists = async (kind: string, name: string) => (await kubectl(['get', kind, name, '-n', NS])).code === 0;
const envOf = (deployment: any, name: string) =>
  deployment.spec.template.spec.containers[0].env.find((e: any) => e.name === name)?.value as string;
/** Events about this Website (by uid: events of an earlier run's namesake Website live on for an hour). */
const events = async (name: string) => {
  const { uid } = (await websiteJson(name)).metadata;
  return (await getJson(['events', '-n', NS, '--field-selector', `involvedObject.uid=${uid}`])).items as any[];
};

/** The Website's Ready condition once it is True (and status caught up with the spec). */
const ready = (name: string, timeoutMs = 60_000) =>
  eventually(
    `Website ${name} to be Ready`,
    async () => {
      const current = await websiteJson(name);
      const condition = current.status?.conditions?.find((c: any) => c.type === 'Ready');
      return condition?.status === 'True' &&
        current.status.observedGeneration === current.metadata.generation &&
        current.status.availableReplicas === current.spec.replicas
        ? current
        : undefined;
    },
    timeoutMs,
  );

describe('the operator, running as its ServiceAccount', () => {
  test('a new Website gets its Deployment and Service, owned by it, and a status that follows the pods', async () => {
    const operator = await start('op-create');
    await createWebsite('e2e-create', { title: 'Hello <e2e> & "friends"', replicas: 3, color: '#FF5722' });
    const current = await ready('e2e-create');
    const { uid } = current.metadata;
    const owner = [
      {
        apiVersion: 'web.example.com/v1',
        kind: 'Website',
        name: 'e2e-create',
        uid,
        controller: true,
        blockOwnerDeletion: true,
      },
    ];

    expect(current.metadata.finalizers).toEqual([FINALIZER]);
    expect(current.status).toMatchObject({
      availableReplicas: 3,
      url: 'http://website-e2e-create.website-system.svc.cluster.local',
      observedGeneration: 1,
    });
    expect(current.status.conditions).toEqual([
      expect.objectContaining({
        type: 'Ready',
        status: 'True',
        reason: 'Available',
        message: '3/3 replicas available',
        observedGeneration: 1,
      }),
    ]);

    const deployment = await getJson(['deployment', 'website-e2e-create', '-n', NS, '--show-managed-fields']);
    expect(deployment.metadata.ownerReferences).toEqual(owner);
    expect(deployment.metadata.labels).toMatchObject({
      'app.kubernetes.io/instance': 'e2e-create',
      'app.kubernetes.io/managed-by': 'website-operator',
    });
    expect(deployment.spec.replicas).toBe(3);
    expect(deployment.spec.selector.matchLabels).toEqual({
      'app.kubernetes.io/name': 'website',
      'app.kubernetes.io/instance': 'e2e-create',
    });
    expect(envOf(deployment, 'WEBSITE_HTML')).toBe(renderPage('Hello <e2e> & "friends"', '#FF5722'));
    expect(envOf(deployment, 'WEBSITE_HTML')).toContain(escapeHtml('Hello <e2e> & "friends"'));
    // Created by a POST that names the operator's field manager (the cache said it was absent).
    expect(deployment.metadata.managedFields.map((f: any) => `${f.manager}/${f.operation}`)).toContain(
      'website-operator/Update',
    );

    const service = await getJson(['service', 'website-e2e-create', '-n', NS]);
    expect(service.metadata.ownerReferences).toEqual(owner);
    expect(service.spec.selector).toEqual(deployment.spec.selector.matchLabels);
    expect(service.spec.ports).toEqual([expect.objectContaining({ port: 80, targetPort: 'http' })]);

    // One event for both children, written in the background.
    await eventually(
      'the Created event',
      async () =>
        (await events('e2e-create')).some(
          (e) =>
            `${e.type}/${e.reason}: ${e.message}` ===
            'Normal/Created: Created Deployment website-e2e-create and Service website-e2e-create',
        ) || undefined,
    );
    expect((await operator.get('/readyz', operator.healthPort)).status).toBe(200);
    expect(await operator.metric('controller_runtime_reconcile_total', { result: 'success' })).toBeGreaterThan(0);
  });

  test('changing replicas, title or colour updates the Deployment (spec operator rule 2)', async () => {
    await start('op-update');
    await createWebsite('e2e-update', { title: 'Before', replicas: 1 });
    await ready('e2e-update');
    await ok([
      'patch',
      'website',
      'e2e-update',
      '-n',
      NS,
      '--type=merge',
      '-p',
      JSON.stringify({ spec: { title: 'After', replicas: 4, color: '#000' } }),
    ]);
    const current = await ready('e2e-update');
    expect(current.status).toMatchObject({ availableReplicas: 4, observedGeneration: 2 });
    const deployment = await deploymentOf('e2e-update');
    expect(deployment.spec.replicas).toBe(4);
    expect(envOf(deployment, 'WEBSITE_HTML')).toBe(renderPage('After', '#000'));
    // An existing child is changed by server-side apply.
    const managers = (
      await getJson(['deployment', 'website-e2e-update', '-n', NS, '--show-managed-fields'])
    ).metadata.managedFields.map((f: any) => `${f.manager}/${f.operation}`);
    expect(managers).toContain('website-operator/Apply');
    await eventually(
      'the Updated event',
      async () =>
        (await events('e2e-update')).some(
          (e) => e.reason === 'Updated' && e.message === 'Updated Deployment website-e2e-update',
        ) || undefined,
    );
  });

  test('deleting a Website runs the finalizer, then its children are gone', async () => {
    await start('op-delete');
    await createWebsite('e2e-delete', { title: 'Short-lived', replicas: 1 });
    await ready('e2e-delete');
    await ok(['delete', 'website', 'e2e-delete', '-n', NS, '--wait=true', '--timeout=60s']);
    await eventually('children to be gone', async () =>
      !(await exists('deployment', 'website-e2e-delete')) && !(await exists('service', 'website-e2e-delete'))
        ? true
        : undefined,
    );
    expect(await exists('website', 'e2e-delete')).toBe(false);
  });

  test('a Deployment or Service changed or deleted by someone else is restored', async () => {
    await start('op-drift');
    await createWebsite('e2e-drift', { title: 'Drift', replicas: 2 });
    await ready('e2e-drift');
    await ok(['scale', 'deployment', 'website-e2e-drift', '-n', NS, '--replicas=5']);
    await ok([
      'patch',
      'service',
      'website-e2e-drift',
      '-n',
      NS,
      '--type=merge',
      '-p',
      '{"spec":{"selector":{"app.kubernetes.io/instance":"someone-else"}}}',
    ]);
    await eventually('the Deployment to be scaled back', async () =>
      (await deploymentOf('e2e-drift')).spec.replicas === 2 ? true : undefined,
    );
    await eventually('the Service selector to be restored', async () =>
      (await getJson(['service', 'website-e2e-drift', '-n', NS])).spec.selector['app.kubernetes.io/instance'] ===
      'e2e-drift'
        ? true
        : undefined,
    );
    const uid = (await getJson(['service', 'website-e2e-drift', '-n', NS])).metadata.uid;
    await ok(['delete', 'service', 'website-e2e-drift', '-n', NS]);
    await eventually('the Service to be recreated', async () => {
      const service = await getJson(['service', 'website-e2e-drift', '-n', NS]);
      return service.metadata.uid !== uid ? true : undefined;
    });
  });

  test('an idle resync reconciles every Website and writes nothing', async () => {
    const operator = await start('op-idle', { RESYNC_SECONDS: '1' });
    await createWebsite('e2e-idle-a', { title: 'Idle A', replicas: 1 });
    await createWebsite('e2e-idle-b', { title: 'Idle B', replicas: 2 });
    await ready('e2e-idle-a');
    await ready('e2e-idle-b');
    // Let the last status writes land, then watch two resyncs of both Websites: however long a
    // busy machine takes for them, none of them writes.
    await new Promise((r) => setTimeout(r, 2_000));
    const writes = await operator.writes();
    const reconciles = await operator.metric('controller_runtime_reconcile_total');
    await eventually('two idle resyncs of both Websites', async () =>
      (await operator.metric('controller_runtime_reconcile_total')) >= reconciles + 4 ? true : undefined,
    );
    expect(await operator.writes()).toBe(writes);
  });

  test('kill -9 mid-way: a restarted operator converges, with one Deployment, Service and ReplicaSet per Website', async () => {
    const names = Array.from({ length: 8 }, (_, i) => `e2e-kill-${i}`);
    for (const name of names) await createWebsite(name, { title: name, replicas: 2 });
    const first = await start('op-kill-1');
    await eventually(
      'the first child',
      async () =>
        (
          await ok([
            'get',
            'deployments',
            '-n',
            NS,
            '-l',
            'app.kubernetes.io/instance in (e2e-kill-0,e2e-kill-1,e2e-kill-2,e2e-kill-3,e2e-kill-4,e2e-kill-5,e2e-kill-6,e2e-kill-7)',
            '-o',
            'name',
          ])
        ).trim()
          ? true
          : undefined,
      30_000,
    );
    await first.kill();
    expect(first.running).toBe(false);

    // Its Lease is still held: the successor waits for it to expire, then converges.
    await start('op-kill-2');
    for (const name of names) await ready(name);
    for (const name of names) {
      const selector = `app.kubernetes.io/instance=${name}`;
      expect((await ok(['get', 'deployments', '-n', NS, '-l', selector, '-o', 'name'])).trim().split('\n')).toEqual([
        `deployment.apps/website-${name}`,
      ]);
      expect((await ok(['get', 'services', '-n', NS, '-l', selector, '-o', 'name'])).trim().split('\n')).toEqual([
        `service/website-${name}`,
      ]);
      expect(
        (await ok(['get', 'replicasets', '-n', NS, '-l', selector, '-o', 'name'])).trim().split('\n'),
      ).toHaveLength(1);
      expect((await events(name)).filter((e) => e.type === 'Warning')).toEqual([]);
    }
  });

  test('its caches fill from streaming lists (watches with sendInitialEvents) by default, from lists in pages with KUBE_API_WATCH_LIST=false: Websites made before it started converge either way, with no warning', async () => {
    const names = ['e2e-watch-list-0', 'e2e-watch-list-1'];
    for (const name of names) await createWebsite(name, { title: name, replicas: 1 });
    const streaming = await start('op-watch-list');
    for (const name of names) await ready(name);
    expect(await streaming.metric('rest_client_requests_total', { verb: 'LIST' })).toBe(0);
    // The streaming list goes on as the watch after its initial events: one request per informer.
    expect(await streaming.metric('rest_client_requests_total', { verb: 'WATCH', resource: 'websites' })).toBe(1);
    expect(streaming.logs.filter((l) => l.level === 'warn' || l.level === 'error')).toEqual([]);
    await streaming.stop();

    // Made while no operator runs: the paged operator learns of it from its list.
    await createWebsite('e2e-list-pages', { title: 'Pages', replicas: 1 });
    const paged = await start('op-list-pages', { KUBE_API_WATCH_LIST: 'false' });
    await ready('e2e-list-pages');
    expect(
      await paged.metric('rest_client_requests_total', { verb: 'LIST', resource: 'websites' }),
    ).toBeGreaterThanOrEqual(1);
    expect(paged.logs.filter((l) => l.level === 'warn' || l.level === 'error')).toEqual([]);
  });

  test('with two replicas only the leader reconciles; kill -9 of the leader hands over, SIGTERM releases the Lease', async () => {
    const a = await start('op-a');
    const b = await start('op-b');
    const leader = await eventually('a leader', async () => {
      const [la, lb] = [
        await a.metric('leader_election_master_status'),
        await b.metric('leader_election_master_status'),
      ];
      return la + lb === 1 ? (la === 1 ? a : b) : undefined;
    });
    const follower = leader === a ? b : a;
    // Standing by is healthy: both ready, the standby saying who leads.
    expect(await leader.get('/readyz', leader.healthPort)).toMatchObject({
      status: 200,
      body: expect.stringContaining('[+]leader-election ok: leading: Lease website-system/website-operator\n'),
    });
    // The standby reads the Lease every retry period: until its next read it may still name the
    // holder it saw before (a replica of an earlier test whose Lease was left to expire).
    const standingBy = new RegExp(
      `\\[\\+\\]leader-election ok: standing by for \\d+ s: Lease website-system/website-operator held by ${leader === a ? 'op-a' : 'op-b'}\n`,
    );
    const followerReadyz = await eventually('the standby to name the leader', async () => {
      const readyz = await follower.get('/readyz', follower.healthPort);
      return standingBy.test(readyz.body) ? readyz : undefined;
    });
    expect(followerReadyz.status).toBe(200);
    await createWebsite('e2e-leader-1', { title: 'Leader 1', replicas: 1 });
    await ready('e2e-leader-1');
    expect(await leader.writes()).toBeGreaterThan(0);
    expect(await follower.writes()).toBe(0);
    expect((await getJson(['lease', 'website-operator', '-n', NS])).spec.holderIdentity).toBe(
      leader === a ? 'op-a' : 'op-b',
    );

    await leader.kill();
    await createWebsite('e2e-leader-2', { title: 'Leader 2', replicas: 1 });
    await ready('e2e-leader-2');
    expect(await follower.metric('leader_election_master_status')).toBe(1);
    expect(await follower.writes()).toBeGreaterThan(0);
    const lease = await getJson(['lease', 'website-operator', '-n', NS]);
    expect(lease.spec.holderIdentity).toBe(leader === a ? 'op-b' : 'op-a');
    expect(lease.spec.leaseTransitions).toBeGreaterThanOrEqual(1);

    expect(await follower.stop()).toBe(0);
    expect((await getJson(['lease', 'website-operator', '-n', NS])).spec.holderIdentity).toBeUndefined();
    expect(follower.logs.map((l) => l.msg)).toEqual(
      expect.arrayContaining(['stopped reconciling', 'released the lease', 'stopped']),
    );
  });

  test('a Lease whose namespace does not exist: an error at every attempt naming the fix, ready but saying why in /readyz, the not-leading metric growing', async () => {
    // As a cluster administrator, so the API server answers NotFound (the ServiceAccount would get Forbidden).
    const operator = await OperatorProcess.start('op-nolease', ADMIN_KUBECONFIG, {
      OPERATOR_NAMESPACE: 'website-missing',
      WATCH_NAMESPACE: NS,
    });
    running.push(operator);
    const errors = () =>
      operator.logs.filter((l) => l.level === 'error' && l.lease === 'website-missing/website-operator');
    await eventually('two failed attempts', async () => (errors().length >= 2 ? true : undefined));
    expect(errors()[0]).toMatchObject({
      msg: 'leader election: cannot take or renew the Lease website-missing/website-operator; not reconciling until it can',
      error: expect.stringContaining('namespaces "website-missing" not found'),
      fix: 'create the namespace website-missing, set OPERATOR_NAMESPACE to an existing namespace, or run with LEADER_ELECTION=false (one replica)',
    });
    const readyz = await operator.get('/readyz', operator.healthPort);
    expect(readyz.status).toBe(200);
    expect(readyz.body).toMatch(
      /\[\+\]leader-election ok: not leading for \d+ s: Lease website-missing\/website-operator: namespaces "website-missing" not found \(create the namespace website-missing/,
    );
    const first = await operator.metric('leader_election_not_leading_seconds');
    await eventually('the not-leading metric to grow', async () =>
      (await operator.metric('leader_election_not_leading_seconds')) > first ? true : undefined,
    );
    expect(await operator.metric('leader_election_master_status')).toBe(0);
    expect((await operator.get('/healthz', operator.healthPort)).status).toBe(200);
  });

  test('after the API server restarts (every watch breaks), the operator keeps reconciling', async () => {
    const operator = await start('op-restart');
    await createWebsite('e2e-restart-a', { title: 'Before the restart', replicas: 1 });
    await ready('e2e-restart-a');
    execFileSync('bash', [join(ROOT, 'scripts/cluster.sh'), 'restart-apiserver'], {
      env: CLUSTER_ENV,
      stdio: 'inherit',
    });
    await createWebsite('e2e-restart-b', { title: 'After the restart', replicas: 2 });
    await ok(['patch', 'website', 'e2e-restart-a', '-n', NS, '--type=merge', '-p', '{"spec":{"replicas":3}}']);
    await ready('e2e-restart-b');
    await ready('e2e-restart-a');
    expect((await deploymentOf('e2e-restart-a')).spec.replicas).toBe(3);
    expect(await operator.metric('informer_watch_restarts_total', { resource: 'websites' })).toBeGreaterThan(0);
    // Its Website cache, refilled after the restart, holds every Website it watches, and says so.
    const cached = await eventually('informer_cache_objects to count the Websites', async () => {
      const websites = (await getJson(['websites', '-n', NS])).items.length;
      return (await operator.metric('informer_cache_objects', { resource: 'websites' })) === websites && websites;
    });
    expect(cached).toBeGreaterThanOrEqual(2);
    expect(operator.running).toBe(true);
  });

  test('a Role without services: a Warning event and a condition, no crash loop; fixing the Role recovers', async () => {
    await applyRbac({ ...role, rules: role.rules.filter((rule: any) => !rule.resources.includes('services')) });
    try {
      const operator = await start('op-norole', { CACHE_SYNC_TIMEOUT_SECONDS: '2' });
      await createWebsite('e2e-norole', { title: 'No services', replicas: 1 });
      const warning = await eventually('a Warning event', async () =>
        (await events('e2e-norole')).find((e) => e.type === 'Warning'),
      );
      expect(warning.reason).toBe('ReconcileFailed');
      expect(warning.message).toMatch(
        /could not (read|apply) Service website-e2e-norole: services "website-e2e-norole" is forbidden: User "system:serviceaccount:website-system:website-operator" cannot/,
      );
      const condition = await eventually('the failure in status', async () =>
        (await websiteJson('e2e-norole')).status?.conditions?.find((c: any) => c.reason === 'ReconcileFailed'),
      );
      expect(condition).toMatchObject({ type: 'Ready', status: 'False' });
      expect(condition.message).toContain('forbidden');
      // Retried with backoff, in the same process.
      await eventually('retries', async () =>
        (await operator.metric('controller_runtime_reconcile_errors_total')) >= 3 ? true : undefined,
      );
      expect(operator.running).toBe(true);
      expect((await operator.get('/healthz', operator.healthPort)).status).toBe(200);
      expect((await operator.get('/readyz', operator.healthPort)).body).toContain('caches');
    } finally {
      await applyRbac();
    }
    await ready('e2e-norole', 90_000);
    expect(await exists('service', 'website-e2e-norole')).toBe(true);
  });

  test("a Deployment of the Website's child name owned by someone else: the condition and one Warning, no retries; deleting it converges", async () => {
    // The tests' LOG_LEVEL=debug: a line per reconcile of the Website, whatever its outcome.
    const operator = await start('op-foreign');
    const key = `${NS}/e2e-foreign`;
    const attempts = () =>
      operator.logs.filter(
        (l) =>
          l.website === key &&
          [
            'reconciled',
            'reconcile failed, retrying with backoff',
            'reconcile failed and retrying cannot help; waiting for a change',
          ].includes(l.msg),
      );
    // Someone else's: no owner, no managed-by label, so none of the operator's caches holds it.
    await ok(['create', 'deployment', 'website-e2e-foreign', '-n', NS, '--image=registry.k8s.io/pause:3.10']);
    try {
      await createWebsite('e2e-foreign', { title: 'Foreign', replicas: 1 });
      const message =
        'Deployment website-e2e-foreign already exists and is not owned by Website e2e-foreign: delete or rename that Deployment, or rename the Website';
      const condition = await eventually('the failure in status', async () =>
        (await websiteJson('e2e-foreign')).status?.conditions?.find((c: any) => c.reason === 'ReconcileFailed'),
      );
      expect(condition).toMatchObject({ type: 'Ready', status: 'False', message });
      await eventually('the Warning event', async () =>
        (await events('e2e-foreign')).find((e) => e.type === 'Warning'),
      );
      const tried = attempts().length;
      // Far more than several backoff periods (5 ms doubling): a retry storm would show here.
      await new Promise((r) => setTimeout(r, 5_000));
      expect(attempts()).toHaveLength(tried);
      expect(attempts().filter((l) => l.msg === 'reconcile failed, retrying with backoff')).toEqual([]);
      expect(operator.logs.filter((l) => l.website === key && l.level === 'error')).toEqual([
        expect.objectContaining({
          msg: 'reconcile failed and retrying cannot help; waiting for a change',
          error: message,
        }),
      ]);
      expect(
        (await events('e2e-foreign')).filter((e) => e.type === 'Warning').map((e) => `${e.reason}: ${e.message}`),
      ).toEqual([`ReconcileFailed: ${message}`]);
      expect(await operator.metric('controller_runtime_terminal_reconcile_errors_total')).toBeGreaterThanOrEqual(1);
      expect(await operator.metric('workqueue_retries_total')).toBe(0);

      // Its deletion alone brings the Website back (the operator watches that Deployment by name).
      await ok(['delete', 'deployment', 'website-e2e-foreign', '-n', NS, '--wait=true']);
      await ready('e2e-foreign');
      const { uid } = (await websiteJson('e2e-foreign')).metadata;
      expect((await deploymentOf('e2e-foreign')).metadata.ownerReferences).toEqual([
        expect.objectContaining({ kind: 'Website', name: 'e2e-foreign', uid, controller: true }),
      ]);
      // And an edit of the Website reconciles it as usual.
      await ok(['patch', 'website', 'e2e-foreign', '-n', NS, '--type=merge', '-p', '{"spec":{"replicas":2}}']);
      expect((await ready('e2e-foreign')).status.availableReplicas).toBe(2);
    } finally {
      await kubectl(['delete', 'website', 'e2e-foreign', '-n', NS, '--ignore-not-found', '--wait=true']);
      await kubectl(['delete', 'deployment', 'website-e2e-foreign', '-n', NS, '--ignore-not-found']);
    }
  });

  test('traces each reconcile to Jaeger over OTLP: a reconcile span with its API requests beneath, no credential in any span', async () => {
    const jaeger = await startStack(synthYaml((chart) => new JaegerAllInOne(chart, 'Jaeger')));
    try {
      const operator = await start('traced', {
        OTEL_EXPORTER_OTLP_ENDPOINT: jaeger.url('jaeger', 'otlp-http'),
        OTEL_BSP_SCHEDULE_DELAY: '200',
      });
      await createWebsite('traced', { title: 'Traced', replicas: 1 });
      await ready('traced');
      const query = jaeger.url('jaeger', 'query');
      const trace = await eventually('a reconcile of Website traced that created its Deployment', async () => {
        const traces = await jaegerTraces(query, 'website-operator');
        return traces.find(
          (t) =>
            t.spans.some(
              (s) =>
                s.operationName === 'reconcile Website' &&
                s.tags.some((tag) => tag.key === 'website.name' && tag.value === 'traced'),
            ) && t.spans.some((s) => s.operationName === 'CREATE deployments'),
        );
      });
      const root = trace.spans.find((s) => s.operationName === 'reconcile Website')!;
      expect(root.references).toEqual([]);
      const children = trace.spans.filter((s) => s !== root);
      for (const span of children) expect(span.references.map((r) => r.spanID)).toEqual([root.spanID]);
      const tags = (name: string) =>
        Object.fromEntries(trace.spans.find((s) => s.operationName === name)!.tags.map((t) => [t.key, t.value]));
      // A new Website's children are created (the cache says they are absent), beside the finalizer patch.
      expect(tags('CREATE deployments')).toMatchObject({
        'span.kind': 'client',
        'http.request.method': 'POST',
        'k8s.resource': 'deployments',
        'k8s.namespace.name': NS,
        'http.response.status_code': 201,
      });
      expect(tags('CREATE services')).toMatchObject({
        'span.kind': 'client',
        'http.request.method': 'POST',
        'k8s.resource': 'services',
        'http.response.status_code': 201,
      });
      expect(tags('PATCH websites')).toMatchObject({
        'span.kind': 'client',
        'http.request.method': 'PATCH',
        'k8s.resource': 'websites',
      });
      expect(trace.processes[root.processID]).toMatchObject({ serviceName: 'website-operator' });
      const text = JSON.stringify(await jaegerTraces(query, 'website-operator'));
      expect(text).not.toMatch(/[Bb]earer|authorization|eyJhbGci/);
      // Log lines inside a reconcile carry its trace id.
      expect(operator.logs.filter((l) => l.trace_id === trace.traceID).length).toBeGreaterThan(0);
    } finally {
      await jaeger.stop();
    }
  });

  test("run outside the cluster, the operator is the webhook Service's endpoint: v1beta1 converts through the Service, and dist/'s CRD re-applies while it runs", async () => {
    const crdFile = join(ROOT, 'dist/website-operator/website-crd.yaml');
    const distCalls = parseAllDocuments(readFileSync(crdFile, 'utf8'))[0].toJS().spec.conversion.webhook.clientConfig;
    const service = webhookServiceManifest();
    const host = new TestHostAddress();
    const port = await freePort();
    await ok(['apply', '--server-side', '--force-conflicts', '-f', '-'], {
      input: [...localEndpointRbacManifests(), service].map((m) => JSON.stringify(m)).join('\n'),
    });
    const operator = await start('op-webhook', {
      WEBHOOK_ENABLED: 'true',
      WEBHOOK_PORT: String(port),
      WEBHOOK_ADVERTISE_ADDRESS: host.address,
    });
    try {
      await eventually(
        'the webhook to serve',
        async () => ((await operator.get('/readyz', operator.healthPort)).status === 200 ? true : undefined),
        60_000,
      );
      const slice = await eventually("the operator's EndpointSlice", async () => {
        const found = await kubectl([
          'get',
          'endpointslice',
          'website-operator-webhook-op-webhook',
          '-n',
          NS,
          '-o',
          'json',
        ]);
        return found.code === 0 ? JSON.parse(found.stdout) : undefined;
      });
      expect([slice.endpoints[0].addresses, slice.ports]).toEqual([
        [host.address],
        [{ name: service.spec.ports[0].name, port, protocol: 'TCP' }],
      ]);
      const crd = await getJson(['crd', 'websites.web.example.com']);
      const { caBundle, ...calls } = crd.spec.conversion.webhook.clientConfig;
      expect(calls).toEqual(distCalls);
      expect(distCalls).toEqual({
        service: { name: service.metadata.name, namespace: NS, path: '/convert', port: 443 },
      });
      expect(Buffer.from(caBundle, 'base64').toString()).toContain('BEGIN CERTIFICATE');

      const v1beta1 = {
        apiVersion: 'web.example.com/v1beta1',
        kind: 'Website',
        metadata: { name: 'e2e-beta', namespace: NS, labels: { 'website-stack/test': 'operator' } },
        spec: { heading: 'Through v1beta1 ✓', instances: 2, theme: { color: '#123456' } },
      };
      await eventually(
        'the v1beta1 create',
        async () =>
          (await kubectl(['create', '-f', '-'], { input: JSON.stringify(v1beta1) })).code === 0 ? true : undefined,
        30_000,
      );
      const stored = await ready('e2e-beta');
      expect(stored.apiVersion).toBe('web.example.com/v1');
      expect(stored.spec).toEqual({ title: 'Through v1beta1 ✓', replicas: 2, color: '#123456' });
      expect(envOf(await deploymentOf('e2e-beta'), 'WEBSITE_HTML')).toBe(renderPage('Through v1beta1 ✓', '#123456'));

      const readBack = await getJson(['websites.v1beta1.web.example.com', 'e2e-beta', '-n', NS]);
      expect(readBack.apiVersion).toBe('web.example.com/v1beta1');
      expect(readBack.spec).toEqual(v1beta1.spec);
      expect(readBack.metadata.uid).toBe(stored.metadata.uid);
      expect(readBack.status.availableReplicas).toBe(2);
      const listed = (
        await getJson(['websites.v1beta1.web.example.com', '-n', NS, '-l', 'website-stack/test=operator'])
      ).items;
      expect(listed.find((w: any) => w.metadata.name === 'e2e-beta').spec).toEqual(v1beta1.spec);
      expect(await operator.metric('conversion_webhook_requests_total', { result: 'Success' })).toBeGreaterThan(0);

      // As a user re-applies dist/ while the operator runs: both kinds of apply succeed, the CRD
      // still calls the Service (trusting the same CA), and v1beta1 still converts.
      for (const apply of [
        ['apply', '--server-side', '-f', crdFile],
        ['apply', '-f', crdFile],
      ]) {
        const before = await operator.metric('conversion_webhook_requests_total', { result: 'Success' });
        const result = await kubectl(apply);
        expect([apply.join(' '), result.code, result.stderr]).toEqual([
          apply.join(' '),
          0,
          expect.not.stringMatching(/error|exactly one of url or service/i),
        ]);
        expect((await getJson(['crd', 'websites.web.example.com'])).spec.conversion.webhook.clientConfig).toEqual({
          ...calls,
          caBundle,
        });
        const patched = { ...v1beta1, spec: { ...v1beta1.spec, instances: apply.includes('--server-side') ? 3 : 1 } };
        await ok(['apply', '-f', '-'], { input: JSON.stringify(patched) });
        expect((await getJson(['websites.v1beta1.web.example.com', 'e2e-beta', '-n', NS])).spec).toEqual(patched.spec);
        expect((await websiteJson('e2e-beta')).spec.replicas).toBe(patched.spec.instances);
        expect(await operator.metric('conversion_webhook_requests_total', { result: 'Success' })).toBeGreaterThan(
          before,
        );
      }
    } finally {
      await operator.stop();
      await kubectl(['delete', '-f', '-', '--ignore-not-found'], {
        input: localEndpointRbacManifests()
          .map((m) => JSON.stringify(m))
          .join('\n'),
      });
      host.close();
    }
    // Stopped, it took its endpoint with it; the CRD is as dist/ ships it.
    expect((await kubectl(['get', 'endpointslice', 'website-operator-webhook-op-webhook', '-n', NS])).code).not.toBe(0);
    expect(operator.logs.filter((l) => l.level === 'error')).toEqual([]);
  });
});
