import { PassThrough } from 'node:stream';
import { FakeKubeApi } from '../../operator/src/controller/fake-kube-api.ts';
import { ApiError, DEPLOYMENTS, EVENTS, type KubeObject, SERVICES } from '../../operator/src/controller/kube-client.ts';
import { createLogger } from '../../operator/src/observability/logger.ts';
import { OperatorMetrics } from '../../operator/src/observability/metrics.ts';
import { Operator, type OperatorConfig } from '../../operator/src/reconciler/operator.ts';
import { finalizerName, websitesType } from '../../operator/src/reconciler/website.ts';
import { workloadLabels } from '../../lib/workload/website-workload.ts';

// The whole operator (informers, priority queue, reconciler, event recorder) against an in-memory
// API, counting the requests each path costs. The cluster tests prove the behaviour on a real API
// server; these pin what it costs, request by request.

const NS = 'team-a';
const GROUP = 'web.example.com';
const WEBSITES = websitesType(GROUP);

const config: OperatorConfig = {
  group: GROUP,
  watchNamespaces: [NS],
  operatorNamespace: 'website-system',
  identity: 'op-0',
  leaderElection: false,
  leaseName: 'website-operator',
  leaseDurationMs: 15_000,
  renewDeadlineMs: 10_000,
  retryPeriodMs: 2_000,
  concurrency: 4,
  resyncMs: 3_600_000,
  cacheSyncTimeoutMs: 1_000,
  fieldManager: 'website-operator',
  clusterDomain: 'cluster.local',
  metricsPort: 0,
  healthPort: 0,
};

interface Harness {
  readonly api: FakeKubeApi;
  readonly operator: Operator;
  readonly logs: Array<{ level: string; msg: string }>;
  /** Requests since the last call, as sorted "VERB resource code" lines, once the operator is idle. */
  requests(): Promise<string[]>;
}

let running: Operator | undefined;

async function start(seed: (api: FakeKubeApi) => Promise<void> = async () => {}): Promise<Harness> {
  const api = new FakeKubeApi();
  await seed(api);
  const logs: Array<{ level: string; msg: string }> = [];
  const stream = new PassThrough();
  stream.on('data', (line: Buffer) => logs.push(JSON.parse(line.toString())));
  const operator = new Operator(config, { client: api, logger: createLogger('info', stream), metrics: new OperatorMetrics() });
  running = operator;
  await operator.start();
  let mark = api.requests.length;
  const idle = async () => {
    // The fake answers at once: a few turns of the event loop drain queue, writes and events.
    for (let quiet = 0; quiet < 20; quiet++) {
      await new Promise((resolve) => setImmediate(resolve));
      if (operator.queue.active > 0) quiet = 0;
    }
  };
  await idle();
  return {
    api,
    operator,
    logs,
    requests: async () => {
      await idle();
      const lines = api.since(mark).filter((line) => !line.startsWith('WATCH ') && !line.startsWith('LIST '));
      mark = api.requests.length;
      return lines.sort();
    },
  };
}

afterEach(async () => {
  await running?.stop();
  running = undefined;
});

const website = (name: string, spec: Record<string, unknown> = { title: 'Hello', replicas: 1 }): KubeObject => ({
  apiVersion: `${GROUP}/v1`,
  kind: 'Website',
  metadata: { name, namespace: NS },
  spec: { color: '#2196F3', ...spec },
});

/** What the Deployment controller and kubelets would write: every replica up to date and available. */
function rollOut(api: FakeKubeApi, name: string): void {
  api.modify(DEPLOYMENTS, NS, `website-${name}`, (deployment) => {
    const replicas = (deployment.spec as { replicas: number }).replicas;
    deployment.status = { observedGeneration: deployment.metadata!.generation, replicas, updatedReplicas: replicas, availableReplicas: replicas };
  });
}

