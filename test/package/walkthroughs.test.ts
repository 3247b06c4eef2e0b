// The pages a reader follows command by command, run as a reader runs them
// (harness/docs/walkthrough.ts): each page's shell blocks in order, in a copy of the working tree, with
// only what the page tells the reader to set, and after each block what the page promises. One page
// after the other, not side by side: both run the operator on this machine on its default ports.
// - The README's five-minute tour: a cluster with the operator's folder applied and its Deployment
//   scaled to 0, the operator running in a second shell with its metrics on the port the tour gives,
//   the Website Ready with its URL, its reconcile traces in Jaeger with the API requests beneath.
// - docs/use/control-plane-tracing.md: the same on a cluster whose API server and etcd trace into
//   that Jaeger: the API server's spans children of the operator's requests (its kubeconfig is in
//   system:masters) and etcd's beneath them, and a v1beta1 read's conversion under the API server's
//   call to the webhook.
// - docs/use/dist-and-argocd.md: Argo CD against the local cluster, serving the copy's own git
//   repository (a clone's), the page's ApplicationSet saved and applied: its three Applications
//   Synced, the sample Websites Progressing until the operator of the second shell reports their
//   status, then every Application Healthy.
// Each ends with nothing left running.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { type ClusterAccess, kubectlOk } from '../../harness/cluster/kubectl.ts';
import { type Walkthrough, walkthrough } from '../../harness/docs/walkthrough.ts';
import { eventually } from '../../harness/process/poll.ts';
import type { JaegerTrace } from '../../harness/trace/traces.ts';

type Span = JaegerTrace['spans'][number];
/** What the page's `curl` of Jaeger's query API prints. */
type Traces = { data: JaegerTrace[] };

const kindOf = (span: Span) => span.tags.find((tag) => tag.key === 'span.kind')?.value;

/** A span, its parent in the same trace (if any) and the service of each. */
interface Related {
  readonly span: Span;
  readonly service: string;
  readonly parent?: Span;
  readonly parentService?: string;
}

/** Whether some trace of `out` (a query API answer) has a span for which `holds` is true. */
function someSpan(out: string, holds: (related: Related, trace: JaegerTrace) => boolean): boolean {
  return (JSON.parse(out) as Traces).data.some((trace) => {
    const byId = new Map(trace.spans.map((span) => [span.spanID, span]));
    const service = (span: Span) => trace.processes[span.processID].serviceName;
    return trace.spans.some((span) => {
      const parent = byId.get(span.references.find((ref) => ref.refType === 'CHILD_OF')?.spanID ?? '');
      return holds({ span, service: service(span), parent, parentService: parent && service(parent) }, trace);
    });
  });
}

/** After the first block: the reader's shell has the cluster and the trace stack, the operator at 0 replicas. */
async function expectClusterAndStack(walk: Walkthrough, cluster: ClusterAccess): Promise<void> {
  const env = walk.exported();
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
}

