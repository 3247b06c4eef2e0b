import { PassThrough } from 'node:stream';
import { sumMetric } from '../../harness/process/metrics.ts';
import { WatchNamespaces } from '../../lib/operator/watch-namespaces.ts';
import { ConfigError, loadConfig } from '../../operator/src/bin/config.ts';
import { ApiError } from '../../operator/src/controller/api-error.ts';
import { DEPLOYMENTS, EVENTS, type KubeObject, SERVICES } from '../../operator/src/controller/kube-api.ts';
import { MultiNamespaceInformer } from '../../operator/src/controller/multi-namespace-informer.ts';
import { FakeKubeApi } from '../../operator/src/fake/fake-kube-api.ts';
import { createLogger } from '../../operator/src/observability/logger.ts';
import { OperatorMetrics } from '../../operator/src/observability/metrics.ts';
import { websitesType } from '../../operator/src/reconciler/website.ts';
import type { OperatorConfig } from '../../operator/src/reconciler/website-controller.ts';
import { testOperatorConfig, type WebsiteOperator, websiteOperator } from './operator-config.ts';

// WATCH_NAMESPACE: what the operator accepts, and the operator over several namespaces on an
// in-memory API, one of which it is not granted (test/cluster/watch-namespaces.test.ts proves the
// same against a real API server, as the ServiceAccount).

describe('WATCH_NAMESPACE', () => {
  test('unset or empty: the operator namespace; a list: those namespaces, in order; *: all namespaces', () => {
    expect(loadConfig({}).watchNamespaces).toEqual(['website-system']);
    expect(loadConfig({ OPERATOR_NAMESPACE: 'ops', WATCH_NAMESPACE: ' ' }).watchNamespaces).toEqual(['ops']);
    expect(loadConfig({ WATCH_NAMESPACE: 'team-b, team-a' }).watchNamespaces).toEqual(['team-b', 'team-a']);
    expect(loadConfig({ WATCH_NAMESPACE: 'solo' }).watchNamespaces).toEqual(['solo']);
    expect(loadConfig({ WATCH_NAMESPACE: '*' }).watchNamespaces).toBe('*');
  });

  const suffix = '; expected namespace names separated by commas, or * for all namespaces';
  test.each([
    [
      'Team-A',
      `WATCH_NAMESPACE="Team-A" is not valid: "Team-A" is not a namespace name: a namespace name is at most 63 lower-case letters, digits and '-', starting and ending with a letter or digit${suffix}`,
    ],
    ['a,b_c,-d', `WATCH_NAMESPACE="a,b_c,-d" is not valid: "b_c", "-d" are not namespace names`],
    [`${'n'.repeat(64)}`, 'is not a namespace name'],
    [
      'team-a,team-b,team-a',
      `WATCH_NAMESPACE="team-a,team-b,team-a" is not valid: "team-a" listed more than once${suffix}`,
    ],
    ['team-a,,team-b', `WATCH_NAMESPACE="team-a,,team-b" is not valid: an entry is empty${suffix}`],
    ['team-a,', 'WATCH_NAMESPACE="team-a," is not valid: an entry is empty'],
    [
      '*,team-a',
      `WATCH_NAMESPACE="*,team-a" is not valid: '*' (all namespaces) cannot be combined with namespace names`,
    ],
    ['team-*', 'WATCH_NAMESPACE="team-*" is not valid: "team-*" is not a namespace name'],
  ])('%j is refused with a ConfigError naming the variable', (value, message) => {
    expect(() => loadConfig({ WATCH_NAMESPACE: value })).toThrow(ConfigError);
    expect(() => loadConfig({ WATCH_NAMESPACE: value })).toThrow(message);
  });
});

