import { PassThrough } from 'node:stream';
import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { workloadLabels } from '../../lib/workload/website-workload.ts';
import { ApiError } from '../../operator/src/controller/api-error.ts';
import { DEPLOYMENTS, EVENTS, type KubeObject, SERVICES } from '../../operator/src/controller/kube-api.ts';
import { FakeKubeApi, type InjectedFailure } from '../../operator/src/fake/fake-kube-api.ts';
import { createLogger } from '../../operator/src/observability/logger.ts';
import { OperatorMetrics } from '../../operator/src/observability/metrics.ts';
import { finalizerName, websitesType } from '../../operator/src/reconciler/website.ts';
import { testOperatorConfig, type WebsiteOperator, websiteOperator } from './operator-config.ts';

// The whole operator (informers, priority queue, reconciler, event recorder) against an in-memory
// API, counting the requests each path costs. The cluster tests prove the behaviour on a real API
// server; these pin what it costs, request by request.

const NS = 'team-a';
const GROUP = 'web.example.com';
const WEBSITES = websitesType(GROUP);

const config = testOperatorConfig({ group: GROUP, watchNamespaces: [NS] });

interface Harness {
  readonly api: FakeKubeApi;
  readonly operator: WebsiteOperator;
  readonly metrics: OperatorMetrics;
  readonly logs: Array<{ level: string; msg: string }>;
  /** Requests since the last call, as sorted "VERB resource code" lines, once the operator is idle. */
  requests(): Promise<string[]>;
}

let running: WebsiteOperator | undefined;

async function start(
  seed: (api: FakeKubeApi) => Promise<void> = async () => {},
  api = new FakeKubeApi(),
): Promise<Harness> {
  await seed(api);
  const logs: Array<{ level: string; msg: string }> = [];
  const stream = new PassThrough();
  stream.on('data', (line: Buffer) => logs.push(JSON.parse(line.toString())));
  const metrics = new OperatorMetrics({ processMetrics: false });
  const operator = websiteOperator(config, { client: api, logger: createLogger('info', stream), metrics });
  running = operator;
  await operator.manager.start();
  let mark = api.requests.length;
  const idle = async () => {
    // The fake answers at once: a few turns of the event loop drain queue, writes and events.
    for (let quiet = 0; quiet < 20; quiet++) {
      await new Promise((resolve) => setImmediate(resolve));
      if (operator.websites.queue.active > 0) quiet = 0;
    }
  };
  await idle();
  return {
    api,
    operator,
    metrics,
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
  await running?.manager.stop();
  running = undefined;
});

const website = (name: string, spec: Record<string, unknown> = { title: 'Hello', replicas: 1 }): KubeObject => ({
  apiVersion: `${GROUP}/v1`,
  kind: 'Website',
  metadata: { name, namespace: NS },
  spec: { color: '#2196F3', ...spec },
});

/** A patch of a Website itself (its finalizer), not of its status. */
const patchOfWebsite: InjectedFailure['match'] = (r) =>
  r.resource === 'websites' && r.verb === 'PATCH' && !r.subresource;

/** What a new Website costs when it adopts children left by one of its name: two applies, no GET and no create. */
const ADOPTION_REQUESTS = [
  'APPLY deployments 200',
  'APPLY services 200',
  'CREATE events 201',
  'CREATE websites 201',
  'PATCH websites 200',
  'PATCH websites/status 200',
];

/** What the Deployment controller and kubelets would write: every replica up to date and available. */
function rollOut(api: FakeKubeApi, name: string): void {
  api.modify(DEPLOYMENTS, NS, `website-${name}`, (deployment) => {
    const replicas = (deployment.spec as { replicas: number }).replicas;
    deployment.status = {
      observedGeneration: deployment.metadata!.generation,
      replicas,
      updatedReplicas: replicas,
      availableReplicas: replicas,
    };
  });
}

/** The operator, with the Website `a` created and rolled out and the requests that took drained. */
async function startWithReadyWebsite(): Promise<Harness> {
  const h = await start();
  await h.api.create(WEBSITES, website('a'));
  await h.requests();
  rollOut(h.api, 'a');
  await h.requests();
  return h;
}