/** The second shell's operator, serving its metrics on the port the page gives it (the operator's default: 8080). */
async function expectOperatorRunning(walk: Walkthrough, metricsPort = 8090): Promise<void> {
  await walk.run(/npm run operator/);
  const metrics = await eventually(
    `the operator of the second shell to serve its metrics on 127.0.0.1:${metricsPort}`,
    async () => {
      const response = await fetch(`http://127.0.0.1:${metricsPort}/metrics`, { signal: AbortSignal.timeout(5000) });
      return response.ok && (await response.text());
    },
    {
      timeoutMs: 90_000,
      intervalMs: 500,
      progress: () => `its output so far:\n${walk.backgroundOutput(/npm run operator/)}`,
    },
  );
  expect(metrics).toMatch(/^# TYPE controller_runtime_reconcile_total counter$/m);
}

/** Ctrl-C in the second shell, then the page's last block (`last`): nothing of the copy left running. */
async function expectStopped(walk: Walkthrough, last = /npm run tracing:down && npm run cluster:down/): Promise<void> {
  await walk.stopBackground();
  const { output } = await walk.run(last, { timeoutMs: 3 * 60_000 });
  expect(output).toMatch(/cluster 'website-stack' is down/);
  expect(existsSync(join(walk.dir, '.tracing/pids.json'))).toBe(false);
  expect(existsSync(join(walk.dir, '.argocd/pids.json'))).toBe(false);
  // The cluster's and the trace stack's processes name the copy on their command lines.
  expect(walk.processesLeft()).toEqual([]);
  expect(walk.remaining()).toEqual([]);
}

describe("README.md's five-minute tour", () => {
  const { walk, cluster } = walkthrough('README.md', 'npm run tracing:down; npm run cluster:down');

  test(
    'the first block starts the cluster and the trace stack, and applies the operator folder scaled to 0',
    async () => {
      // A machine without the binaries builds them here: tens of minutes (npm test has built them).
      await walk().run(/npm run cluster:up/, { timeoutMs: 40 * 60_000 });
      await expectClusterAndStack(walk(), cluster());
    },
    45 * 60_000,
  );

  test('the second shell runs the operator, its metrics on port 8090', () => expectOperatorRunning(walk()), 120_000);

  test(
    'the Website becomes Ready, with its URL and a Ready condition the tour points at',
    async () => {
      const { output } = await walk().run(/kind: Website/, { timeoutMs: 3 * 60_000 });
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
      // The first reconcile creates the Deployment and the Service: its trace has client spans beneath.
      const withRequests = (out: string) =>
        someSpan(out, ({ span, parent }) => parent?.operationName === 'reconcile Website' && kindOf(span) === 'client');
      const { output } = await walk().runUntil(/curl .*JAEGER_QUERY/, withRequests, 60_000);
      expect(withRequests(output)).toBe(true);
    },
    2 * 60_000,
  );

  test('Ctrl-C in the second shell and the last block leave nothing running', () => expectStopped(walk()), 5 * 60_000);
});

describe('docs/use/control-plane-tracing.md', () => {
  const { walk, cluster } = walkthrough(
    'docs/use/control-plane-tracing.md',
    'npm run tracing:down; npm run cluster:down',
  );

  test(
    'the first block starts the trace stack and a traced cluster, and applies the operator folder scaled to 0',
    async () => {
      await walk().run(/npm run cluster:up -- --tracing/, { timeoutMs: 40 * 60_000 });
      await expectClusterAndStack(walk(), cluster());
    },
    45 * 60_000,
  );

  test('the second shell runs the operator, its metrics on port 8090', () => expectOperatorRunning(walk()), 120_000);

  test(
    'the Website becomes Ready, and reads back as v1beta1 through the conversion webhook',
    async () => {
      const { output } = await walk().run(/kind: Website/, { timeoutMs: 3 * 60_000 });
      expect(output).toMatch(/website\.web\.example\.com\/traced condition met/);
      expect(output).toMatch(/^apiVersion: web\.example\.com\/v1beta1$/m);
    },
    4 * 60_000,
  );

  test(
    "a reconcile's trace holds the API server's spans as children of the operator's requests, and etcd's beneath",
    async () => {
      const relations = (out: string) =>
        someSpan(
          out,
          ({ service, parent, parentService }, trace) =>
            service === 'apiserver' &&
            parentService === 'website-operator' &&
            kindOf(parent!) === 'client' &&
            trace.spans.some((span) => trace.processes[span.processID].serviceName === 'etcd'),
        );
      const { output } = await walk().runUntil(/operation=reconcile%20Website/, relations, 90_000);
      expect(relations(output)).toBe(true);
    },
    2 * 60_000,
  );

  test(
    "a conversion's trace: the operator's POST /convert under the API server's call to the webhook",
    async () => {
      const underApiServer = (out: string) =>
        someSpan(
          out,
          ({ span, service, parent, parentService }) =>
            span.operationName === 'POST /convert' &&
            service === 'website-operator' &&
            parent?.operationName === 'HTTP POST' &&
            parentService === 'apiserver',
        );
      const { output } = await walk().runUntil(/operation=POST%20%2Fconvert/, underApiServer, 90_000);
      expect(underApiServer(output)).toBe(true);
    },
    2 * 60_000,
  );

  test('Ctrl-C in the second shell and the last block leave nothing running', () => expectStopped(walk()), 5 * 60_000);
});

describe('docs/use/dist-and-argocd.md', () => {
  const { walk, cluster } = walkthrough('docs/use/dist-and-argocd.md', 'npm run argocd:down; npm run cluster:down');
  /** `kubectl get applications` lines: name, sync status, health status. */
  const applications = (output: string) =>
    output
      .split('\n')
      .filter((line) => /^(website-api|website-samples|tracing)\s/.test(line))
      .map((line) => line.split(/\s+/).slice(0, 3).join(' '))
      .sort();

  test(
    "the first block starts the cluster and Argo CD, serving the clone's repository",
    async () => {
      // A machine without Argo CD's binary builds it here (npm test's background build makes it).
      await walk().run(/npm run argocd:up/, { timeoutMs: 40 * 60_000 });
      const env = walk().exported();
      expect(env.KUBECONFIG).toBe(cluster().kubeconfig);
      expect(env.ARGOCD_REPO_URL).toMatch(/^git:\/\/127\.0\.0\.1:\d+\/\S+$/);
      expect(env.ARGOCD_NAMESPACE).toBe('argocd');
    },
    45 * 60_000,
  );

  test(
    'the saved ApplicationSet makes three Applications, all Synced; the samples Progressing without an operator',
    async () => {
      const { output } = await walk().run(/applicationset\.yaml/, { timeoutMs: 8 * 60_000 });
      expect(output).toMatch(/applicationset\.argoproj\.io\/website-stack created/);
      expect(applications(output)).toEqual([
        'tracing Synced Healthy',
        'website-api Synced Healthy',
        'website-samples Synced Progressing',
      ]);
    },
    9 * 60_000,
  );

  test(
    'the second shell runs the operator, its metrics on port 8080',
    () => expectOperatorRunning(walk(), 8080),
    120_000,
  );

  test(
    "every Application turns Healthy once the operator reports the Websites' status",
    async () => {
      const { output } = await walk().run(/status\.health\.status/, { timeoutMs: 4 * 60_000 });
      for (const name of ['website-api', 'website-samples', 'tracing'])
        expect(output).toMatch(new RegExp(`application\\.argoproj\\.io/${name} condition met`));
      expect(output).toMatch(/^hello\s/m);
      expect(output).toMatch(/^docs\s/m);
    },
    5 * 60_000,
  );

  test(
    'Ctrl-C in the second shell and the last block leave nothing running',
    () => expectStopped(walk(), /npm run argocd:down[^\n]*\nnpm run cluster:down/),
    5 * 60_000,
  );
});