describe('WatchNamespaces', () => {
  test('spells WATCH_NAMESPACE: the list joined by commas, or *', () => {
    expect(WatchNamespaces.of('team-a', 'team-b').environmentValue).toBe('team-a,team-b');
    expect(WatchNamespaces.of('team-a').namespaces).toEqual(['team-a']);
    expect(WatchNamespaces.all().environmentValue).toBe('*');
    expect(WatchNamespaces.all().namespaces).toBeUndefined();
  });

  test('refuses what the operator would refuse', () => {
    expect(() => WatchNamespaces.of()).toThrow('WatchNamespaces.of(): expected at least one namespace');
    expect(() => WatchNamespaces.of('team-a', 'team-a')).toThrow(
      'WatchNamespaces.of("team-a", "team-a"): "team-a" listed more than once',
    );
    expect(() => WatchNamespaces.of('Team')).toThrow('"Team" is not a namespace name');
    expect(() => WatchNamespaces.of('*')).toThrow("'*' (all namespaces) cannot be combined");
  });
});

describe('MultiNamespaceInformer', () => {
  test('one list and watch per namespace; get and hasSynced answer for the namespace of the key', async () => {
    const api = new FakeKubeApi();
    for (const namespace of ['a', 'b', 'other']) await api.create(DEPLOYMENTS, { metadata: { name: 'd', namespace } });
    const informer = new MultiNamespaceInformer<KubeObject>({ client: api, type: DEPLOYMENTS, namespaces: ['a', 'b'] });
    const stop = new AbortController();
    const running = informer.run(stop.signal);
    await informer.waitForSync();
    expect(api.requests.filter((r) => r.verb === 'LIST').map((r) => r.namespace)).toEqual(['a', 'b']);
    expect([
      informer.get('a/d')?.metadata?.namespace,
      informer.get('b/d')?.metadata?.namespace,
      informer.get('other/d'),
    ]).toEqual(['a', 'b', undefined]);
    expect(informer.list()).toHaveLength(2);
    expect([informer.hasSynced('a/d'), informer.hasSynced('other/d'), informer.hasSynced()]).toEqual([
      true,
      false,
      true,
    ]);
    stop.abort();
    await running;
  });

  test('a namespace refused as forbidden settles the wait (retrying cannot sync it), one that is unreachable does not', async () => {
    const api = new FakeKubeApi();
    api.failWith(
      (r) => r.namespace === 'denied',
      new ApiError(403, 'Forbidden', 'forbidden'),
      Number.POSITIVE_INFINITY,
    );
    api.failWith(
      (r) => r.namespace === 'flaky',
      new ApiError(0, 'ECONNREFUSED', 'connect ECONNREFUSED'),
      Number.POSITIVE_INFINITY,
    );
    const logger = { error: () => {}, warn: () => {}, info: () => {}, debug: () => {} } as never;
    const stop = new AbortController();
    const settled = async (namespaces: string[]) => {
      const informer = new MultiNamespaceInformer<KubeObject>({ client: api, type: DEPLOYMENTS, namespaces, logger });
      const running = informer.run(stop.signal);
      const outcome = await Promise.race([
        informer.waitUntilSyncedOrForbidden().then(() => 'settled'),
        new Promise((resolve) => setTimeout(() => resolve('waiting'), 1_500)),
      ]);
      return { outcome, synced: [informer.hasSynced('ok/x'), informer.hasSynced()], running };
    };
    const denied = await settled(['ok', 'denied']);
    const flaky = await settled(['ok', 'flaky']);
    stop.abort();
    await Promise.all([denied.running, flaky.running]);
    expect(denied).toMatchObject({ outcome: 'settled', synced: [true, false] });
    expect(flaky).toMatchObject({ outcome: 'waiting', synced: [true, false] });
  });
});

const GROUP = 'web.example.com';
const WEBSITES = websitesType(GROUP);

function operatorConfig(watchNamespaces: OperatorConfig['watchNamespaces']): OperatorConfig {
  // Longer than any wait below: a namespace that cannot be listed must not hold up the others.
  return testOperatorConfig({ group: GROUP, watchNamespaces, cacheSyncTimeoutMs: 60_000 });
}

const website = (namespace: string, name: string): KubeObject => ({
  apiVersion: `${GROUP}/v1`,
  kind: 'Website',
  metadata: { name, namespace },
  spec: { title: name, replicas: 1, color: '#2196F3' },
});