const readyOf = (api: FakeKubeApi, name: string) =>
  (
    api.peek<KubeObject>(WEBSITES, NS, name)!.status as
      | { conditions?: Array<{ type: string; status: string; reason: string; message: string }> }
      | undefined
  )?.conditions?.find((c) => c.type === 'Ready');

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
    expect(readyOf(h.api, 'a')).toMatchObject({
      status: 'False',
      reason: 'Progressing',
      message: '0/1 replicas available',
    });
    expect(h.api.peek<KubeObject>(WEBSITES, NS, 'a')!.metadata!.finalizers).toEqual([finalizerName(GROUP)]);
    const events = (await h.api.list(EVENTS, NS)).items;
    expect(events.map((e) => [e.reason, e.message])).toEqual([
      ['Created', 'Created Deployment website-a and Service website-a'],
    ]);

    rollOut(h.api, 'a');
    expect(await h.requests()).toEqual(['PATCH websites/status 200']);
    expect(readyOf(h.api, 'a')).toMatchObject({
      status: 'True',
      reason: 'Available',
      message: '1/1 replicas available',
    });
    // Until Ready: the finalizer, two creates and two status writes; the event is off the path.
  });

  test('an unchanged Website, resynced: no request at all', async () => {
    const h = await startWithReadyWebsite();
    h.operator.websites.queue.add(`${NS}/a`, 'low');
    expect(await h.requests()).toEqual([]);
  });

  test('an edited Website: one apply of the Deployment, a status write, one event; the Service is left alone', async () => {
    const h = await startWithReadyWebsite();
    await h.api.patch(WEBSITES, { namespace: NS, name: 'a' }, 'merge', { spec: { replicas: 3 } });
    expect(await h.requests()).toEqual([
      'APPLY deployments 200',
      'CREATE events 201',
      'PATCH websites 200',
      'PATCH websites/status 200',
    ]);
    expect(readyOf(h.api, 'a')).toMatchObject({ status: 'False', message: '1/3 replicas available' });
    expect((h.api.peek<KubeObject>(DEPLOYMENTS, NS, 'website-a')!.spec as { replicas: number }).replicas).toBe(3);
    rollOut(h.api, 'a');
    expect(await h.requests()).toEqual(['PATCH websites/status 200']);
  });

  test("a Website is rendered once per generation: reconciles for its children's events and a drift reuse the render; an edit or a new Website of the same name renders again", async () => {
    const exporter = new InMemorySpanExporter();
    const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    trace.setGlobalTracerProvider(provider);
    const renders = () => exporter.getFinishedSpans().filter((span) => span.name === 'render Website').length;
    const reconciles = () => exporter.getFinishedSpans().filter((span) => span.name === 'reconcile Website').length;
    try {
      const h = await startWithReadyWebsite();
      expect([renders(), reconciles()]).toEqual([1, expect.any(Number)]);
      expect(reconciles()).toBeGreaterThan(1);
      h.api.modify(DEPLOYMENTS, NS, 'website-a', (deployment) => {
        (deployment.spec as { replicas: number }).replicas = 5;
      });
      expect(await h.requests()).toContain('APPLY deployments 200');
      expect(renders()).toBe(1);
      await h.api.patch(WEBSITES, { namespace: NS, name: 'a' }, 'merge', { spec: { replicas: 3 } });
      await h.requests();
      expect(renders()).toBe(2);
      expect((h.api.peek<KubeObject>(DEPLOYMENTS, NS, 'website-a')!.spec as { replicas: number }).replicas).toBe(3);
      // Deleted, then created again under the same name: a new uid, so new owner references.
      h.api.modify(WEBSITES, NS, 'a', (w) => {
        w.metadata!.finalizers = [];
      });
      await h.api.delete(WEBSITES, { namespace: NS, name: 'a' });
      await h.requests();
      await h.api.create(WEBSITES, website('a'));
      await h.requests();
      expect(renders()).toBe(3);
      const uid = h.api.peek<KubeObject>(WEBSITES, NS, 'a')!.metadata!.uid;
      expect(h.api.peek<KubeObject>(DEPLOYMENTS, NS, 'website-a')!.metadata!.ownerReferences).toEqual([
        expect.objectContaining({ uid }),
      ]);
    } finally {
      trace.disable();
      context.disable();
      await provider.shutdown();
    }
  });

  test('a deleted Website: its children deleted from what the cache knows (no GET), the finalizer removed, one event', async () => {
    const h = await start();
    await h.api.create(WEBSITES, website('a'));
    await h.requests();
    await h.api.delete(WEBSITES, { namespace: NS, name: 'a' });
    expect(await h.requests()).toEqual([
      'CREATE events 201',
      'DELETE deployments 200',
      'DELETE services 200',
      'DELETE websites 200',
      'PATCH websites 200',
    ]);
    expect(h.api.peek(WEBSITES, NS, 'a')).toBeUndefined();
    expect(h.api.peek(DEPLOYMENTS, NS, 'website-a')).toBeUndefined();
    expect(h.api.peek(SERVICES, NS, 'website-a')).toBeUndefined();
    const events = (await h.api.list(EVENTS, NS)).items.map((e) => [e.reason, e.message]);
    expect(events).toContainEqual([
      'Deleted',
      'Deleted Deployment and Service website-a; removing finalizer websites.web.example.com/cleanup',
    ]);
  });

  test('a child edited by someone else (drift): one apply puts it back, one event, not Ready until it is rolled out again; the other child is left alone', async () => {
    const h = await startWithReadyWebsite();
    h.api.modify(DEPLOYMENTS, NS, 'website-a', (deployment) => {
      (deployment.spec as { replicas: number }).replicas = 5;
    });
    // Until the Deployment controller has rolled the put-back spec out, the Website is not Ready.
    expect(await h.requests()).toEqual(['APPLY deployments 200', 'CREATE events 201', 'PATCH websites/status 200']);
    expect((h.api.peek<KubeObject>(DEPLOYMENTS, NS, 'website-a')!.spec as { replicas: number }).replicas).toBe(1);
    expect(readyOf(h.api, 'a')).toMatchObject({ status: 'False', reason: 'Progressing' });
    const events = (await h.api.list(EVENTS, NS)).items.map((e) => [e.reason, e.message]);
    expect(events).toContainEqual(['Updated', 'Updated Deployment website-a']);
    rollOut(h.api, 'a');
    expect(await h.requests()).toEqual(['PATCH websites/status 200']);
    expect(readyOf(h.api, 'a')).toMatchObject({ status: 'True' });
  });

  test('fields the API server and controllers fill in, which the child caches do not keep, cost nothing', async () => {
    const h = await startWithReadyWebsite();
    h.api.modify(DEPLOYMENTS, NS, 'website-a', (deployment) => {
      const spec = deployment.spec as any;
      spec.progressDeadlineSeconds = 600;
      spec.revisionHistoryLimit = 10;
      spec.template.spec.containers[0].terminationMessagePath = '/dev/termination-log';
      (deployment.status as any).conditions = [
        { type: 'Available', status: 'True', reason: 'MinimumReplicasAvailable' },
      ];
      deployment.metadata!.annotations = {
        ...deployment.metadata!.annotations,
        'deployment.kubernetes.io/revision': '1',
      };
    });
    h.api.modify(SERVICES, NS, 'website-a', (service) => {
      Object.assign(service.spec as object, {
        clusterIP: '10.0.0.7',
        clusterIPs: ['10.0.0.7'],
        sessionAffinity: 'None',
      });
    });
    expect(await h.requests()).toEqual([]);
  });

  test('drift inside a list the cache cuts down (a container added, a container field changed) is seen and put back', async () => {
    const h = await startWithReadyWebsite();
    h.api.modify(DEPLOYMENTS, NS, 'website-a', (deployment) => {
      const containers = (deployment.spec as any).template.spec.containers;
      containers.push({ name: 'sidecar', image: 'busybox' });
    });
    expect(await h.requests()).toEqual(['APPLY deployments 200', 'CREATE events 201', 'PATCH websites/status 200']);
    const containers = () =>
      (h.api.peek<KubeObject>(DEPLOYMENTS, NS, 'website-a')!.spec as any).template.spec.containers;
    expect(containers().map((c: { name: string }) => c.name)).toEqual(['web']);
    rollOut(h.api, 'a');
    await h.requests();
    const image = containers()[0].image;
    h.api.modify(DEPLOYMENTS, NS, 'website-a', (deployment) => {
      (deployment.spec as any).template.spec.containers[0].image = 'nginx:evil';
    });
    // (The second "Updated" event within minutes is aggregated by the recorder: no request of its own yet.)
    expect(await h.requests()).toEqual(['APPLY deployments 200', 'PATCH websites/status 200']);
    expect(containers()[0].image).toBe(image);
  });

  test("a status written while the cached Website lags behind it (its watch silent) is written again when the Deployment changes back, not taken as the cache's", async () => {
    const h = await startWithReadyWebsite();
    h.api.stallWatches(WEBSITES);
    // The pod is lost: 0/1 written. The cache still holds 1/1, and will until the watch is restarted.
    h.api.modify(DEPLOYMENTS, NS, 'website-a', (deployment) => {
      (deployment.status as { availableReplicas: number }).availableReplicas = 0;
    });
    expect(await h.requests()).toEqual(['PATCH websites/status 200']);
    expect(readyOf(h.api, 'a')).toMatchObject({ status: 'False', message: '0/1 replicas available' });
    // Back at 1/1, what the stale cache holds: the Website must say so all the same.
    rollOut(h.api, 'a');
    expect(await h.requests()).toEqual(['PATCH websites/status 200']);
    expect(readyOf(h.api, 'a')).toMatchObject({ status: 'True', message: '1/1 replicas available' });
  });

  test('a Website deleted with --cascade=orphan: its children are kept, freed of their owner, and a new Website of that name adopts them', async () => {
    const h = await start();
    await h.api.create(WEBSITES, website('a'));
    await h.requests();
    await h.api.delete(WEBSITES, { namespace: NS, name: 'a' }, { propagationPolicy: 'Orphan' });
    expect(await h.requests()).toEqual(['CREATE events 201', 'DELETE websites 200', 'PATCH websites 200']);
    expect(h.api.peek(WEBSITES, NS, 'a')).toBeUndefined();
    for (const type of [DEPLOYMENTS, SERVICES])
      expect(h.api.peek<KubeObject>(type, NS, 'website-a')!.metadata!.ownerReferences).toEqual([]);
    const events = (await h.api.list(EVENTS, NS)).items.map((e) => [e.reason, e.message]);
    expect(events).toContainEqual([
      'Deleted',
      'Kept Deployment and Service website-a (deleted with --cascade=orphan); removing finalizer websites.web.example.com/cleanup',
    ]);

    await h.api.create(WEBSITES, website('a'));
    expect(await h.requests()).toEqual(ADOPTION_REQUESTS);
    const uid = h.api.peek<KubeObject>(WEBSITES, NS, 'a')!.metadata!.uid;
    for (const type of [DEPLOYMENTS, SERVICES])
      expect(h.api.peek<KubeObject>(type, NS, 'website-a')!.metadata!.ownerReferences).toEqual([
        expect.objectContaining({ kind: 'Website', uid, controller: true }),
      ]);
  });

  test('children orphaned by a Website of the same name are adopted by two applies, without a GET or a create', async () => {
    const orphan = (type: typeof DEPLOYMENTS, extra: Record<string, unknown>) => (api: FakeKubeApi) =>
      api
        .create(type, { metadata: { name: 'website-a', namespace: NS, labels: workloadLabels('a') }, ...extra })
        .then(() => undefined);
    const h = await start(async (api) => {
      await orphan(DEPLOYMENTS, { spec: { replicas: 1 } })(api);
      await orphan(SERVICES, { spec: { ports: [{ port: 80 }] } })(api);
    });
    await h.api.create(WEBSITES, website('a'));
    expect(await h.requests()).toEqual(ADOPTION_REQUESTS);
    const owners = h.api.peek<KubeObject>(DEPLOYMENTS, NS, 'website-a')!.metadata!.ownerReferences;
    expect(owners).toEqual([expect.objectContaining({ kind: 'Website', name: 'a', controller: true })]);
  });

  test('a child of that name that is not ours: the create answers AlreadyExists, one GET checks its owner, and the Website says why', async () => {
    // No managed-by label: the operator's caches never see it.
    const h = await start((api) =>
      api.create(DEPLOYMENTS, { metadata: { name: 'website-a', namespace: NS } }).then(() => undefined),
    );
    await h.api.create(WEBSITES, website('a'));
    const requests = await h.requests();
    expect(requests).toEqual(
      expect.arrayContaining(['CREATE deployments 409', 'GET deployments 200', 'CREATE services 201']),
    );
    expect(requests.filter((r) => r.startsWith('GET') && r.endsWith(' 404'))).toEqual([]);
    expect(readyOf(h.api, 'a')).toMatchObject({
      reason: 'ReconcileFailed',
      message:
        'Deployment website-a already exists and is not owned by Website a: delete or rename that Deployment, or rename the Website',
    });
    const warnings = (await h.api.list(EVENTS, NS)).items.filter((e) => e.type === 'Warning');
    expect(warnings.map((e) => e.reason)).toEqual(['ReconcileFailed']);
  });

  test('a failed status write is retried with backoff until it succeeds, and the reconcile is not left half done', async () => {
    const h = await start();
    h.api.failWith(
      (r) => r.resource === 'websites' && r.subresource === 'status',
      new ApiError(500, 'InternalError', 'etcd timeout'),
      2,
    );
    await h.api.create(WEBSITES, website('a'));
    await new Promise((resolve) => setTimeout(resolve, 100));
    await h.requests();
    expect(readyOf(h.api, 'a')).toMatchObject({ reason: 'Progressing' });
    expect(h.logs.filter((l) => l.msg === 'reconcile failed, retrying with backoff').length).toBeGreaterThanOrEqual(1);
  });
});

