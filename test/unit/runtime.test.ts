import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { jest } from '@jest/globals';
import { KubeConfig } from '@kubernetes/client-node';
import { ApiError } from '../../operator/src/controller/api-error.ts';
import { EventRecorder } from '../../operator/src/controller/event-recorder.ts';
import { Informer } from '../../operator/src/controller/informer.ts';
import { DEPLOYMENTS, EVENTS, type KubeApi, type KubeObject, LEASES } from '../../operator/src/controller/kube-api.ts';
import { KubeClient } from '../../operator/src/controller/kube-client.ts';
import { LeaderElector } from '../../operator/src/controller/leader-election.ts';
import { ObjectWatches } from '../../operator/src/controller/object-watch.ts';
import { FakeKubeApi } from '../../operator/src/fake/fake-kube-api.ts';
import { OperatorMetrics } from '../../operator/src/observability/metrics.ts';

// Parts of the operator's runtime on an in-memory API (FakeKubeApi) or a local HTTP server: what
// they send, and what they keep.

const website: KubeObject = {
  apiVersion: 'web.example.com/v1',
  kind: 'Website',
  metadata: { name: 'a', namespace: 'ns', uid: 'uid-a' },
};

describe('EventRecorder', () => {
  const events = async (api: FakeKubeApi) =>
    (await api.list(EVENTS, 'ns')).items.map((e) => `${e.type} ${e.reason}: ${e.message}`);

  test('returns before the event is written; flush waits for it', async () => {
    // An API server that takes its time answering creates.
    let answer = () => {};
    const answered = new Promise<void>((resolve) => {
      answer = resolve;
    });
    class SlowApi extends FakeKubeApi {
      override async create<T extends KubeObject>(type: typeof EVENTS, object: T): Promise<T> {
        await answered;
        return super.create(type, object);
      }
    }
    const api = new SlowApi();
    const recorder = new EventRecorder({ client: api, component: 'website-operator', instance: 'op-0' });
    expect(recorder.record(website, 'Normal', 'Created', 'Created Deployment website-a')).toBeUndefined();
    let flushed = false;
    const flushing = recorder.flush().then(() => {
      flushed = true;
    });
    await new Promise((resolve) => setImmediate(resolve));
    expect(flushed).toBe(false);
    answer();
    await flushing;
    expect(await events(api)).toEqual(['Normal Created: Created Deployment website-a']);
    const [event] = (await api.list(EVENTS, 'ns')).items;
    expect(event).toMatchObject({
      involvedObject: { kind: 'Website', name: 'a', uid: 'uid-a' },
      reportingComponent: 'website-operator',
      reportingInstance: 'op-0',
      count: 1,
    });
  });

  test('an identical event is written once per window; similar ones beyond the limit are combined', async () => {
    const api = new FakeKubeApi();
    const recorder = new EventRecorder({ client: api, component: 'c', instance: 'i', similarLimit: 3 });
    for (let i = 0; i < 3; i++) recorder.record(website, 'Warning', 'ReconcileFailed', 'forbidden');
    for (let i = 1; i <= 6; i++) recorder.record(website, 'Warning', 'ReconcileFailed', `attempt ${i}`);
    await recorder.flush();
    expect(await events(api)).toEqual([
      'Warning ReconcileFailed: forbidden',
      'Warning ReconcileFailed: attempt 1',
      'Warning ReconcileFailed: attempt 2',
      'Warning ReconcileFailed: (combined from similar events): attempt 3',
    ]);
  });

  test('an object spends at most its burst; other objects are not held back', async () => {
    const api = new FakeKubeApi();
    const recorder = new EventRecorder({ client: api, component: 'c', instance: 'i', burst: 2, similarLimit: 100 });
    for (let i = 0; i < 5; i++) recorder.record(website, 'Normal', 'Updated', `change ${i}`);
    recorder.record(
      { ...website, metadata: { ...website.metadata, name: 'b', uid: 'uid-b' } },
      'Normal',
      'Updated',
      'change 0',
    );
    await recorder.flush();
    expect(await events(api)).toEqual([
      'Normal Updated: change 0',
      'Normal Updated: change 1',
      'Normal Updated: change 0',
    ]);
  });

  test('an event that cannot be written is logged and may be recorded again', async () => {
    const api = new FakeKubeApi();
    const warnings: string[] = [];
    const logger = { warn: (_: unknown, msg: string) => warnings.push(msg) } as never;
    const recorder = new EventRecorder({ client: api, component: 'c', instance: 'i', logger });
    api.failWith((r) => r.resource === 'events', new ApiError(403, 'Forbidden', 'events is forbidden'));
    recorder.record(website, 'Normal', 'Created', 'x');
    await recorder.flush();
    expect(warnings).toEqual(['could not record event']);
    recorder.record(website, 'Normal', 'Created', 'x');
    await recorder.flush();
    expect(await events(api)).toEqual(['Normal Created: x']);
  });
});

