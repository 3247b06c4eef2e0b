import { PassThrough } from 'node:stream';
import { ApiError } from '../../operator/src/controller/api-error.ts';
import { DEPLOYMENTS, type KubeApi, type KubeObject } from '../../operator/src/controller/kube-api.ts';
import { FakeKubeApi } from '../../operator/src/fake/fake-kube-api.ts';
import { createLogger } from '../../operator/src/observability/logger.ts';
import { OperatorMetrics } from '../../operator/src/observability/metrics.ts';
import { websitesType } from '../../operator/src/reconciler/website.ts';
import type { OperatorConfig } from '../../operator/src/reconciler/website-controller.ts';
import { testOperatorConfig, type WebsiteOperator, websiteOperator } from './operator-config.ts';

// The Operator's leader election on an in-memory API: /readyz lists every check (as the API
// server's /readyz?verbose does), and not leading shows there and in
// leader_election_not_leading_seconds without ever making the pod unready; a leader whose API
// server stops answering aborts the reconciles in flight once it can no longer renew its Lease.

const config = testOperatorConfig({
  leaderElection: true,
  leaseDurationMs: 4_000,
  renewDeadlineMs: 3_000,
  retryPeriodMs: 20,
  concurrency: 2,
});

const running: WebsiteOperator[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((operator) => operator.manager.stop()));
});

async function start(
  api: KubeApi,
  identity: string,
  overrides: Partial<OperatorConfig> = {},
): Promise<{ operator: WebsiteOperator; metrics: OperatorMetrics; errors: string[] }> {
  const errors: string[] = [];
  const stream = new PassThrough();
  stream.on('data', (line: Buffer) => {
    const entry = JSON.parse(line.toString()) as { level: string; msg: string };
    if (entry.level === 'error') errors.push(entry.msg);
  });
  const metrics = new OperatorMetrics({ processMetrics: false });
  const operator = websiteOperator(
    { ...config, identity, ...overrides },
    { client: api, logger: createLogger('info', stream), metrics },
  );
  running.push(operator);
  await operator.manager.start();
  return { operator, metrics, errors };
}

async function readyz(operator: WebsiteOperator): Promise<{ status: number; body: string }> {
  const response = await fetch(`http://127.0.0.1:${operator.manager.healthServer.port}/readyz`);
  return { status: response.status, body: await response.text() };
}

async function until(what: string, condition: () => boolean | Promise<boolean>): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (await condition()) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/**
 * The operator's connection to `api`, with every request but a watch (those already open are left
 * alone) handed to `intercept`: its name ("create deployments"), method, arguments, and `send`.
 */
function interceptRequests(
  api: FakeKubeApi,
  intercept: (request: string, method: string, args: unknown[], send: () => Promise<unknown>) => Promise<unknown>,
): FakeKubeApi {
  return new Proxy(api, {
    get(target, property) {
      const value = Reflect.get(target, property, target);
      if (typeof value !== 'function' || property === 'watch') return value;
      return (...args: unknown[]) => {
        const request = `${String(property)} ${(args[0] as { resource?: string } | undefined)?.resource}`;
        return intercept(request, String(property), args, () => value.apply(target, args) as Promise<unknown>);
      };
    },
  });
}

/** Website `a` in team-a, as a user would create it. */
const createWebsiteA = (api: FakeKubeApi) =>
  api.create(websitesType('web.example.com'), {
    apiVersion: 'web.example.com/v1',
    kind: 'Website',
    metadata: { name: 'a', namespace: 'team-a' },
    spec: { title: 'A', replicas: 1, color: '#000' },
  });

const notLeadingSeconds = async (metrics: OperatorMetrics) => (await metrics.notLeading.get()).values[0]?.value ?? 0;

test('/readyz lists each check with its state: the leader and the standby of two replicas are both ready, the standby says who leads', async () => {
  const api = new FakeKubeApi();
  const leader = await start(api, 'op-0');
  await until('op-0 to lead', () => leader.operator.manager.isLeader());
  const standby = await start(api, 'op-1');
  await until('op-1 to stand by', async () => (await readyz(standby.operator)).body.includes('standing by'));

  expect(await readyz(leader.operator)).toEqual({
    status: 200,
    body: '[+]caches of namespace team-a ok\n[+]leader-election ok: leading: Lease website-system/website-operator\nreadyz check passed\n',
  });
  const { status, body } = await readyz(standby.operator);
  expect(status).toBe(200);
  expect(body).toMatch(
    /^\[\+\]caches of namespace team-a ok\n\[\+\]leader-election ok: standing by for \d+ s: Lease website-system\/website-operator held by op-0\nreadyz check passed\n$/,
  );
  expect(await notLeadingSeconds(leader.metrics)).toBe(0);
  await until('the standby to count the time it stands by', async () => (await notLeadingSeconds(standby.metrics)) > 0);
  expect(standby.errors).toEqual([]);
});