test('a Website changed since the cache saw it (a conflict on the finalizer) is retried quietly: no Warning, no failed status', async () => {
  const h = await start();
  h.api.failWith(patchOfWebsite, new ApiError(409, 'Conflict', 'the object has been modified'));
  await h.api.create(WEBSITES, website('a'));
  await new Promise((resolve) => setTimeout(resolve, 50));
  await h.requests();
  expect(h.api.peek<KubeObject>(WEBSITES, NS, 'a')!.metadata!.finalizers).toEqual([finalizerName(GROUP)]);
  expect((await h.api.list(EVENTS, NS)).items.filter((e) => e.type === 'Warning')).toEqual([]);
  expect(readyOf(h.api, 'a')).toMatchObject({ reason: 'Progressing' });
});

test('a Website deleted while it is reconciled (its patch answers NotFound) is success: no Warning, no failure logged', async () => {
  const h = await start();
  h.api.failWith(patchOfWebsite, new ApiError(404, 'NotFound', 'websites "a" not found'));
  await h.api.create(WEBSITES, website('a'));
  await h.requests();
  expect((await h.api.list(EVENTS, NS)).items.filter((e) => e.type === 'Warning')).toEqual([]);
  expect(h.logs.filter((l) => l.level === 'warn' || l.level === 'error')).toEqual([]);
});