describe('Informer', () => {
  test('caches objects without managedFields, from the list and from the watch', async () => {
    const api = new FakeKubeApi();
    const managedFields = [{ manager: 'kubectl', operation: 'Update', fieldsV1: { 'f:spec': {} } }];
    await api.create(DEPLOYMENTS, { metadata: { name: 'listed', namespace: 'ns', managedFields } });
    const informer = new Informer<KubeObject>({ client: api, type: DEPLOYMENTS, namespace: 'ns' });
    const stop = new AbortController();
    const running = informer.run(stop.signal);
    await informer.waitForSync();
    await api.create(DEPLOYMENTS, { metadata: { name: 'watched', namespace: 'ns', managedFields } });
    expect(informer.get('ns/listed')?.metadata).not.toHaveProperty('managedFields');
    expect(informer.get('ns/watched')?.metadata).not.toHaveProperty('managedFields');
    expect(informer.get('ns/watched')?.metadata?.name).toBe('watched');
    stop.abort();
    await running;
  });

  test('reports its cache size in informer_cache_objects while it runs', async () => {
    const api = new FakeKubeApi();
    const metrics = new OperatorMetrics({ processMetrics: false });
    await api.create(DEPLOYMENTS, { metadata: { name: 'listed', namespace: 'ns' } });
    const informer = new Informer<KubeObject>({ client: api, type: DEPLOYMENTS, namespace: 'ns', metrics });
    const everywhere = new Informer<KubeObject>({ client: api, type: DEPLOYMENTS, metrics });
    const sizes = async () =>
      (await metrics.cacheObjects.get()).values.map((v) => `${v.labels.resource} ${v.labels.namespace} ${v.value}`);
    const stop = new AbortController();
    const running = [informer.run(stop.signal), everywhere.run(stop.signal)];
    await Promise.all([informer.waitForSync(), everywhere.waitForSync()]);
    await api.create(DEPLOYMENTS, { metadata: { name: 'watched', namespace: 'ns' } });
    await api.create(DEPLOYMENTS, { metadata: { name: 'elsewhere', namespace: 'other' } });
    expect(await sizes()).toEqual(['deployments ns 2', 'deployments * 3']);
    await api.delete(DEPLOYMENTS, { namespace: 'ns', name: 'listed' });
    expect(await sizes()).toEqual(['deployments ns 1', 'deployments * 2']);
    expect(await metrics.registry.getSingleMetricAsString('informer_cache_objects')).toContain(
      'informer_cache_objects{resource="deployments",namespace="ns"} 1',
    );
    stop.abort();
    await Promise.all(running);
    expect(await sizes()).toEqual([]);
  });

  test('tells the adds of the first list from later ones', async () => {
    const api = new FakeKubeApi();
    await api.create(DEPLOYMENTS, { metadata: { name: 'old', namespace: 'ns' } });
    const informer = new Informer<KubeObject>({ client: api, type: DEPLOYMENTS, namespace: 'ns' });
    const seen: string[] = [];
    informer.on((event, object, initialList) => seen.push(`${event} ${object.metadata?.name} ${initialList}`));
    const stop = new AbortController();
    const running = informer.run(stop.signal);
    await informer.waitForSync();
    await api.create(DEPLOYMENTS, { metadata: { name: 'new', namespace: 'ns' } });
    stop.abort();
    await running;
    expect(seen).toEqual(['add old true', 'add new false']);
  });
});