test('a replica that cannot take the Lease stays ready but says why in /readyz, and leader_election_not_leading_seconds grows', async () => {
  const api = new FakeKubeApi();
  api.failWith(
    (r) => r.resource === 'leases' && r.verb === 'CREATE',
    new ApiError(404, 'NotFound', 'namespaces "website-system" not found'),
    1_000_000,
  );
  const replica = await start(api, 'op-0');
  await until('an attempt to fail', () => replica.errors.length > 0);
  const { status, body } = await readyz(replica.operator);
  expect(status).toBe(200);
  expect(body).toMatch(
    /^\[\+\]caches of namespace team-a ok\n\[\+\]leader-election ok: not leading for \d+ s: Lease website-system\/website-operator: namespaces "website-system" not found \(create the namespace website-system, .*\)\nreadyz check passed\n$/,
  );
  const first = await notLeadingSeconds(replica.metrics);
  await until('the gauge to grow', async () => (await notLeadingSeconds(replica.metrics)) > first);
  expect(replica.operator.manager.isLeader()).toBe(false);
});

test('/readyz fails while the caches have not synced, listing which check failed', async () => {
  const api = new FakeKubeApi();
  // Every list (a streaming list is a watch) fails: the caches never sync.
  api.failWith((r) => r.verb === 'WATCH', new ApiError(503, 'ServiceUnavailable', 'etcd unavailable'), 1_000_000);
  const replica = await start(api, 'op-0');
  const { status, body } = await readyz(replica.operator);
  expect(status).toBe(503);
  expect(body).toBe(
    '[-]caches of namespace team-a failed\n[+]leader-election ok: not campaigning yet (waiting for the caches): Lease website-system/website-operator\nreadyz check failed\n',
  );
});

test('a leader whose API server stops answering stops leading within renewDeadline and aborts the requests of its reconciles in flight', async () => {
  const api = new FakeKubeApi();
  // The operator's connection: once `hung`, every request (but the watches already open) waits
  // for an answer that never comes, until its AbortSignal aborts it.
  let hung = false;
  const waiting = new Set<string>();
  const aborted: string[] = [];
  const client = interceptRequests(api, (request, _, args, send) => {
    if (!hung) return send();
    const signal = args
      .map((arg) => (arg as { signal?: unknown } | undefined)?.signal)
      .find((s): s is AbortSignal => s instanceof AbortSignal);
    waiting.add(request);
    return new Promise((_, reject) =>
      signal?.addEventListener('abort', () => {
        waiting.delete(request);
        aborted.push(request);
        reject(new ApiError(0, 'ConnectionError', `${request}: aborted`));
      }),
    );
  });
  const leader = await start(client, 'op-0', { leaseDurationMs: 600, renewDeadlineMs: 400, retryPeriodMs: 50 });
  await until('op-0 to lead', () => leader.operator.manager.isLeader());
  hung = true;
  await createWebsiteA(api);
  await until('the reconcile to wait on its create', () => waiting.has('create deployments'));
  await until('op-0 to stop leading', () => !leader.operator.manager.isLeader());
  await until(
    'every request to be aborted',
    () => ![...waiting].some((r) => r !== 'get leases' && r !== 'update leases'),
  );
  expect(aborted).toEqual(expect.arrayContaining(['create deployments', 'create services', 'patch websites']));
  expect(api.peek<KubeObject>(DEPLOYMENTS, 'team-a', 'website-a')).toBeUndefined();
});

test('a leader paused past its renew deadline refuses the writes of its reconciles when it resumes, before its renewal loop runs', async () => {
  const api = new FakeKubeApi();
  // The creates of the children are answered only when `release` is called: the reconcile is
  // mid-way (awaiting them) when the process pauses.
  const held: Array<() => void> = [];
  let frozenAt = Number.POSITIVE_INFINITY;
  const writesAfterPause: string[] = [];
  const client = interceptRequests(api, (request, method, _, send) => {
    if (performance.now() > frozenAt && !['get', 'list'].includes(method) && !request.endsWith('events'))
      writesAfterPause.push(request);
    const result = send();
    if (method !== 'create' || request === 'create leases' || request === 'create events') return result;
    return result.then((answer) => new Promise((resolve) => held.push(() => resolve(answer))));
  });
  const leader = await start(client, 'op-0', { leaseDurationMs: 600, renewDeadlineMs: 400, retryPeriodMs: 50 });
  await until('op-0 to lead', () => leader.operator.manager.isLeader());
  await createWebsiteA(api);
  await until('both creates to be held', () => held.length === 2);

  // The pause: the event loop stands still past the renew deadline (as under SIGSTOP), then the
  // answers arrive first thing after it resumes, before any timer (the renewal loop's) can run.
  frozenAt = performance.now();
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 500);
  for (const release of held.splice(0)) release();

  // It renews (or takes again) the Lease before it writes anything else: the reconcile's next
  // write, the Website's status, was refused, not sent; the Website is reconciled again afterwards.
  await until(
    'the Website to be reconciled again',
    () =>
      api.peek<KubeObject & { status?: unknown }>(websitesType('web.example.com'), 'team-a', 'a')?.status !== undefined,
  );
  const firstLeaseWrite = writesAfterPause.findIndex((w) => w.endsWith('leases'));
  const firstOtherWrite = writesAfterPause.findIndex((w) => !w.endsWith('leases'));
  expect(firstLeaseWrite).toBeGreaterThanOrEqual(0);
  expect(firstOtherWrite).toBeGreaterThan(firstLeaseWrite);
});