test('a Website deleted between its writes (the status patch answers NotFound) is success: no Warning, no failure logged', async () => {
  // The Deployment's create is where the Website goes: its finalizer removed and the Website deleted,
  // as another client would, while the reconcile's other writes are out.
  class DeletingApi extends FakeKubeApi {
    override async create<T extends KubeObject>(type: Parameters<FakeKubeApi['create']>[0], object: T): Promise<T> {
      if (type.resource === DEPLOYMENTS.resource && this.peek(WEBSITES, NS, 'a')) {
        this.modify(WEBSITES, NS, 'a', (w) => {
          w.metadata!.finalizers = [];
        });
        await super.delete(WEBSITES, { namespace: NS, name: 'a' });
      }
      return super.create(type, object);
    }
  }
  const h = await start(async () => {}, new DeletingApi());
  await h.api.create(WEBSITES, website('a'));
  const requests = await h.requests();
  expect(requests).toContain('PATCH websites/status 404');
  expect(h.api.peek(WEBSITES, NS, 'a')).toBeUndefined();
  expect((await h.api.list(EVENTS, NS)).items.filter((e) => e.type === 'Warning')).toEqual([]);
  expect(h.logs.filter((l) => l.level === 'warn' || l.level === 'error')).toEqual([]);
  expect(await sample(h.metrics.reconcileErrors)).toBe(0);
});

