import { PassThrough } from 'node:stream';
import { FakeKubeApi } from '../../operator/src/controller/fake-kube-api.ts';
import { ApiError } from '../../operator/src/controller/kube-client.ts';
import { createLogger } from '../../operator/src/observability/logger.ts';
import { OperatorMetrics } from '../../operator/src/observability/metrics.ts';
import { Operator, type OperatorConfig } from '../../operator/src/reconciler/operator.ts';

// The Operator's readiness detail and leader-election metrics, on an in-memory API: /readyz lists
// every check (as the API server's /readyz?verbose does), and not leading shows there and in
// leader_election_not_leading_seconds without ever making the pod unready.

const config: OperatorConfig = {
  group: 'web.example.com',
  watchNamespace: 'team-a',
  operatorNamespace: 'website-system',
  identity: 'op-0',
  leaderElection: true,
  leaseName: 'website-operator',
  leaseDurationMs: 4_000,
  renewDeadlineMs: 3_000,
  retryPeriodMs: 20,
  concurrency: 2,
  resyncMs: 3_600_000,
  cacheSyncTimeoutMs: 1_000,
  fieldManager: 'website-operator',
  clusterDomain: 'cluster.local',
  metricsPort: 0,
  healthPort: 0,
};

const running: Operator[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((operator) => operator.stop()));
});

async function start(api: FakeKubeApi, identity: string): Promise<{ operator: Operator; metrics: OperatorMetrics; errors: string[] }> {
  const errors: string[] = [];
  const stream = new PassThrough();
  stream.on('data', (line: Buffer) => {
    const entry = JSON.parse(line.toString()) as { level: string; msg: string };
    if (entry.level === 'error') errors.push(entry.msg);
  });
  const metrics = new OperatorMetrics({ processMetrics: false });
  const operator = new Operator({ ...config, identity }, { client: api, logger: createLogger('info', stream), metrics });
  running.push(operator);
  await operator.start();
  return { operator, metrics, errors };
}

async function readyz(operator: Operator): Promise<{ status: number; body: string }> {
  const response = await fetch(`http://127.0.0.1:${operator.healthServer.port}/readyz`);
  return { status: response.status, body: await response.text() };
}

async function until(what: string, condition: () => boolean | Promise<boolean>): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (await condition()) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`timed out waiting for ${what}`);
}

const notLeadingSeconds = async (metrics: OperatorMetrics) => (await metrics.notLeading.get()).values[0]?.value ?? 0;

test('/readyz lists each check with its state: the leader and the standby of two replicas are both ready, the standby says who leads', async () => {
  const api = new FakeKubeApi();
  const leader = await start(api, 'op-0');
  await until('op-0 to lead', () => leader.operator.isLeader());
  const standby = await start(api, 'op-1');
  await until('op-1 to stand by', async () => (await readyz(standby.operator)).body.includes('standing by'));

  expect(await readyz(leader.operator)).toEqual({ status: 200, body: '[+]caches ok\n[+]leader-election ok: leading: Lease website-system/website-operator\nreadyz check passed\n' });
  const { status, body } = await readyz(standby.operator);
  expect(status).toBe(200);
  expect(body).toMatch(/^\[\+\]caches ok\n\[\+\]leader-election ok: standing by for \d+ s: Lease website-system\/website-operator held by op-0\nreadyz check passed\n$/);
  expect(await notLeadingSeconds(leader.metrics)).toBe(0);
  await until('the standby to count the time it stands by', async () => (await notLeadingSeconds(standby.metrics)) > 0);
  expect(standby.errors).toEqual([]);
});

test('a replica that cannot take the Lease stays ready but says why in /readyz, and leader_election_not_leading_seconds grows', async () => {
  const api = new FakeKubeApi();
  api.failWith((r) => r.resource === 'leases' && r.verb === 'CREATE', new ApiError(404, 'NotFound', 'namespaces "website-system" not found'), 1_000_000);
  const replica = await start(api, 'op-0');
  await until('an attempt to fail', () => replica.errors.length > 0);
  const { status, body } = await readyz(replica.operator);
  expect(status).toBe(200);
  expect(body).toMatch(
    /^\[\+\]caches ok\n\[\+\]leader-election ok: not leading for \d+ s: Lease website-system\/website-operator: namespaces "website-system" not found \(create the namespace website-system, .*\)\nreadyz check passed\n$/,
  );
  const first = await notLeadingSeconds(replica.metrics);
  await until('the gauge to grow', async () => (await notLeadingSeconds(replica.metrics)) > first);
  expect(replica.operator.isLeader()).toBe(false);
});

test('/readyz fails while the caches have not synced, listing which check failed', async () => {
  const api = new FakeKubeApi();
  // Every list fails: the caches never sync.
  api.failWith((r) => r.verb === 'LIST', new ApiError(503, 'ServiceUnavailable', 'etcd unavailable'), 1_000_000);
  const replica = await start(api, 'op-0');
  const { status, body } = await readyz(replica.operator);
  expect(status).toBe(503);
  expect(body).toBe('[-]caches failed\n[+]leader-election ok: not campaigning yet (waiting for the caches): Lease website-system/website-operator\nreadyz check failed\n');
});