describe('Informer: every way a watch ends', () => {
  const until = async (what: string, condition: () => boolean) => {
    for (let i = 0; i < 300 && !condition(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
    if (!condition()) throw new Error(`timed out waiting for ${what}`);
  };
  const deployment = (name: string) => ({ metadata: { name, namespace: 'ns' } });
  /** An informer of the Deployments in `ns` on `api`, its events as "event name", and its lists and watches as "VERB code". */
  async function watching(api: FakeKubeApi, options: { inactivityTimeoutMs?: number; watchList?: boolean } = {}) {
    const warnings: Array<{ error: string; msg: string }> = [];
    const logger = {
      warn: (fields: { error: string }, msg: string) => warnings.push({ error: fields.error, msg }),
      error: () => {},
    } as never;
    const metrics = new OperatorMetrics({ processMetrics: false });
    const informer = new Informer<KubeObject>({
      client: api,
      type: DEPLOYMENTS,
      namespace: 'ns',
      backoff: { baseMs: 5, maxMs: 10 },
      logger,
      metrics,
      ...options,
    });
    const seen: string[] = [];
    informer.on((event, object) => seen.push(`${event} ${object.metadata?.name}`));
    const stop = new AbortController();
    const running = informer.run(stop.signal);
    await informer.waitForSync();
    // The first watch is open.
    await new Promise((resolve) => setImmediate(resolve));
    seen.length = 0;
    const mark = api.requests.length;
    const restarts = async (reason: string) =>
      (await metrics.informerRestarts.get()).values.find((v) => v.labels.reason === reason)?.value ?? 0;
    return {
      informer,
      seen,
      warnings,
      restarts,
      requests: () =>
        api.requests
          .slice(mark)
          .filter((r) => r.resource === 'deployments' && ['LIST', 'WATCH'].includes(r.verb))
          .map((r) => `${r.verb} ${r.code}`),
      stop: async () => {
        stop.abort();
        await running;
      },
    };
  }

  test('an ERROR 410 (history compacted while the watch missed changes): lists again, and the difference emits an update for each changed object and a delete for each vanished one', async () => {
    const api = new FakeKubeApi();
    for (const name of ['same', 'changed', 'vanished']) await api.create(DEPLOYMENTS, deployment(name));
    const h = await watching(api);
    await api.unobserved(async () => {
      api.modify(DEPLOYMENTS, 'ns', 'changed', (d) => {
        d.spec = { replicas: 2 };
      });
      await api.delete(DEPLOYMENTS, { namespace: 'ns', name: 'vanished' });
      await api.create(DEPLOYMENTS, deployment('new'));
    });
    api.compact();
    api.sendToWatches('ERROR', { kind: 'Status', code: 410, reason: 'Expired', message: 'too old resource version' });
    await until('the relist', () => h.seen.length === 3);
    expect(h.seen).toEqual(['update changed', 'add new', 'delete vanished']);
    expect(
      h.informer
        .list()
        .map((d) => d.metadata?.name)
        .sort(),
    ).toEqual(['changed', 'new', 'same']);
    expect(h.informer.get('ns/changed')?.spec).toEqual({ replicas: 2 });
    expect(await h.restarts('expired')).toBe(1);
    expect(h.warnings).toEqual([]);
    await h.stop();
    expect(h.requests()).toEqual(['LIST 200', 'WATCH 200']);
  });

  test('a watch answered 410 Gone (it resumed from a compacted resourceVersion): lists again before watching, with the same difference', async () => {
    const api = new FakeKubeApi();
    for (const name of ['changed', 'vanished']) await api.create(DEPLOYMENTS, deployment(name));
    const h = await watching(api);
    await api.unobserved(async () => {
      api.modify(DEPLOYMENTS, 'ns', 'changed', (d) => {
        d.spec = { replicas: 2 };
      });
      await api.delete(DEPLOYMENTS, { namespace: 'ns', name: 'vanished' });
    });
    api.compact();
    // The server ends the watch (its timeout); the informer resumes from the version it last saw.
    api.closeWatches();
    await until('the relist', () => h.seen.length === 2);
    expect(h.seen).toEqual(['update changed', 'delete vanished']);
    await h.stop();
    expect(h.requests()).toEqual(['WATCH 410', 'LIST 200', 'WATCH 200']);
  });

  test('an ERROR event of another code: logged, backed off, and watched again from the last version, without a list', async () => {
    const api = new FakeKubeApi();
    await api.create(DEPLOYMENTS, deployment('a'));
    const h = await watching(api);
    api.sendToWatches('ERROR', { kind: 'Status', code: 500, reason: 'InternalError', message: 'etcd leader changed' });
    await until('the watch to resume', () => h.requests().length === 1);
    api.modify(DEPLOYMENTS, 'ns', 'a', (d) => {
      d.spec = { replicas: 2 };
    });
    await until('the change', () => h.seen.length === 1);
    expect(h.seen).toEqual(['update a']);
    expect(h.warnings).toEqual([
      { msg: 'list/watch failed, retrying', error: 'watch deployments: etcd leader changed' },
    ]);
    expect(await h.restarts('error')).toBe(1);
    await h.stop();
    expect(h.requests()).toEqual(['WATCH 200']);
  });

  test('a watch that stalls (nothing past the inactivity timeout) is restarted from the last version and gets what it missed, without a list', async () => {
    const api = new FakeKubeApi();
    await api.create(DEPLOYMENTS, deployment('a'));
    const h = await watching(api, { inactivityTimeoutMs: 50 });
    api.stallWatches();
    api.modify(DEPLOYMENTS, 'ns', 'a', (d) => {
      d.spec = { replicas: 2 };
    });
    expect(h.seen).toEqual([]);
    await until('the missed change', () => h.seen.length === 1);
    expect(h.seen).toEqual(['update a']);
    expect(h.informer.get('ns/a')?.spec).toEqual({ replicas: 2 });
    expect(await h.restarts('stalled')).toBeGreaterThanOrEqual(1);
    expect(h.warnings).toEqual([]);
    await h.stop();
    expect(h.requests().filter((r) => r.startsWith('LIST'))).toEqual([]);
  });
});

describe('Informer: streaming lists (watchList)', () => {
  const deployment = (name: string, namespace = 'ns') => ({
    metadata: { name, namespace, managedFields: [{ manager: 'kubectl', operation: 'Update' }] },
  });
  const listsAndWatches = (api: FakeKubeApi, from = 0) =>
    api.requests
      .slice(from)
      .filter((r) => r.resource === 'deployments' && ['LIST', 'WATCH'].includes(r.verb))
      .map((r) => `${r.verb} ${r.code}`);
  function start(api: FakeKubeApi, warnings: string[] = []) {
    const logger = { warn: (_: unknown, msg: string) => warnings.push(msg), error: () => {} } as never;
    const informer = new Informer<KubeObject>({
      client: api,
      type: DEPLOYMENTS,
      namespace: 'ns',
      watchList: true,
      backoff: { baseMs: 5, maxMs: 10 },
      logger,
    });
    const seen: string[] = [];
    informer.on((event, object, initialList) => seen.push(`${event} ${object.metadata?.name} ${initialList}`));
    const stop = new AbortController();
    const running = informer.run(stop.signal);
    return {
      informer,
      seen,
      stop: async () => {
        stop.abort();
        await running;
      },
    };
  }

  test('fills the cache from one watch with sendInitialEvents, without a list, and goes on watching on it after its bookmark', async () => {
    const api = new FakeKubeApi();
    await api.create(DEPLOYMENTS, deployment('a'));
    await api.create(DEPLOYMENTS, deployment('b'));
    await api.create(DEPLOYMENTS, deployment('elsewhere', 'other'));
    const h = start(api);
    await h.informer.waitForSync();
    expect(h.seen).toEqual(['add a true', 'add b true']);
    expect(h.informer.get('ns/a')?.metadata).not.toHaveProperty('managedFields');
    await new Promise((resolve) => setImmediate(resolve));
    api.modify(DEPLOYMENTS, 'ns', 'b', (d) => {
      d.spec = { replicas: 2 };
    });
    expect(h.seen).toEqual(['add a true', 'add b true', 'update b false']);
    await h.stop();
    // One request: the streaming list's watch goes on past its bookmark, as client-go's does.
    expect(listsAndWatches(api)).toEqual(['WATCH 200']);
  });

  test('after a 410 it streams again and emits the difference', async () => {
    const api = new FakeKubeApi();
    for (const name of ['changed', 'vanished']) await api.create(DEPLOYMENTS, deployment(name));
    const h = start(api);
    await h.informer.waitForSync();
    await new Promise((resolve) => setImmediate(resolve));
    const mark = api.requests.length;
    h.seen.length = 0;
    await api.unobserved(async () => {
      api.modify(DEPLOYMENTS, 'ns', 'changed', (d) => {
        d.spec = { replicas: 2 };
      });
      await api.delete(DEPLOYMENTS, { namespace: 'ns', name: 'vanished' });
    });
    api.compact();
    api.sendToWatches('ERROR', { kind: 'Status', code: 410, reason: 'Expired', message: 'too old resource version' });
    for (let i = 0; i < 300 && h.seen.length < 2; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(h.seen).toEqual(['update changed false', 'delete vanished false']);
    await h.stop();
    expect(listsAndWatches(api, mark)).toEqual(['WATCH 200']);
  });

  test('a stream that ends before its initial events is a failed list: warned, retried, and none of its objects cached', async () => {
    const api = new FakeKubeApi();
    await api.create(DEPLOYMENTS, deployment('a'));
    await api.create(DEPLOYMENTS, deployment('b'));
    // The first streaming list's connection drops after one object, before the bookmark.
    let cut = false;
    const watch = api.watch.bind(api);
    const cutting: KubeApi['watch'] = (type, namespace, query, onEvent, onDone, inactivityTimeoutMs, options) => {
      if (cut || !query.sendInitialEvents)
        return watch(type, namespace, query, onEvent, onDone, inactivityTimeoutMs, options);
      cut = true;
      onEvent('ADDED', structuredClone(api.peek(DEPLOYMENTS, 'ns', 'a')) as KubeObject);
      onDone(new Error('other side closed'));
      return Promise.resolve(new AbortController());
    };
    Object.assign(api, { watch: cutting });
    const warnings: string[] = [];
    const h = start(api, warnings);
    await h.informer.waitForSync();
    expect(h.seen).toEqual(['add a true', 'add b true']);
    expect(warnings).toEqual(['list/watch failed, retrying']);
    await h.stop();
  });

  test('an ERROR after its initial events is a failed watch: watched again from the last version, not streamed again', async () => {
    const api = new FakeKubeApi();
    await api.create(DEPLOYMENTS, deployment('a'));
    const watches: string[] = [];
    const watch = api.watch.bind(api);
    const recording: KubeApi['watch'] = (type, namespace, query, ...rest) => {
      watches.push(query.sendInitialEvents ? 'stream' : `from ${query.resourceVersion}`);
      return watch(type, namespace, query, ...rest);
    };
    Object.assign(api, { watch: recording });
    const h = start(api);
    await h.informer.waitForSync();
    await new Promise((resolve) => setImmediate(resolve));
    const version = h.informer.get('ns/a')?.metadata?.resourceVersion;
    api.sendToWatches('ERROR', { kind: 'Status', code: 500, reason: 'InternalError', message: 'etcd leader changed' });
    for (let i = 0; i < 300 && watches.length < 2; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    await h.stop();
    expect(watches).toEqual(['stream', `from ${version}`]);
    expect(h.seen).toEqual(['add a true']);
  });

  test('a server that refuses it (422: the WatchList feature off) is listed in pages, then and at every later relist, with one warning', async () => {
    const api = new FakeKubeApi();
    await api.create(DEPLOYMENTS, deployment('a'));
    api.failWith(
      (r) => r.verb === 'WATCH',
      new ApiError(
        422,
        'Invalid',
        'sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled',
      ),
    );
    const warnings: string[] = [];
    const h = start(api, warnings);
    await h.informer.waitForSync();
    expect(h.seen).toEqual(['add a true']);
    await new Promise((resolve) => setImmediate(resolve));
    api.compact();
    api.sendToWatches('ERROR', { kind: 'Status', code: 410, reason: 'Expired', message: 'too old resource version' });
    for (let i = 0; i < 300 && listsAndWatches(api).length < 5; i++)
      await new Promise((resolve) => setTimeout(resolve, 10));
    await h.stop();
    expect(listsAndWatches(api)).toEqual(['WATCH 422', 'LIST 200', 'WATCH 200', 'LIST 200', 'WATCH 200']);
    expect(warnings).toEqual(['the API server refused a streaming list (sendInitialEvents); listing in pages instead']);
  });
});

describe('KubeClient credentials', () => {
  test('are computed once, not per request, and again after a 401', async () => {
    const seen: IncomingHttpHeaders[] = [];
    let status = 200;
    const server = createServer((request, response) => {
      seen.push(request.headers);
      response.writeHead(status, { 'content-type': 'application/json' });
      response.end(
        JSON.stringify(
          status === 200
            ? { metadata: { name: 'a' } }
            : { kind: 'Status', code: status, reason: 'Unauthorized', message: 'Unauthorized' },
        ),
      );
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    try {
      const kc = new KubeConfig();
      kc.loadFromOptions({
        clusters: [
          { name: 'local', server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, skipTLSVerify: true },
        ],
        users: [{ name: 'u', token: 'first-token' }],
        contexts: [{ name: 'ctx', cluster: 'local', user: 'u' }],
        currentContext: 'ctx',
      });
      const computed = jest.spyOn(kc, 'applyToHTTPSOptions');
      const client = new KubeClient(kc);
      for (let i = 0; i < 5; i++) await client.get(DEPLOYMENTS, { namespace: 'ns', name: 'a' });
      expect(computed).toHaveBeenCalledTimes(1);
      expect(seen.map((h) => h.authorization)).toEqual(Array(5).fill('Bearer first-token'));

      // The token is rotated; the server refuses the old one once.
      kc.users[0] = { name: 'u', token: 'second-token' };
      status = 401;
      await expect(client.get(DEPLOYMENTS, { namespace: 'ns', name: 'a' })).rejects.toThrow('Unauthorized');
      status = 200;
      await client.get(DEPLOYMENTS, { namespace: 'ns', name: 'a' });
      expect(computed).toHaveBeenCalledTimes(2);
      expect(seen.at(-1)?.authorization).toBe('Bearer second-token');
    } finally {
      server.close();
    }
  });
});

describe('LeaderElector', () => {
  const options = {
    namespace: 'website-system',
    name: 'website-operator',
    leaseDurationMs: 400,
    renewDeadlineMs: 250,
    retryPeriodMs: 50,
  };
  const until = async (condition: () => boolean, what: string) => {
    for (let i = 0; i < 400 && !condition(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
    if (!condition()) throw new Error(`timed out waiting for ${what}`);
  };
  const campaign = (elector: LeaderElector) => {
    const stop = new AbortController();
    let leadership: AbortSignal | undefined;
    const running = elector.run(stop.signal, async (signal) => {
      leadership = signal;
      await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
    });
    return {
      stop: async () => {
        stop.abort();
        await running;
      },
      lost: () => leadership?.aborted ?? false,
    };
  };
  const leaseSpec = (api: FakeKubeApi) => api.peek<KubeObject>(LEASES, 'website-system', 'website-operator')?.spec;

  test('one replica leads; a stopping leader releases the Lease and the other takes over at once', async () => {
    const api = new FakeKubeApi();
    const a = new LeaderElector({
      ...options,
      client: api,
      identity: 'a',
      leaseDurationMs: 60_000,
      renewDeadlineMs: 40_000,
    });
    const b = new LeaderElector({
      ...options,
      client: api,
      identity: 'b',
      leaseDurationMs: 60_000,
      renewDeadlineMs: 40_000,
    });
    const runA = campaign(a);
    await until(() => a.isLeader(), 'a to lead');
    const runB = campaign(b);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(b.isLeader()).toBe(false);
    await runA.stop();
    expect(leaseSpec(api)).toMatchObject({
      leaseDurationSeconds: 1,
    });
    // Released: b need not wait out the 60 s lease.
    await until(() => b.isLeader(), 'b to lead');
    expect(leaseSpec(api)).toMatchObject({
      holderIdentity: 'b',
      leaseTransitions: 1,
    });
    await runB.stop();
  });

  test('a leader that cannot renew gives up leading; another takes the Lease once it has expired', async () => {
    const api = new FakeKubeApi();
    // a's connection to the API server, which the test breaks.
    let broken = false;
    const viaA = new Proxy(api, {
      get(target, property) {
        const value = Reflect.get(target, property, target);
        if (typeof value !== 'function') return value;
        return (...args: unknown[]) =>
          broken
            ? Promise.reject(new ApiError(0, 'ConnectionError', 'connect ECONNREFUSED'))
            : value.apply(target, args);
      },
    });
    const a = new LeaderElector({ ...options, client: viaA, identity: 'a' });
    const runA = campaign(a);
    await until(() => a.isLeader(), 'a to lead');
    broken = true;
    await until(() => runA.lost(), 'a to give up leading');
    const b = new LeaderElector({ ...options, client: api, identity: 'b' });
    const runB = campaign(b);
    await until(() => b.isLeader(), 'b to take the expired Lease');
    await Promise.all([runA.stop(), runB.stop()]);
  });

  /** A Lease another replica holds and renewed just now. */
  const heldBy = (api: FakeKubeApi, holder: string, leaseDurationSeconds: number) =>
    api.create(LEASES, {
      metadata: { name: 'website-operator', namespace: 'website-system' },
      spec: {
        holderIdentity: holder,
        leaseDurationSeconds,
        acquireTime: new Date().toISOString(),
        renewTime: new Date().toISOString(),
        leaseTransitions: 0,
      },
    });

  test("a holder that stops renewing keeps the Lease for leaseDuration as seen on the candidate's clock, then loses it", async () => {
    const api = new FakeKubeApi();
    await heldBy(api, 'gone', 1);
    const b = new LeaderElector({ ...options, client: api, identity: 'b' });
    const started = performance.now();
    const runB = campaign(b);
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect(b.isLeader()).toBe(false);
    expect(b.status()).toMatchObject({ leading: false, holder: 'gone' });
    await until(() => b.isLeader(), 'b to take the expired Lease');
    expect(performance.now() - started).toBeGreaterThanOrEqual(1_000);
    expect(leaseSpec(api)).toMatchObject({
      holderIdentity: 'b',
      leaseTransitions: 1,
    });
    await runB.stop();
  });

  test('a conflict on the update that takes the Lease means another replica wrote first: this round is lost, quietly, and a later one wins', async () => {
    const api = new FakeKubeApi();
    await heldBy(api, 'gone', 0);
    const logged: string[] = [];
    const logger = {
      warn: (_: unknown, msg: string) => logged.push(msg),
      error: (_: unknown, msg: string) => logged.push(msg),
      info: () => {},
    } as never;
    api.failWith(
      (r) => r.resource === 'leases' && r.verb === 'UPDATE',
      new ApiError(409, 'Conflict', 'the object has been modified'),
    );
    const a = new LeaderElector({ ...options, client: api, identity: 'a', logger });
    const runA = campaign(a);
    await until(() => a.isLeader(), 'a to lead on a later round');
    await runA.stop();
    expect(
      api
        .since(0)
        .filter((r) => r.startsWith('UPDATE'))
        .slice(0, 2),
    ).toEqual(['UPDATE leases 409', 'UPDATE leases 200']);
    expect(logged).toEqual([]);
  });

  test('a conflicting write means someone else won this round, not an error', async () => {
    const api = new FakeKubeApi();
    const warnings: string[] = [];
    const logger = { warn: (_: unknown, msg: string) => warnings.push(msg), info: () => {} } as never;
    api.failWith(
      (r) => r.resource === 'leases' && r.verb === 'CREATE',
      new ApiError(409, 'AlreadyExists', 'leases "website-operator" already exists'),
    );
    const a = new LeaderElector({ ...options, client: api, identity: 'a', logger });
    const runA = campaign(a);
    await until(() => a.isLeader(), 'a to lead on a later round');
    await runA.stop();
    expect(warnings).toEqual([]);
  });
});

test('a Lease that cannot be created (its namespace is missing) is an error at every retry, naming the Lease, the cause and the fix', async () => {
  const api = new FakeKubeApi();
  api.failWith(
    (r) => r.resource === 'leases' && r.verb === 'CREATE',
    new ApiError(404, 'NotFound', 'namespaces "website-system" not found'),
    3,
  );
  const errors: Array<{ fields: Record<string, string>; msg: string }> = [];
  const logger = {
    error: (fields: Record<string, string>, msg: string) => errors.push({ fields, msg }),
    info: () => {},
    warn: () => {},
  } as never;
  const elector = new LeaderElector({
    client: api,
    namespace: 'website-system',
    name: 'website-operator',
    identity: 'a',
    leaseDurationMs: 400,
    renewDeadlineMs: 250,
    retryPeriodMs: 20,
    logger,
  });
  const stop = new AbortController();
  const running = elector.run(stop.signal, async (signal) => {
    await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
  });
  for (let i = 0; i < 300 && !elector.isLeader(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
  stop.abort();
  await running;
  expect(errors).toHaveLength(3);
  expect(errors[0]).toEqual({
    msg: 'leader election: cannot take or renew the Lease website-system/website-operator; not reconciling until it can',
    fields: {
      lease: 'website-system/website-operator',
      error: 'namespaces "website-system" not found',
      fix: 'create the namespace website-system, set OPERATOR_NAMESPACE to an existing namespace, or run with LEADER_ELECTION=false (one replica)',
    },
  });
});

describe('ObjectWatches', () => {
  const settle = () => new Promise((resolve) => setTimeout(resolve, 20));

  test('calls back once, at the first change of the object after the version read; a watch the server closes is resumed', async () => {
    const api = new FakeKubeApi();
    const read = await api.create(DEPLOYMENTS, {
      metadata: { name: 'website-a', namespace: 'ns' },
      spec: { replicas: 1 },
    });
    await api.create(DEPLOYMENTS, { metadata: { name: 'website-b', namespace: 'ns' } });
    const watches = new ObjectWatches({ client: api });
    let changes = 0;
    watches.watch('ns/a deployments', DEPLOYMENTS, read, () => changes++);
    await settle();
    expect(changes).toBe(0);
    api.closeWatches();
    await settle();
    api.modify(DEPLOYMENTS, 'ns', 'website-b', (d) => {
      d.spec = { replicas: 2 };
    });
    await settle();
    expect(changes).toBe(0);
    api.modify(DEPLOYMENTS, 'ns', 'website-a', (d) => {
      d.spec = { replicas: 2 };
    });
    await api.delete(DEPLOYMENTS, { namespace: 'ns', name: 'website-a' });
    await settle();
    expect(changes).toBe(1);
    expect(watches.size).toBe(0);
  });

  test('a watch that fails is retried after a backoff, not dropped', async () => {
    const api = new FakeKubeApi();
    const read = await api.create(DEPLOYMENTS, { metadata: { name: 'website-a', namespace: 'ns' } });
    api.failWith((r) => r.verb === 'WATCH', new ApiError(0, 'ConnectionError', 'connect ECONNREFUSED'), 2);
    const warnings: string[] = [];
    const watches = new ObjectWatches({
      client: api,
      backoff: { baseMs: 5, maxMs: 10 },
      logger: { warn: (_: unknown, msg: string) => warnings.push(msg) } as never,
    });
    let changes = 0;
    watches.watch('a', DEPLOYMENTS, read, () => changes++);
    await settle();
    expect(warnings).toEqual([
      'watch of an object that blocks a reconcile failed, retrying',
      'watch of an object that blocks a reconcile failed, retrying',
    ]);
    expect(watches.size).toBe(1);
    api.modify(DEPLOYMENTS, 'ns', 'website-a', (d) => {
      d.metadata!.labels = { changed: 'yes' };
    });
    await settle();
    expect(changes).toBe(1);
  });

  test('a change made before the watch started (after the read) still counts; stop() ends every watch without calling back', async () => {
    const api = new FakeKubeApi();
    const read = await api.create(DEPLOYMENTS, { metadata: { name: 'website-a', namespace: 'ns' } });
    api.modify(DEPLOYMENTS, 'ns', 'website-a', (d) => {
      d.metadata!.labels = { changed: 'yes' };
    });
    const watches = new ObjectWatches({ client: api });
    let changes = 0;
    watches.watch('a', DEPLOYMENTS, read, () => changes++);
    await settle();
    expect(changes).toBe(1);
    const again = api.peek<KubeObject>(DEPLOYMENTS, 'ns', 'website-a')!;
    watches.watch('a', DEPLOYMENTS, again, () => changes++);
    await settle();
    watches.stop();
    api.modify(DEPLOYMENTS, 'ns', 'website-a', (d) => {
      d.metadata!.labels = { changed: 'twice' };
    });
    await settle();
    expect(changes).toBe(1);
    expect(watches.size).toBe(0);
  });
});