test('a deleted Website whose finalizer someone else removed first (the finalizer patch answers NotFound) is success', async () => {
  const h = await start();
  await h.api.create(WEBSITES, website('a'));
  await h.requests();
  h.api.failWith(patchOfWebsite, new ApiError(404, 'NotFound', 'websites "a" not found'));
  await h.api.delete(WEBSITES, { namespace: NS, name: 'a' });
  expect(await h.requests()).toContain('PATCH websites 404');
  expect(h.logs.filter((l) => l.level === 'warn' || l.level === 'error')).toEqual([]);
  expect(await sample(h.metrics.reconcileErrors)).toBe(0);
});

/** The sum of a metric's samples. */
async function sample(metric: { get(): Promise<{ values: Array<{ value: number }> }> }): Promise<number> {
  return (await metric.get()).values.reduce((sum, { value }) => sum + value, 0);
}

describe('a child name taken by an object the Website does not own (a terminal error)', () => {
  const foreign = (api: FakeKubeApi) =>
    api
      .create(DEPLOYMENTS, { metadata: { name: 'website-a', namespace: NS }, spec: { replicas: 1 } })
      .then(() => undefined);
  const warnings = async (api: FakeKubeApi) => (await api.list(EVENTS, NS)).items.filter((e) => e.type === 'Warning');
  const terminalLogs = (h: Harness) =>
    h.logs.filter((l) => l.msg === 'reconcile failed and retrying cannot help; waiting for a change');
  /** Longer than many backoff periods of the work queue (5 ms doubling): a retry would show. */
  const severalBackoffs = () => new Promise((resolve) => setTimeout(resolve, 300));

  test('sets the condition and one Warning event, logs once at error level, is counted, and is not retried', async () => {
    const h = await start(foreign);
    await h.api.create(WEBSITES, website('a'));
    // The Service it creates beside the Deployment it cannot brings it back once (level-triggered).
    const requests = await h.requests();
    expect(requests.filter((r) => r.startsWith('PATCH websites/status'))).toEqual(['PATCH websites/status 200']);
    const attempts = await sample(h.metrics.reconciles);
    await severalBackoffs();
    expect(await h.requests()).toEqual([]);
    expect(await sample(h.metrics.reconciles)).toBe(attempts);
    expect(readyOf(h.api, 'a')).toMatchObject({
      status: 'False',
      reason: 'ReconcileFailed',
      message: expect.stringContaining('Deployment website-a already exists and is not owned by Website a'),
    });
    expect((await warnings(h.api)).map((e) => e.reason)).toEqual(['ReconcileFailed']);
    expect(terminalLogs(h)).toEqual([
      expect.objectContaining({
        level: 'error',
        website: `${NS}/a`,
        error: expect.stringContaining('not owned by Website a'),
      }),
    ]);
    expect(h.logs.filter((l) => l.msg === 'reconcile failed, retrying with backoff')).toEqual([]);
    expect(await sample(h.metrics.terminalReconcileErrors)).toBe(attempts);
    expect(await sample(h.metrics.queueRetries)).toBe(0);
  });

  test('an edit of the Website reconciles it again', async () => {
    const h = await start(foreign);
    await h.api.create(WEBSITES, website('a'));
    await h.requests();
    const attempts = await sample(h.metrics.reconciles);
    await h.api.patch(WEBSITES, { namespace: NS, name: 'a' }, 'merge', { spec: { title: 'Renamed' } });
    await h.requests();
    expect(await sample(h.metrics.terminalReconcileErrors)).toBe(attempts + 1);
    await severalBackoffs();
    expect(await h.requests()).toEqual([]);
    expect(await sample(h.metrics.reconciles)).toBe(attempts + 1);
    // Same message: the recorder writes the identical Warning once per window.
    expect(await warnings(h.api)).toHaveLength(1);
  });

  test('deleting the foreign object reconciles the Website (a watch of that object by name), which then converges', async () => {
    const h = await start(foreign);
    await h.api.create(WEBSITES, website('a'));
    await h.requests();
    const terminal = await sample(h.metrics.terminalReconcileErrors);
    await h.api.delete(DEPLOYMENTS, { namespace: NS, name: 'website-a' });
    const requests = await h.requests();
    expect(requests).toContain('CREATE deployments 201');
    const owners = h.api.peek<KubeObject>(DEPLOYMENTS, NS, 'website-a')!.metadata!.ownerReferences;
    expect(owners).toEqual([expect.objectContaining({ kind: 'Website', name: 'a', controller: true })]);
    expect(readyOf(h.api, 'a')).toMatchObject({ reason: 'Progressing' });
    expect(await sample(h.metrics.terminalReconcileErrors)).toBe(terminal);
    expect(h.operator.websites.objectWatchCount).toBe(0);
  });
});