const readyOf = (api: FakeKubeApi, name: string) =>
  (api.peek<KubeObject>(WEBSITES, NS, name)!.status as { conditions?: Array<{ type: string; status: string; reason: string; message: string }> } | undefined)?.conditions?.find((c) => c.type === 'Ready');

describe('request budget of each reconcile path', () => {
  test('a new Website: finalizer and both children together, no GET, status written once per change, one event', async () => {
    const h = await start();
    await h.api.create(WEBSITES, website('a'));
    expect(await h.requests()).toEqual([
      'CREATE deployments 201',
      'CREATE events 201',
      'CREATE services 201',
      'CREATE websites 201',
      'PATCH websites 200',
      'PATCH websites/status 200',
    ]);
    expect(readyOf(h.api, 'a')).toMatchObject({ status: 'False', reason: 'Progressing', message: '0/1 replicas available' });
    expect(h.api.peek<KubeObject>(WEBSITES, NS, 'a')!.metadata!.finalizers).toEqual([finalizerName(GROUP)]);
    const events = (await h.api.list(EVENTS, NS)).items;
    expect(events.map((e) => [e.reason, e.message])).toEqual([['Created', 'Created Deployment website-a and Service website-a']]);

    rollOut(h.api, 'a');
    expect(await h.requests()).toEqual(['PATCH websites/status 200']);
    expect(readyOf(h.api, 'a')).toMatchObject({ status: 'True', reason: 'Available', message: '1/1 replicas available' });
    // Until Ready: the finalizer, two creates and two status writes; the event is off the path.
  });

  test('an unchanged Website, resynced: no request at all', async () => {
    const h = await start();
    await h.api.create(WEBSITES, website('a'));
    await h.requests();
    rollOut(h.api, 'a');
    await h.requests();
    h.operator.queue.add(`${NS}/a`, 'low');
    expect(await h.requests()).toEqual([]);
  });

  test('an edited Website: one apply of the Deployment, a status write, one event; the Service is left alone', async () => {
    const h = await start();
    await h.api.create(WEBSITES, website('a'));
    await h.requests();
    rollOut(h.api, 'a');
    await h.requests();
    await h.api.patch(WEBSITES, { namespace: NS, name: 'a' }, 'merge', { spec: { replicas: 3 } });
    expect(await h.requests()).toEqual(['APPLY deployments 200', 'CREATE events 201', 'PATCH websites 200', 'PATCH websites/status 200']);
    expect(readyOf(h.api, 'a')).toMatchObject({ status: 'False', message: '1/3 replicas available' });
    expect((h.api.peek<KubeObject>(DEPLOYMENTS, NS, 'website-a')!.spec as { replicas: number }).replicas).toBe(3);
    rollOut(h.api, 'a');
    expect(await h.requests()).toEqual(['PATCH websites/status 200']);
  });

  test('a deleted Website: its children deleted from what the cache knows (no GET), the finalizer removed, one event', async () => {
    const h = await start();
    await h.api.create(WEBSITES, website('a'));
    await h.requests();
    await h.api.delete(WEBSITES, { namespace: NS, name: 'a' });
    expect(await h.requests()).toEqual(['CREATE events 201', 'DELETE deployments 200', 'DELETE services 200', 'DELETE websites 200', 'PATCH websites 200']);
    expect(h.api.peek(WEBSITES, NS, 'a')).toBeUndefined();
    expect(h.api.peek(DEPLOYMENTS, NS, 'website-a')).toBeUndefined();
    expect(h.api.peek(SERVICES, NS, 'website-a')).toBeUndefined();
  });

  test('children orphaned by a Website of the same name are adopted by two applies, without a GET or a create', async () => {
    const orphan = (type: typeof DEPLOYMENTS, extra: Record<string, unknown>) => (api: FakeKubeApi) =>
      api.create(type, { metadata: { name: 'website-a', namespace: NS, labels: workloadLabels('a') }, ...extra }).then(() => undefined);
    const h = await start(async (api) => {
      await orphan(DEPLOYMENTS, { spec: { replicas: 1 } })(api);
      await orphan(SERVICES, { spec: { ports: [{ port: 80 }] } })(api);
    });
    await h.api.create(WEBSITES, website('a'));
    expect(await h.requests()).toEqual([
      'APPLY deployments 200',
      'APPLY services 200',
      'CREATE events 201',
      'CREATE websites 201',
      'PATCH websites 200',
      'PATCH websites/status 200',
    ]);
    const owners = h.api.peek<KubeObject>(DEPLOYMENTS, NS, 'website-a')!.metadata!.ownerReferences;
    expect(owners).toEqual([expect.objectContaining({ kind: 'Website', name: 'a', controller: true })]);
  });

  test('a child of that name that is not ours: the create answers AlreadyExists, one GET checks its owner, and the Website says why', async () => {
    // No managed-by label: the operator's caches never see it.
    const h = await start((api) => api.create(DEPLOYMENTS, { metadata: { name: 'website-a', namespace: NS } }).then(() => undefined));
    await h.api.create(WEBSITES, website('a'));
    const requests = await h.requests();
    expect(requests).toEqual(expect.arrayContaining(['CREATE deployments 409', 'GET deployments 200', 'CREATE services 201']));
    expect(requests.filter((r) => r.startsWith('GET') && r.endsWith(' 404'))).toEqual([]);
    expect(readyOf(h.api, 'a')).toMatchObject({
      reason: 'ReconcileFailed',
      message: 'Deployment website-a already exists and is not owned by Website a: delete or rename that Deployment, or rename the Website',
    });
    const warnings = (await h.api.list(EVENTS, NS)).items.filter((e) => e.type === 'Warning');
    expect(warnings.map((e) => e.reason)).toEqual(['ReconcileFailed']);
  });

  test('a failed status write is retried with backoff until it succeeds, and the reconcile is not left half done', async () => {
    const h = await start();
    h.api.failWith((r) => r.resource === 'websites' && r.subresource === 'status', new ApiError(500, 'InternalError', 'etcd timeout'), 2);
    await h.api.create(WEBSITES, website('a'));
    await new Promise((resolve) => setTimeout(resolve, 100));
    await h.requests();
    expect(readyOf(h.api, 'a')).toMatchObject({ reason: 'Progressing' });
    expect(h.logs.filter((l) => l.msg === 'reconcile failed, retrying with backoff').length).toBeGreaterThanOrEqual(1);
  });
});