async function until<T>(
  what: string,
  probe: () => T | undefined | false | Promise<T | undefined | false>,
  timeoutMs = 10_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

let running: WebsiteOperator | undefined;
afterEach(async () => {
  await running?.manager.stop();
  running = undefined;
});

async function start(api: FakeKubeApi, watchNamespaces: OperatorConfig['watchNamespaces']) {
  const logs: Array<Record<string, unknown> & { level: string; msg: string }> = [];
  const stream = new PassThrough();
  stream.on('data', (line: Buffer) => logs.push(JSON.parse(line.toString())));
  const metrics = new OperatorMetrics({ processMetrics: false });
  const operator = websiteOperator(operatorConfig(watchNamespaces), {
    client: api,
    logger: createLogger('info', stream),
    metrics,
  });
  running = operator;
  await operator.manager.start();
  const readyz = async () => {
    const response = await fetch(`http://127.0.0.1:${operator.manager.healthServer.port}/readyz`);
    return { status: response.status, body: await response.text() };
  };
  const synced = async (namespace: string) =>
    sumMetric(await metrics.registry.metrics(), 'watched_namespace_synced', { namespace });
  return { operator, logs, readyz, synced };
}

const childrenOf = (api: FakeKubeApi, namespace: string, name: string) =>
  [api.peek(DEPLOYMENTS, namespace, `website-${name}`), api.peek(SERVICES, namespace, `website-${name}`)].filter(
    Boolean,
  ).length;

describe('the operator over several namespaces', () => {
  test('reconciles the Websites of each namespace it is granted; a namespace it is not gets nothing, an error naming it and the fix at each retry, and a not-ready /readyz naming it', async () => {
    const api = new FakeKubeApi();
    let granted = false;
    const forbidden = new ApiError(
      403,
      'Forbidden',
      'websites.web.example.com is forbidden: User "system:serviceaccount:website-system:website-operator" cannot list resource "websites" in the namespace "team-c"',
    );
    api.failWith(
      (request) => !granted && request.namespace === 'team-c' && ['LIST', 'WATCH'].includes(request.verb),
      forbidden,
      Number.POSITIVE_INFINITY,
    );
    for (const namespace of ['team-a', 'team-b', 'team-c', 'elsewhere'])
      await api.create(WEBSITES, website(namespace, `site-${namespace}`));

    const setup = api.requests.length;
    const h = await start(api, ['team-a', 'team-b', 'team-c']);
    await until(
      'both granted namespaces to converge',
      () => childrenOf(api, 'team-a', 'site-team-a') === 2 && childrenOf(api, 'team-b', 'site-team-b') === 2,
    );
    await until(
      'two errors per resource in team-c',
      () => h.logs.filter((l) => l.level === 'error' && l.namespace === 'team-c').length >= 6,
    );

    // Each namespace's Website status and events are written in its own namespace.
    expect(api.peek<KubeObject>(WEBSITES, 'team-b', 'site-team-b')!.status).toMatchObject({
      url: 'http://website-site-team-b.team-b.svc.cluster.local',
    });
    await until('the Created event in team-b', async () =>
      (await api.list(EVENTS, 'team-b')).items.some(
        (e) => e.reason === 'Created' && (e.involvedObject as { name: string }).name === 'site-team-b',
      ),
    );
    // Nothing was written to the namespace not granted, nor to one not watched.
    const requests = api.requests.slice(setup);
    expect(requests.filter((r) => r.namespace === 'team-c' && !['LIST', 'WATCH'].includes(r.verb))).toEqual([]);
    expect(
      requests.filter((r) => r.namespace === 'elsewhere' || (r.verb === 'LIST' && r.namespace === undefined)),
    ).toEqual([]);
    expect(childrenOf(api, 'team-c', 'site-team-c') + childrenOf(api, 'elsewhere', 'site-elsewhere')).toBe(0);

    const errors = h.logs.filter((l) => l.level === 'error');
    expect(new Set(errors.map((l) => `${l.namespace} ${l.resource}`))).toEqual(
      new Set(['team-c websites', 'team-c deployments', 'team-c services']),
    );
    expect(errors.find((l) => l.resource === 'websites')).toMatchObject({
      msg: 'list/watch of websites in namespace team-c is forbidden; retrying',
      error: forbidden.message,
      fix: "grant this ServiceAccount the Website rules in namespace team-c (the WebsiteOperator construct's watchNamespaces creates its Role and RoleBinding; the namespace must exist), or remove team-c from WATCH_NAMESPACE",
      retryInMs: expect.any(Number),
    });
    expect(await h.readyz()).toEqual({
      status: 503,
      body: '[+]caches of namespace team-a ok\n[+]caches of namespace team-b ok\n[-]caches of namespace team-c failed\n[+]leader-election ok: off (LEADER_ELECTION=false): this replica reconciles\nreadyz check failed\n',
    });
    expect([await h.synced('team-a'), await h.synced('team-b'), await h.synced('team-c')]).toEqual([1, 1, 0]);

    // Granting it (a Role applied later) is picked up at the next retry.
    granted = true;
    await until('team-c to converge once granted', () => childrenOf(api, 'team-c', 'site-team-c') === 2);
    // Each of team-c's informers retries on its own backoff (up to 30 s): the Website's may sync,
    // and its children be written, before the others have synced.
    await until('every cache of team-c to sync', async () => (await h.readyz()).status === 200, 40_000);
    expect(await h.readyz()).toEqual({
      status: 200,
      body: '[+]caches of namespace team-a ok\n[+]caches of namespace team-b ok\n[+]caches of namespace team-c ok\n[+]leader-election ok: off (LEADER_ELECTION=false): this replica reconciles\nreadyz check passed\n',
    });
    expect(await h.synced('team-c')).toBe(1);
  });

  test('all namespaces (*): cluster-wide streaming lists and watches, and Websites of every namespace reconciled', async () => {
    const api = new FakeKubeApi();
    for (const namespace of ['team-a', 'team-b']) await api.create(WEBSITES, website(namespace, 'site'));
    const h = await start(api, '*');
    await until(
      'both namespaces to converge',
      () => childrenOf(api, 'team-a', 'site') === 2 && childrenOf(api, 'team-b', 'site') === 2,
    );
    expect(api.requests.filter((r) => r.verb === 'LIST')).toEqual([]);
    const watched = api.requests.filter((r) => r.verb === 'WATCH').map((r) => `${r.resource} ${r.namespace ?? '*'}`);
    expect([...new Set(watched)].sort()).toEqual(['deployments *', 'services *', 'websites *']);
    expect(await h.readyz()).toEqual({
      status: 200,
      body: '[+]caches ok\n[+]leader-election ok: off (LEADER_ELECTION=false): this replica reconciles\nreadyz check passed\n',
    });
    expect(await h.synced('*')).toBe(1);
    // A Website in a namespace created later is reconciled too.
    await api.create(WEBSITES, website('team-new', 'site'));
    await until('the new namespace to converge', () => childrenOf(api, 'team-new', 'site') === 2);
  });

  test('the Website CRD not installed: an error at each retry naming the CRD and how to install it, then reconciling once it is', async () => {
    const api = new FakeKubeApi();
    let installed = false;
    const notServed = new ApiError(404, 'NotFound', 'the server could not find the requested resource');
    api.failWith(
      (request) => !installed && request.resource === 'websites' && ['LIST', 'WATCH'].includes(request.verb),
      notServed,
      Number.POSITIVE_INFINITY,
    );
    await api.create(WEBSITES, website('team-a', 'site'));
    const h = await start(api, ['team-a']);
    await until('an error about the CRD', () => h.logs.find((l) => l.level === 'error' && l.resource === 'websites'));
    expect(h.logs.find((l) => l.level === 'error' && l.resource === 'websites')).toMatchObject({
      msg: `the API server does not serve websites.${GROUP}; retrying`,
      error: notServed.message,
      fix: `install the Website CRD (websites.${GROUP}) first: kubectl apply -f dist/website-operator/, or the WebsiteCrd construct's manifest`,
    });
    installed = true;
    await until(
      'the Website to converge once its CRD is installed',
      () => childrenOf(api, 'team-a', 'site') === 2,
      40_000,
    );
  });
});
