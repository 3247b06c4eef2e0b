// The README's five-minute tour, run as a reader runs it (harness/docs/walkthrough.ts): its shell
// blocks in order, in a copy of the working tree, with only what the tour tells the reader to set,
// and after each block what the tour promises: a cluster with the operator's folder applied and its
// Deployment scaled to 0, the operator running in a second shell with its metrics on the port the
// tour gives, the Website Ready with its URL, its reconcile trace in Jaeger with the API requests
// beneath it, and nothing left running at the end.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { type ClusterAccess, kubectlOk } from '../../harness/cluster/kubectl.ts';
import { Walkthrough } from '../../harness/docs/walkthrough.ts';
import { eventually } from '../../harness/process/poll.ts';

const tour = Walkthrough.open('README.md');
const cluster: ClusterAccess = {
  kubeconfig: join(tour.dir, '.cluster/kubeconfig'),
  kubectl: join(tour.dir, '.cluster/bin/kubectl'),
};

afterAll(() => tour.close('npm run tracing:down; npm run cluster:down'), 10 * 60_000);

interface JaegerSpan {
  spanID: string;
  operationName: string;
  references: { refType: string; spanID: string }[];
  tags: { key: string; value: unknown }[];
}

test(
  'the first block starts the cluster and the trace stack, and applies the operator folder scaled to 0',
  async () => {
    // A machine without the binaries builds them here: tens of minutes (npm test has built them).
    await tour.run(/npm run cluster:up/, { timeoutMs: 40 * 60_000 });
    const env = tour.exported();
    expect(env.KUBECONFIG).toBe(cluster.kubeconfig);
    expect(env.JAEGER_QUERY).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(env.COLLECTOR_OTLP_HTTP).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const replicas = await kubectlOk(cluster, [
      'get',
      'deployment/website-operator',
      '-n',
      'website-system',
      '-o',
      'jsonpath={.spec.replicas}',
    ]);
    expect(replicas).toBe('0');
  },
  45 * 60_000,
);

test('the second shell runs the operator, its metrics on port 8090', async () => {
  await tour.run(/npm run operator/);
  const metrics = await eventually(
    'the operator of the second shell to serve its metrics on 127.0.0.1:8090',
    async () => {
      const response = await fetch('http://127.0.0.1:8090/metrics');
      return response.ok && (await response.text());
    },
    {
      timeoutMs: 90_000,
      intervalMs: 500,
      progress: () => `its output so far:\n${tour.backgroundOutput(/npm run operator/)}`,
    },
  );
  expect(metrics).toMatch(/^# TYPE controller_runtime_reconcile_total counter$/m);
}, 120_000);

test(
  'the Website becomes Ready, with its URL and a Ready condition the tour points at',
  async () => {
    const { output } = await tour.run(/kind: Website/, { timeoutMs: 3 * 60_000 });
    expect(output).toMatch(/website\.web\.example\.com\/hello created/);
    expect(output).toMatch(/website\.web\.example\.com\/hello condition met/);
    // `get ws -o wide`: the URL column holds the Service's in-cluster address.
    expect(output).toMatch(/^hello\s.*http:\/\/website-hello\.website-system\.svc\.cluster\.local/m);
    // describe: the Ready condition and the operator's events.
    expect(output).toMatch(/Status:\s+True\s+Type:\s+Ready/);
    expect(output).toMatch(/Events:/);
  },
  4 * 60_000,
);

test(
  "the Website's reconcile traces are in Jaeger, with the API requests beneath the reconcile span",
  async () => {
    type Traces = { data: { spans: JaegerSpan[] }[] };
    // The first reconcile creates the Deployment and the Service: its trace has client spans beneath.
    const withRequests = (traces: Traces) =>
      traces.data.some(({ spans }) => {
        const reconcile = spans.find((span) => span.operationName === 'reconcile Website');
        return spans.some(
          (span) =>
            span.references.some((ref) => ref.refType === 'CHILD_OF' && ref.spanID === reconcile?.spanID) &&
            span.tags.some((tag) => tag.key === 'span.kind' && tag.value === 'client'),
        );
      });
    const { output } = await tour.runUntil(/curl .*JAEGER_QUERY/, (out) => withRequests(JSON.parse(out)), 60_000);
    expect(withRequests(JSON.parse(output))).toBe(true);
  },
  2 * 60_000,
);

test(
  'Ctrl-C in the second shell and the last block leave nothing running',
  async () => {
    await tour.stopBackground();
    const { output } = await tour.run(/npm run tracing:down && npm run cluster:down/, { timeoutMs: 3 * 60_000 });
    expect(output).toMatch(/cluster 'website-stack' is down/);
    expect(existsSync(join(tour.dir, '.tracing/pids.json'))).toBe(false);
    // No process of the copy's cluster, trace stack or operator (each names the copy on its command line).
    expect(spawnSync('pgrep', ['-f', tour.dir]).status).toBe(1);
    expect(tour.remaining()).toEqual([]);
  },
  5 * 60_000,
);