test('a Website changed since the cache saw it (a conflict on the finalizer) is retried quietly: no Warning, no failed status', async () => {
  const h = await start();
  h.api.failWith((r) => r.resource === 'websites' && r.verb === 'PATCH' && !r.subresource, new ApiError(409, 'Conflict', 'the object has been modified'));
  await h.api.create(WEBSITES, website('a'));
  await new Promise((resolve) => setTimeout(resolve, 50));
  await h.requests();
  expect(h.api.peek<KubeObject>(WEBSITES, NS, 'a')!.metadata!.finalizers).toEqual([finalizerName(GROUP)]);
  expect((await h.api.list(EVENTS, NS)).items.filter((e) => e.type === 'Warning')).toEqual([]);
  expect(readyOf(h.api, 'a')).toMatchObject({ reason: 'Progressing' });
});

test('a Website deleted while it is reconciled (its patch answers NotFound) is success: no Warning, no failure logged', async () => {
  const h = await start();
  h.api.failWith((r) => r.resource === 'websites' && r.verb === 'PATCH' && !r.subresource, new ApiError(404, 'NotFound', 'websites "a" not found'));
  await h.api.create(WEBSITES, website('a'));
  await h.requests();
  expect((await h.api.list(EVENTS, NS)).items.filter((e) => e.type === 'Warning')).toEqual([]);
  expect(h.logs.filter((l) => l.level === 'warn' || l.level === 'error')).toEqual([]);
});
